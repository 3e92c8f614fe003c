// Parsers of the procfs and cgroup files host signals come from. Pure: text
// in, values out; an error names the file's problem (a field missing, not a
// number) so a reader can say which file of which process was malformed.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "core/error.h"
#include "host/host_signals.h"

namespace slowburn {

// /proc/PID/stat: the comm may hold spaces and parentheses; fields count from the last ')'.
Result<ProcStat> parse_proc_stat(std::string_view text);
Result<ProcStatus> parse_proc_status(std::string_view text);
// /proc/PID/cgroup: "hierarchy-ID:controller-list:path" lines.
Result<CgroupMembership> parse_proc_cgroup(std::string_view text);
// cpu.stat, v1 (throttled_time, ns) or v2 (throttled_usec).
Result<CpuStat> parse_cpu_stat(std::string_view text);
// v2 cpu.max: "max 100000" or "25000 100000".
Result<CpuQuota> parse_cpu_max(std::string_view text);
// v1 cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us.
Result<CpuQuota> parse_cfs_quota(std::string_view quota_us, std::string_view period_us);
// "key value" lines (v2 memory.events, v1 memory.oom_control).
Result<std::map<std::string, uint64_t>> parse_flat_keyed(std::string_view text);
// PSI: "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" and a "full" line (absent in system cpu.pressure before 5.13).
Result<Pressure> parse_pressure(std::string_view text);

}  // namespace slowburn
