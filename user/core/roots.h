// Where a session reads the node: procfs, sysfs and the cgroup tree. "/proc",
// "/sys" and "/sys/fs/cgroup" on a node; a captured or fixture tree in tests.
#pragma once

#include <filesystem>

namespace slowburn {

struct Roots {
  std::filesystem::path proc_root = "/proc";
  std::filesystem::path sysfs_root = "/sys";
  std::filesystem::path cgroup_root = "/sys/fs/cgroup";
};

}  // namespace slowburn
