#include "loader/ncclib_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

#include "loader/bpf_maps.h"
#include "loader/features.h"
#include "slowburn/ncclib.h"

// After slowburn/ncclib.h: the skeleton refers to its types.
#include "ncclib.skel.h"

namespace slowburn {

NcclIbProgram::NcclIbProgram(Skeleton<ncclib_bpf> skel, AttachMode mode)
    : skel_(std::move(skel)), uprobes_(skel_.links().add(std::make_unique<UprobeLinks>(mode))) {}

Result<std::unique_ptr<NcclIbProgram>> NcclIbProgram::load(std::optional<AttachMode> requested) {
  auto mode = choose_attach_mode(KernelFeatures::host(), requested);
  if (!mode) return mode.error();
  auto skel = Skeleton<ncclib_bpf>::open("the NCCL IB program (bpf/ncclib.bpf.c)");
  if (!skel) return skel.error();
  for (bpf_program* p : {(*skel)->progs.ib_isend, (*skel)->progs.ib_irecv, (*skel)->progs.ib_iflush,
                         (*skel)->progs.ib_post_return, (*skel)->progs.ib_test, (*skel)->progs.ib_test_return})
    prepare_program(p, *mode);
  if (auto loaded = skel->load(); !loaded) return loaded.error();
  return std::unique_ptr<NcclIbProgram>(new NcclIbProgram(std::move(*skel), *mode));
}

NcclIbProgram::~NcclIbProgram() = default;

Result<void> NcclIbProgram::attach(const ProbeResolution& probe, int32_t pid) {
  bpf_program* entry = nullptr;
  bpf_program* exit = skel_->progs.ib_post_return;
  if (probe.spec->name == "nccl.ib.isend")
    entry = skel_->progs.ib_isend;
  else if (probe.spec->name == "nccl.ib.irecv")
    entry = skel_->progs.ib_irecv;
  else if (probe.spec->name == "nccl.ib.iflush")
    entry = skel_->progs.ib_iflush;
  else if (probe.spec->name == "nccl.ib.test")
    entry = skel_->progs.ib_test, exit = skel_->progs.ib_test_return;
  else
    return make_error("{} is not an NCCL IB probe", probe.spec->name);
  std::vector<UprobeSite> sites;
  for (const AttachSite& site : probe.sites) sites.push_back({site.file_offset, 0});
  return skel_.links().uprobes(uprobes_).attach_pair(entry, exit, probe.attach_path, pid, sites);
}

std::vector<IbConnectionStats> NcclIbProgram::stats() const {
  auto sum = [](const sb_ib_key& key, const std::vector<sb_ib_stats>& values) {
    IbConnectionStats s;
    s.tgid = key.tgid;
    s.direction = static_cast<IbDirection>(key.direction);
    s.comm = key.comm;
    for (const sb_ib_stats& cpu : values) {
      for (size_t i = 0; i < SB_IB_LAT_SLOTS; ++i) s.latency.add_slot_count(i, cpu.lat_slots[i]);
      for (size_t i = 0; i < SB_IB_SIZE_SLOTS; ++i) s.size.add_slot_count(i, cpu.size_slots[i]);
      s.requests += cpu.requests;
      s.bytes += cpu.bytes;
      s.total_ns += cpu.total_ns;
    }
    return s;
  };
  return sum_percpu_map<sb_ib_key, sb_ib_stats>(bpf_map__fd(skel_->maps.ib_stats), sum);
}

IbCounters NcclIbProgram::counters() const {
  const auto& c = skel_->bss->ib_counters;
  auto load = [](const __u64& v) { return __atomic_load_n(&v, __ATOMIC_RELAXED); };
  IbCounters out;
  out.posts = load(c.posts);
  out.posts_deferred = load(c.posts_deferred);
  out.completions = load(c.completions);
  out.unknown_done = load(c.unknown_done);
  out.table_full = load(c.table_full);
  out.stats_full = load(c.stats_full);
  out.slot_clashes = load(c.slot_clashes);
  if (auto per_cpu = lookup_percpu<uint32_t, uint64_t>(bpf_map__fd(skel_->maps.polls), 0))
    for (uint64_t n : *per_cpu) out.polls += n;
  return out;
}

}  // namespace slowburn
