// What `slowburn check` proves by doing it: load a real slowburn program,
// attach it, fire it, and read its records back through its BPF ring
// buffer. The call-pair program (bpf/callpair.bpf.c) on a function of this
// very process, once through perf-event uprobe links and once through a
// multi-uprobe link, each site with a bpf_cookie the program decodes; the
// tracepoint-record program (bpf/tprecord.bpf.c) on task:task_rename,
// fired by renaming this thread to its own name. No new BPF program: these
// are the ones `trace` and the hardware monitor load.
#pragma once

#include <cstdint>
#include <string>

#include "loader/uprobe_links.h"

namespace slowburn {

struct AttachProbe {
  bool ran = false;       // false: not tried (`error` says why)
  bool loaded = false;    // the program and its ring buffer were loaded
  bool attached = false;  // every link was created
  uint64_t fired = 0;     // times this process triggered the hook
  uint64_t records = 0;   // records read back through the ring buffer
  uint64_t matched = 0;   // of them, those carrying the cookie (and argument) they were attached with
  std::string how;        // what was attached where ("uprobe+uretprobe at /proc/self/exe:fn (perf-event links)")
  std::string error;      // why it stopped; "" when it went through
  bool worked() const { return ran && loaded && attached && fired > 0 && matched >= fired; }
};

// The function the uprobe checks attach to (extern "C": one symbol name).
extern "C" int slowburn_check_probe_target(int value);

// The call-pair program at slowburn_check_probe_target in this process,
// through `mode`'s links, fired `calls` times.
AttachProbe probe_uprobe_attach(AttachMode mode, int calls = 3);

// The tracepoint-record program on task:task_rename (libbpf finds its id
// in the mounted tracefs).
AttachProbe probe_tracepoint_attach();

// The tracepoint the tracepoint probe attaches to.
constexpr const char* kProbeTracepointSystem = "task";
constexpr const char* kProbeTracepointEvent = "task_rename";

}  // namespace slowburn
