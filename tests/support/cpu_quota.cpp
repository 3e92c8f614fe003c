#include "support/cpu_quota.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "support/test_support.h"

namespace slowburn::testing {

namespace {
bool write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

constexpr int kPeriodUs = 100000;
}  // namespace

std::optional<CpuQuotaGroup> CpuQuotaGroup::create(double cpus, std::string& why) {
  std::string name = "slowburn-test-" + std::to_string(getpid());
  std::error_code ec;
  int quota_us = static_cast<int>(cpus * kPeriodUs);
  std::filesystem::path v1 = "/sys/fs/cgroup/cpu";
  if (std::filesystem::exists(v1 / "cpu.cfs_quota_us", ec)) {
    auto dir = v1 / name;
    std::filesystem::create_directory(dir, ec);
    if (ec || !write_file(dir / "cpu.cfs_period_us", std::to_string(kPeriodUs)) ||
        !write_file(dir / "cpu.cfs_quota_us", std::to_string(quota_us))) {
      why = "cannot make a cgroup v1 CPU group under " + v1.string() + " (needs root)";
      std::filesystem::remove(dir, ec);
      return std::nullopt;
    }
    return CpuQuotaGroup(dir, v1);
  }
  std::filesystem::path v2 = "/sys/fs/cgroup";
  if (read_text(v2 / "cgroup.controllers").find("cpu") != std::string::npos) {
    write_file(v2 / "cgroup.subtree_control", "+cpu");
    auto dir = v2 / name;
    std::filesystem::create_directory(dir, ec);
    if (ec || !write_file(dir / "cpu.max", std::to_string(quota_us) + " " + std::to_string(kPeriodUs))) {
      why = "cannot make a cgroup v2 group with cpu.max under " + v2.string() + " (cpu controller not delegated?)";
      std::filesystem::remove(dir, ec);
      return std::nullopt;
    }
    return CpuQuotaGroup(dir, v2);
  }
  why = "no CPU cgroup controller (neither /sys/fs/cgroup/cpu nor cgroup v2 with cpu)";
  return std::nullopt;
}

CpuQuotaGroup::CpuQuotaGroup(CpuQuotaGroup&& other) noexcept
    : path_(std::move(other.path_)), parent_(std::move(other.parent_)) {
  other.path_.clear();
}

CpuQuotaGroup::~CpuQuotaGroup() {
  if (path_.empty()) return;
  // Its processes back to the parent, then the group goes.
  std::istringstream procs(read_text(path_ / "cgroup.procs"));
  for (std::string pid; std::getline(procs, pid);)
    if (!pid.empty()) write_file(parent_ / "cgroup.procs", pid);
  std::error_code ec;
  for (int attempt = 0; attempt < 50 && std::filesystem::exists(path_, ec); ++attempt) {
    if (rmdir(path_.c_str()) == 0) break;
    usleep(20000);
  }
}

bool CpuQuotaGroup::add(pid_t pid) const { return write_file(path_ / "cgroup.procs", std::to_string(pid)); }

long CpuQuotaGroup::throttled_periods() const {
  std::istringstream stat(read_text(path_ / "cpu.stat"));
  std::string key;
  long value = 0;
  while (stat >> key >> value)
    if (key == "nr_throttled") return value;
  return -1;
}

}  // namespace slowburn::testing
