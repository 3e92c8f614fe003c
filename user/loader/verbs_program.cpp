#include "loader/verbs_program.h"

#include <bpf/libbpf.h>

#include <cerrno>

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
        (*skel)->progs.async_event, (*skel)->progs.int_return, (*skel)->progs.async_event_return})
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

int VerbsProgram::events_fd() const { return bpf_map__fd(skel_->maps.verbs_events); }

VerbsCounters VerbsProgram::counters() const {
  const auto& c = skel_->bss->verbs_counters;
  return {__atomic_load_n(&c.records, __ATOMIC_RELAXED), __atomic_load_n(&c.ringbuf_drops, __ATOMIC_RELAXED),
          __atomic_load_n(&c.state_failures, __ATOMIC_RELAXED)};
}

}  // namespace slowburn
