// Every kernel tracepoint slowburn attaches to or looks for, with what it
// serves, why a kernel may lack it and what is lost without it: the one
// list `slowburn check` reads and reports. The BPF side names them in its
// SEC()s (bpf/sched.bpf.c, kmsg_xid.bpf.c, gpuirq.bpf.c; tprecord.bpf.c
// takes the hardware ones of hw/kernel_sources.h at attach time); a unit
// test holds this list to the skeletons' sections.
#pragma once

#include <string>
#include <vector>

namespace slowburn {

struct TracepointUse {
  std::string system, event;  // tracefs events/SYSTEM/EVENT
  std::string used_by;        // the slowburn feature it feeds
  std::string missing;        // why a kernel lacks it
  std::string without;        // what slowburn does not see without it
  std::string fix;            // what gives it
  std::string name() const { return system + ":" + event; }
};

const std::vector<TracepointUse>& tracepoint_uses();

}  // namespace slowburn
