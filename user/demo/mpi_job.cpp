#include "demo/mpi_job.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "demo/torch_job.h"
#include "probes/mpi_family.h"
#include "probes/resolver.h"
#include "procfs/ranks.h"

namespace slowburn {

int MpiJob::stop() {
  for (const RankIdentity& r : ranks_) kill(r.pid, SIGTERM);
  if (auto status = mpirun_.wait_for(std::chrono::milliseconds(3000))) return *status;
  return mpirun_.terminate();
}

std::vector<int32_t> MpiJob::pids() const {
  std::vector<int32_t> pids;
  for (const RankIdentity& r : ranks_) pids.push_back(r.pid);
  return pids;
}

std::vector<std::string> demo_workload_argv(const std::string& workload, int slow_rank, double slowdown,
                                            double compute_us, double max_seconds) {
  std::vector<std::string> argv = {workload, "--compute-us", fmt::format("{}", compute_us), "--seconds",
                                   fmt::format("{}", max_seconds)};
  if (slow_rank >= 0)
    argv.insert(argv.end(), {"--slow-rank", std::to_string(slow_rank), "--slowdown", fmt::format("{}", slowdown)});
  return argv;
}

Result<MpiJob> MpiJob::launch(const MpiJobOptions& o, double timeout_s) {
  bool mpich = o.launcher == MpiLauncher::mpich;
  auto mpirun = find_program(mpich ? "mpirun.mpich" : "mpirun");
  if (!mpirun)
    return mpich ? make_error("mpirun.mpich not found on PATH: install MPICH (apt-get install mpich, or make deps)")
                 : make_error("mpirun not found on PATH: install OpenMPI (apt-get install openmpi-bin, or make deps)");
  if (o.program.empty() || access(o.program[0].c_str(), X_OK) != 0)
    return make_error("rank program {} is missing or not executable: run make", o.program.empty() ? "" : o.program[0]);

  // Jobs already running are not ours.
  std::set<std::string> earlier_jobs;
  for (const RankIdentity& r : discover_ranks(o.proc_root, getpid())) earlier_jobs.insert(r.job);

  // Hydra runs as root and oversubscribes without being asked, and binds nothing by default.
  std::vector<std::string> argv =
      mpich ? std::vector<std::string>{*mpirun, "-n", std::to_string(o.ranks)}
            : std::vector<std::string>{*mpirun, "--allow-run-as-root",  "--oversubscribe", "--bind-to", "none",
                                       "-np",   std::to_string(o.ranks)};
  argv.insert(argv.end(), o.program.begin(), o.program.end());
  auto child = Subprocess::spawn(argv, {o.log_path, {}});
  if (!child) return child.error();

  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto status = child->poll())
      return make_error("mpirun exited with status {} before the ranks started (log: {})", *status, o.log_path);
    std::map<std::string, std::vector<RankIdentity>> jobs;
    for (RankIdentity& r : discover_ranks(o.proc_root, getpid()))
      if (!earlier_jobs.contains(r.job) && r.command.find(o.program[0]) != std::string::npos)
        jobs[r.job].push_back(std::move(r));
    for (auto& [job, ranks] : jobs) {
      if (static_cast<int>(ranks.size()) != o.ranks) continue;
      bool loaded = true;  // the MPI library mapped: the probes have something to resolve
      for (const RankIdentity& r : ranks) {
        auto maps = read_process_maps(o.proc_root, r.pid);
        loaded = loaded && maps &&
                 std::any_of(mpi_library_stems().begin(), mpi_library_stems().end(),
                             [&](const std::string& stem) { return find_library(*maps, stem); });
      }
      if (loaded) return MpiJob(std::move(*child), std::move(ranks));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return make_error("the {} ranks of {} did not appear within {:.0f} s (log: {})", o.ranks, o.program[0], timeout_s,
                    o.log_path);
}

}  // namespace slowburn
