#include "loader/kmsg_program.h"

#include <bpf/libbpf.h>

#include <cerrno>

#include "loader/features.h"
#include "slowburn/hwevents.h"

// After slowburn/hwevents.h: the skeleton refers to its types.
#include "kmsg_xid.skel.h"

namespace slowburn {

Result<std::unique_ptr<KmsgXidProgram>> KmsgXidProgram::load_and_attach() {
  const KernelFeatures& kernel = KernelFeatures::host();
  if (!kernel.tracefs) return make_error("nvidia.xid.kmsg unavailable: {}", kernel.tracefs_missing);
  if (!kernel.has_tracepoint("printk", "console"))
    return make_error("nvidia.xid.kmsg unavailable: no printk:console tracepoint in {}", kernel.tracefs->string());
  auto skel = Skeleton<kmsg_xid_bpf>::open("the kernel-log Xid filter (bpf/kmsg_xid.bpf.c)");
  if (!skel) return skel.error();
  if (auto loaded = skel->load(); !loaded) return loaded.error();
  std::unique_ptr<KmsgXidProgram> program(new KmsgXidProgram(std::move(*skel)));
  bpf_link* link = bpf_program__attach(program->skel_->progs.kmsg_xid);
  if (!link) return make_sys_error(errno, "cannot attach to printk:console");
  program->skel_.links().add(link);
  return program;
}

KmsgXidProgram::KmsgXidProgram(Skeleton<kmsg_xid_bpf> skel) : skel_(std::move(skel)) {}

KmsgXidProgram::~KmsgXidProgram() = default;

int KmsgXidProgram::events_fd() const { return bpf_map__fd(skel_->maps.kmsg_events); }

KmsgCounters KmsgXidProgram::counters() const {
  const auto& c = skel_->bss->kmsg_counters;
  return {__atomic_load_n(&c.lines_seen, __ATOMIC_RELAXED), __atomic_load_n(&c.lines_matched, __ATOMIC_RELAXED),
          __atomic_load_n(&c.ringbuf_drops, __ATOMIC_RELAXED)};
}

}  // namespace slowburn
