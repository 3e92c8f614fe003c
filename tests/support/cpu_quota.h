// A CPU cgroup with a quota, for putting one rank on a mis-sized container's
// share of a CPU: cgroup v1 (cpu.cfs_quota_us / cpu.cfs_period_us, this
// machine) or v2 (cpu.max). Removed (its processes moved back) at scope exit.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace slowburn::testing {

class CpuQuotaGroup {
 public:
  // A group allowed `cpus` of a CPU per 100 ms period; nullopt with `why`
  // set when no writable CPU controller exists here.
  static std::optional<CpuQuotaGroup> create(double cpus, std::string& why);
  CpuQuotaGroup(CpuQuotaGroup&& other) noexcept;
  CpuQuotaGroup& operator=(CpuQuotaGroup&&) = delete;
  ~CpuQuotaGroup();

  // Moves a process (every thread of it) into the group.
  bool add(pid_t pid) const;
  // "nr_throttled" of cpu.stat: periods in which the group was throttled.
  long throttled_periods() const;
  const std::filesystem::path& path() const { return path_; }
  // Its path in the hierarchy, as /proc/PID/cgroup names it ("/slowburn-test-42").
  std::string cgroup_path() const { return "/" + path_.lexically_relative(parent_).string(); }

 private:
  CpuQuotaGroup(std::filesystem::path path, std::filesystem::path parent) : path_(path), parent_(parent) {}
  std::filesystem::path path_, parent_;
};

}  // namespace slowburn::testing
