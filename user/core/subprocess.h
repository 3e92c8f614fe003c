// A child process in its own process group, stopped with its whole group
// (mpirun and its ranks) when the owner is done or destroyed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace slowburn {

struct SpawnOptions {
  std::string output_path = "/dev/null";  // stdout and stderr go here
  std::vector<std::string> extra_env;     // KEY=VALUE added to the inherited environment
};

class Subprocess {
 public:
  static Result<Subprocess> spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) = delete;
  Subprocess(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }
  // Sends a signal to the child itself (not its group).
  void signal(int signo) const;
  // Blocks until it exits, up to `timeout`; the exit status, or nullopt.
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  // Exit status once it has exited (128 + signal for a signal), without blocking.
  std::optional<int> poll();
  // SIGTERM to the group, then SIGKILL after `grace`; returns the exit status.
  int terminate(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));

 private:
  explicit Subprocess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Full path of a program on PATH, or nullopt.
std::optional<std::string> find_program(const std::string& name);

}  // namespace slowburn
