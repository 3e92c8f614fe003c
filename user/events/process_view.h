// A rank's process as the kernel sees it at one moment: its state, the
// system call and kernel function its main thread blocks in, what that call
// waits on, its time on a CPU since a moment of interest (a hang's start),
// how it ended. Plain data: engine/process_reader.h reads it from /proc,
// detect/ judges with it, sinks print it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace slowburn {

struct ProcessView {
  enum class State { running, sleeping, disk_sleep, stopped, zombie, gone, unknown };
  State state = State::unknown;
  std::string syscall;       // the main thread's blocking call ("read", "futex"); "" when running or unknown
  std::string waits_on;      // what it waits on: "pipe:[1234]", "socket:[99]", a file; "" when unknown
  std::string wchan;         // the kernel function it sleeps in
  std::string kernel_stack;  // its innermost kernel frames where readable ("pipe_read < vfs_read < ...")
  int threads = 0;
  uint64_t since_ns = 0;  // CLOCK_MONOTONIC: what on_cpu_ns and off_cpu_ns count from
  uint64_t on_cpu_ns = 0;
  uint64_t off_cpu_ns = 0;
  std::optional<int> signal;     // the signal that stopped or killed it, where seen
  std::optional<int> exit_code;  // exited: its status (exit(N)), when known
  bool oom_killed = false;

  // It does not run: stopped, gone, a zombie, or in uninterruptible sleep
  // without a CPU since `since_ns`. What its waiting peers cannot be.
  bool does_not_run() const;
};

// How a rank's process ended, where the kernel said (lifecycle.bpf.c).
struct ProcessEnd {
  uint64_t ts_ns = 0;         // CLOCK_MONOTONIC
  std::optional<int> signal;  // the signal that ended it
  bool core_dumped = false;
  std::optional<int> exit_code;  // its exit(N), when it was not a signal
  bool oom_killed = false;       // the OOM killer chose it
  uint32_t sender_pid = 0;       // who sent the signal (0: the kernel, or unknown)
  std::string sender_comm;

  // It did not end as a job's rank ends when done: a signal, an OOM kill, a
  // non-zero status.
  bool failed() const { return signal || oom_killed || (exit_code && *exit_code != 0); }
};
// "killed by SIGKILL (sent by pid 4242, kill)", "exited with status 1",
// "killed by the OOM killer", "exited normally".
std::string describe_end(const ProcessEnd& end);
// The view of a process that ended so.
ProcessView ended_view(const ProcessEnd& end);

std::string_view process_state_name(ProcessView::State state);
// Its inverse (a recording's states); anything else is unknown.
ProcessView::State process_state_named(std::string_view name);
// "SIGKILL" for 9; "signal 64" for what has no name here.
std::string signal_name(int signal);
// One phrase, for a finding: "stopped (SIGSTOP, state T), 0 ms on a CPU in
// 18.2 s", "sleeping in read on pipe:[4242], 0% of a CPU", "running, 100% of
// a CPU", "killed by SIGKILL".
std::string describe_process(const ProcessView& view);

}  // namespace slowburn
