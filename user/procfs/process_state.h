// One process as /proc shows it at one moment: its state letter, its CPU
// time, its threads, and the system call its main thread blocks in, with
// the kernel function it sleeps in and the file its first argument names.
// What the kernel's view of a hung rank is made of (engine/rank_watch.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace slowburn {

struct ProcessSample {
  char state = '?';     // stat's state: R S D T t Z X I
  uint64_t cpu_ns = 0;  // utime + stime, every thread
  int threads = 0;
  std::optional<int> exit_code;  // stat's exit_code (a zombie's wait status)
  // The main thread's system call, when blocked in one ("running", or a
  // kernel thread's "-1", leaves it empty).
  std::optional<long> syscall;
  std::string syscall_name;  // "read", "futex"; "syscall 271" for one not named here
  std::string wchan;         // "pipe_read", "futex_wait_queue"; empty when 0 or unreadable
  std::string waits_on;      // the fd in its first argument, for the calls that take one: "pipe:[4242]", a path
  std::string kernel_stack;  // its innermost kernel frames, "pipe_read < vfs_read < ksys_read" (root only)
};

// Pure: the fields of a /proc/PID/stat line, an error naming what is malformed.
Result<ProcessSample> parse_proc_stat(std::string_view line, long ticks_per_s);
// Pure: the name of a blocking system call on this machine's architecture
// (x86-64 or arm64), "syscall N" otherwise.
std::string syscall_name(long nr);
// Pure: the innermost `frames` function names of a /proc/PID/stack text,
// joined by " < " ("" when it has none).
std::string parse_kernel_stack(std::string_view text, size_t frames = 4);
// Pure: whether the call's first argument is a file descriptor worth naming.
bool syscall_takes_fd(std::string_view name);

// proc_root/PID/{stat,syscall,wchan,fd/N}: an error when the process is gone.
Result<ProcessSample> read_process_sample(const std::filesystem::path& proc_root, int32_t pid);

}  // namespace slowburn
