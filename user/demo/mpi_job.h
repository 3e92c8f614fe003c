// The bundled demo workload launched under mpirun: the job `slowburn demo`
// traces, and the one scenario tests and benchmarks inject stragglers into.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rank_identity.h"
#include "core/subprocess.h"

namespace slowburn {

// Which MPI launches the job: Open MPI's mpirun (the default), or MPICH's
// hydra (mpirun.mpich: Debian's mpich beside Open MPI, whose alternatives
// keep the plain mpirun).
enum class MpiLauncher { open_mpi, mpich };

struct MpiJobOptions {
  std::vector<std::string> program;  // argv of each rank: the program and its arguments
  int ranks = 4;
  MpiLauncher launcher = MpiLauncher::open_mpi;
  std::string log_path = "/dev/null";
  std::string proc_root = "/proc";
};

// The demo workload's argv: one rank slowed by `slowdown` (-1: healthy), and
// a hard stop after max_seconds whatever happens to its tracer.
std::vector<std::string> demo_workload_argv(const std::string& workload, int slow_rank, double slowdown,
                                            double compute_us, double max_seconds);

class MpiJob {
 public:
  // Starts mpirun (as root, oversubscribed) and waits until every rank runs
  // with its MPI library mapped.
  static Result<MpiJob> launch(const MpiJobOptions& options, double timeout_s = 30);

  const std::vector<RankIdentity>& ranks() const { return ranks_; }
  std::vector<int32_t> pids() const;
  pid_t launcher_pid() const { return mpirun_.pid(); }
  // SIGTERM to the ranks themselves (they agree to stop in the same step and
  // finish MPI cleanly: mpirun then exits at once, where signalling mpirun
  // costs its 2 s abort path); the whole group if that does not end it.
  int stop();

 private:
  MpiJob(Subprocess mpirun, std::vector<RankIdentity> ranks) : mpirun_(std::move(mpirun)), ranks_(std::move(ranks)) {}
  Subprocess mpirun_;
  std::vector<RankIdentity> ranks_;
};

}  // namespace slowburn
