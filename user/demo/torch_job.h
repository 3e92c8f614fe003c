// The bundled PyTorch DDP job (user/demo/ddp_workload.py): one process per
// rank started with the torchrun environment, on the gloo backend. What
// `slowburn demo --workload pytorch` and the scenario tests trace.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rank_identity.h"
#include "core/subprocess.h"

namespace slowburn {

struct TorchJobOptions {
  std::string python = "/usr/bin/python3";  // Debian's, with python3-torch
  std::string script;                       // the workload
  std::vector<std::string> args;            // its arguments
  int ranks = 4;
  int master_port = 0;  // 0: a free one
  std::string log_dir;  // rank R's output in log_dir/rank-R.log; empty: /dev/null
  std::string proc_root = "/proc";
  std::string master_addr = "127.0.0.1";  // where rank 0's store listens
  std::vector<std::string> extra_env;     // KEY=VALUE for every rank (GLOO_SOCKET_IFNAME=eth0)
  // A command each rank runs under (its own network namespace: nsenter
  // --net=...), one that execs the rank in place: its pid is the rank's.
  std::function<std::vector<std::string>(int rank)> prefix;
};

class TorchJob {
 public:
  // Starts the ranks and waits until each runs with libgloo (or
  // libtorch_cpu) mapped.
  static Result<TorchJob> launch(const TorchJobOptions& options, double timeout_s = 60);

  const std::vector<RankIdentity>& ranks() const { return ranks_; }
  std::vector<int32_t> pids() const;
  // SIGTERM to every rank (they agree to stop in the same step); SIGKILL
  // what is left after a grace period. Returns how many exited cleanly.
  int stop();

 private:
  TorchJob(std::vector<Subprocess> processes, std::vector<RankIdentity> ranks)
      : processes_(std::move(processes)), ranks_(std::move(ranks)) {}
  std::vector<Subprocess> processes_;
  std::vector<RankIdentity> ranks_;
};

// A bundled program next to the slowburn executable (build/libexec) or under
// PREFIX/libexec/slowburn when installed.
std::optional<std::string> find_libexec(const std::string& name);

// The DDP workload's arguments: one rank stalling `slow_ms` per step in its
// data path (-1: healthy), groups of `group_size` (0: none), a hard stop.
std::vector<std::string> ddp_workload_args(int slow_rank, double slow_ms, int group_size, double max_seconds);

}  // namespace slowburn
