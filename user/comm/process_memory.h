// Reading another process's memory: how slowburn learns what a
// communicator handle stands for (its context id, its members) in a job
// that created it before slowburn attached. Needs ptrace-read access to the
// process (root, or CAP_SYS_PTRACE), as /proc/PID/maps does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>

namespace slowburn {

class ProcessMemory {
 public:
  virtual ~ProcessMemory() = default;
  // Copies `size` bytes at `address`; false when they cannot be read.
  virtual bool read(uint64_t address, void* out, size_t size) const = 0;

  template <typename T>
  bool read_value(uint64_t address, T& out) const {
    return read(address, &out, sizeof(out));
  }
};

// /proc/PID/mem (under a procfs root).
std::unique_ptr<ProcessMemory> open_process_memory(const std::filesystem::path& proc_root, int32_t pid);

}  // namespace slowburn
