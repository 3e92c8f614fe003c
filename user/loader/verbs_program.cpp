#include "loader/verbs_program.h"

#include <bpf/libbpf.h>

#include <cerrno>

#include "loader/bpf_maps.h"
#include "loader/features.h"
#include "slowburn/verbs.h"

// After slowburn/verbs.h: the skeleton refers to its types.
#include "verbs.skel.h"

namespace slowburn {

VerbsProgram::VerbsProgram(Skeleton<verbs_bpf> skel, AttachMode mode)
    : skel_(std::move(skel)), uprobes_(skel_.links().add(std::make_unique<UprobeLinks>(mode))) {}

Result<std::unique_ptr<VerbsProgram>> VerbsProgram::load(std::optional<AttachMode> requested) {
  auto mode = choose_attach_mode(KernelFeatures::host(), requested);
  if (!mode) return mode.error();
  auto skel = Skeleton<verbs_bpf>::open("the verbs program (bpf/verbs.bpf.c)");
  if (!skel) return skel.error();
  for (bpf_program* p :
       {(*skel)->progs.modify_qp, (*skel)->progs.create_qp, (*skel)->progs.create_qp_return, (*skel)->progs.destroy_qp,
        (*skel)->progs.async_event, (*skel)->progs.int_return, (*skel)->progs.async_event_return,
        (*skel)->progs.post_send, (*skel)->progs.poll_cq, (*skel)->progs.poll_cq_return})
    prepare_program(p, *mode);
  if (auto loaded = skel->load(); !loaded) return loaded.error();
  return std::unique_ptr<VerbsProgram>(new VerbsProgram(std::move(*skel), *mode));
}

VerbsProgram::~VerbsProgram() = default;

Result<void> VerbsProgram::attach(const ProbeResolution& probe, int32_t pid) {
  bpf_program* entry = nullptr;
  bpf_program* exit = skel_->progs.int_return;
  const std::string& name = probe.spec->name;
  if (name == "verbs.modify_qp")
    entry = skel_->progs.modify_qp;
  else if (name == "verbs.create_qp")
    entry = skel_->progs.create_qp, exit = skel_->progs.create_qp_return;
  else if (name == "verbs.destroy_qp")
    entry = skel_->progs.destroy_qp;
  else if (name == "verbs.async_event")
    entry = skel_->progs.async_event, exit = skel_->progs.async_event_return;
  else
    return make_error("{} is not a verbs control-path probe", name);
  std::vector<UprobeSite> sites;
  for (const AttachSite& site : probe.sites) sites.push_back({site.file_offset, 0});
  return skel_.links().uprobes(uprobes_).attach_pair(entry, exit, probe.attach_path, pid, sites);
}

Result<void> VerbsProgram::attach_data_path(const std::string& path, int32_t pid, uint64_t post_send_offset,
                                            uint64_t poll_cq_offset) {
  UprobeLinks& links = skel_.links().uprobes(uprobes_);
  const UprobeSite post[] = {{post_send_offset, 0}};
  const UprobeSite poll[] = {{poll_cq_offset, 0}};
  if (auto attached = links.attach_pair(skel_->progs.poll_cq, skel_->progs.poll_cq_return, path, pid, poll); !attached)
    return attached;
  return links.attach(skel_->progs.post_send, false, path, pid, post);
}

std::vector<IbConnectionStats> VerbsProgram::qp_stats() const {
  auto sum = [](const sb_qp_key& key, const std::vector<sb_qp_stats>& values) {
    IbConnectionStats s;
    s.tgid = key.tgid;
    s.direction = IbDirection::qp;
    s.comm = key.qp_num;
    for (const sb_qp_stats& cpu : values) {
      for (size_t i = 0; i < SB_VERBS_QP_LAT_SLOTS; ++i) s.latency.add_slot_count(i, cpu.lat_slots[i]);
      s.requests += cpu.completions;
      s.total_ns += cpu.total_ns;
      s.errors += cpu.errors;
    }
    return s;
  };
  return sum_percpu_map<sb_qp_key, sb_qp_stats>(bpf_map__fd(skel_->maps.qp_stats), sum);
}

int VerbsProgram::events_fd() const { return bpf_map__fd(skel_->maps.verbs_events); }

VerbsCounters VerbsProgram::counters() const {
  const auto& c = skel_->bss->verbs_counters;
  auto load = [](const __u64& v) { return __atomic_load_n(&v, __ATOMIC_RELAXED); };
  return {load(c.records),         load(c.ringbuf_drops), load(c.state_failures), load(c.posts),
          load(c.completions),     load(c.receives),      load(c.unmatched),      load(c.stats_full),
          load(c.chain_truncated), load(c.wc_truncated)};
}

}  // namespace slowburn
