#include "loader/lifecycle_program.h"

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <cerrno>

#include "loader/features.h"
#include "slowburn/lifecycle.h"

// After slowburn/lifecycle.h: the skeleton refers to its types.
#include "lifecycle.skel.h"

namespace slowburn {

Result<std::unique_ptr<LifecycleProgram>> LifecycleProgram::load_and_attach() {
  auto skel = Skeleton<lifecycle_bpf>::open("the process lifecycle program (bpf/lifecycle.bpf.c)");
  if (!skel) return skel.error();
  // oom:mark_victim is absent without CONFIG_MEMCG-era OOM tracing: the rest still works.
  const KernelFeatures& kernel = KernelFeatures::host();
  bool oom = kernel.tracefs && kernel.has_tracepoint("oom", "mark_victim");
  if (!oom) bpf_program__set_autoload((*skel)->progs.lifecycle_oom, false);
  if (auto loaded = skel->load(); !loaded) return loaded.error();
  std::unique_ptr<LifecycleProgram> program(new LifecycleProgram(std::move(*skel)));
  program->sees_oom_ = oom;
  for (bpf_program* prog : {program->skel_->progs.lifecycle_exit, program->skel_->progs.lifecycle_signal,
                            oom ? program->skel_->progs.lifecycle_oom : nullptr}) {
    if (!prog) continue;
    bpf_link* link = bpf_program__attach(prog);
    if (!link) return make_sys_error(errno, fmt::format("cannot attach {}", bpf_program__name(prog)));
    program->skel_.links().add(link);
  }
  return program;
}

LifecycleProgram::LifecycleProgram(Skeleton<lifecycle_bpf> skel) : skel_(std::move(skel)) {}

LifecycleProgram::~LifecycleProgram() = default;

Result<void> LifecycleProgram::follow(int32_t pid) {
  auto key = static_cast<uint32_t>(pid);
  uint8_t one = 1;
  if (bpf_map__update_elem(skel_->maps.targets, &key, sizeof(key), &one, sizeof(one), BPF_ANY) != 0)
    return make_sys_error(errno,
                          fmt::format("cannot follow pid {}'s lifecycle (its map is full at 4096 processes?)", pid));
  return {};
}

int LifecycleProgram::events_fd() const { return bpf_map__fd(skel_->maps.events); }

uint64_t LifecycleProgram::ringbuf_drops() const {
  return __atomic_load_n(&skel_->bss->ringbuf_drops, __ATOMIC_RELAXED);
}

}  // namespace slowburn
