// Whether this process may load and attach tracing BPF programs.
#pragma once

#include "core/error.h"

namespace slowburn {

// Root, or CAP_BPF + CAP_PERFMON (load, attach uprobes) + CAP_SYS_PTRACE
// (read other processes' environ and maps).
Result<void> check_tracing_privileges();
const char* tracing_privileges_hint();

}  // namespace slowburn
