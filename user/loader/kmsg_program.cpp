#include "loader/kmsg_program.h"

#include <bpf/libbpf.h>

#include <cerrno>

#include "slowburn/hwevents.h"
#include "tracefs/tracefs.h"

// After slowburn/hwevents.h: the skeleton refers to its types.
#include "kmsg_xid.skel.h"

namespace slowburn {

Result<std::unique_ptr<KmsgXidProgram>> KmsgXidProgram::load_and_attach() {
  auto tracefs = ensure_tracefs();
  if (!tracefs) return tracefs.error();
  if (!tracepoint_exists(*tracefs, "printk", "console"))
    return make_error("nvidia.xid.kmsg unavailable: no printk:console tracepoint in {}", tracefs->string());
  kmsg_xid_bpf* skel = kmsg_xid_bpf::open_and_load();
  if (!skel) return make_sys_error(errno, "cannot load the kernel-log Xid filter (bpf/kmsg_xid.bpf.c)");
  std::unique_ptr<KmsgXidProgram> program(new KmsgXidProgram(skel));
  program->link_ = bpf_program__attach(skel->progs.kmsg_xid);
  if (!program->link_) return make_sys_error(errno, "cannot attach to printk:console");
  return program;
}

KmsgXidProgram::~KmsgXidProgram() {
  bpf_link__destroy(link_);
  kmsg_xid_bpf::destroy(skel_);
}

int KmsgXidProgram::events_fd() const { return bpf_map__fd(skel_->maps.kmsg_events); }

KmsgCounters KmsgXidProgram::counters() const {
  const auto& c = skel_->bss->kmsg_counters;
  return {__atomic_load_n(&c.lines_seen, __ATOMIC_RELAXED), __atomic_load_n(&c.lines_matched, __ATOMIC_RELAXED),
          __atomic_load_n(&c.ringbuf_drops, __ATOMIC_RELAXED)};
}

}  // namespace slowburn
