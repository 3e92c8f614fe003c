// CPU lists as the kernel writes them (sysfs cpulist files, cpuset.cpus,
// /proc/PID/status Cpus_allowed_list): "0-3,8,10-11".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace slowburn {

// "" or "\n" is none. nullopt when malformed or naming a CPU above kMaxCpuId.
constexpr int kMaxCpuId = 65535;
std::optional<std::vector<int>> parse_cpu_list(std::string_view text);
// Sorted ids back to "0-3,8" ("" for none).
std::string format_cpu_list(std::vector<int> cpus);

}  // namespace slowburn
