// The service's own footprint, for its metrics and the leak test: CPU time,
// resident memory, open file descriptors (read from a procfs root).
#pragma once

#include <cstdint>
#include <filesystem>

namespace slowburn {

struct SelfStats {
  double cpu_seconds = 0;  // user + system, every thread
  uint64_t resident_bytes = 0;
  uint64_t open_fds = 0;
};

SelfStats read_self_stats(const std::filesystem::path& proc_root = "/proc");

}  // namespace slowburn
