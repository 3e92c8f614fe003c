// Whether this process may load and attach tracing BPF programs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace slowburn {

// CAP_BPF and CAP_PERFMON arrived in Linux 5.8; older headers lack them.
constexpr int kCapSysPtrace = 19;
constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

// Pure, on an effective-capability mask (bit N: capability N, as CapEff in
// /proc/PID/status shows it): the capabilities missing to load and attach
// tracing programs (CAP_BPF and CAP_PERFMON; CAP_SYS_ADMIN implies both on
// every kernel), and to read other processes' environ and maps
// (CAP_SYS_PTRACE). Empty when none is missing.
std::vector<std::string> missing_load_capabilities(uint64_t effective);
std::vector<std::string> missing_ptrace_capabilities(uint64_t effective);

// Root, or CAP_BPF + CAP_PERFMON (load, attach uprobes) + CAP_SYS_PTRACE
// (read other processes' environ and maps).
Result<void> check_tracing_privileges();
const char* tracing_privileges_hint();

}  // namespace slowburn
