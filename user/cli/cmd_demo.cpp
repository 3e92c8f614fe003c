// slowburn demo: launch the bundled 4-rank MPI job with one slowed rank,
// trace it live with the real probes, and check the verdict against the
// injected rank.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <random>
#include <set>

#include "cli/command.h"
#include "loader/privileges.h"
#include "session/mpi_job.h"
#include "session/trace_session.h"

namespace slowburn::cli {

namespace {
struct DemoArgs {
  int slow_rank = -1;
  double slowdown = 1.5;
  bool healthy = false;
  double duration_s = 10;
  double interval_s = 2;
  double compute_us = 3000;
  std::string workload;
  bool json = false;
};

int run_demo(DemoArgs args) {
  if (auto ok = check_tracing_privileges(); !ok) return fail(ok.error());
  constexpr int kRanks = 4;
  if (args.workload.empty()) {
    auto found = find_workload();
    if (!found)
      return fail(make_error(
          "the demo workload (slowburn-mpi-workload) is not next to slowburn: run make, or give --workload"));
    args.workload = *found;
  }
  if (args.healthy)
    args.slow_rank = -1;
  else if (args.slow_rank < 0)
    args.slow_rank = std::uniform_int_distribution<int>(0, kRanks - 1)(*std::make_unique<std::random_device>());
  if (args.slow_rank >= kRanks)
    return fail(make_error("--slow-rank {} is not a rank of the {}-rank job", args.slow_rank, kRanks));

  MpiJobOptions job_options;
  job_options.program =
      demo_workload_argv(args.workload, args.slow_rank, args.slowdown, args.compute_us, args.duration_s + 60);
  job_options.ranks = kRanks;
  // mkstemp: a fixed name in /tmp would let another user plant a symlink.
  std::string log_template = "/tmp/slowburn-demo-XXXXXX.log";
  int log_fd = mkstemps(log_template.data(), 4);
  if (log_fd < 0) return fail(make_sys_error(errno, "cannot create a log file in /tmp"));
  close(log_fd);
  job_options.log_path = log_template;
  auto job = MpiJob::launch(job_options);
  if (!job) return fail(job.error());

  std::string injected =
      args.slow_rank >= 0 ? fmt::format("rank {} does {:.2g}x the compute of the others", args.slow_rank, args.slowdown)
                          : std::string("no straggler (healthy run)");
  if (!args.json)
    std::cout << fmt::format(
        "slowburn demo: {} ranks of {} under mpirun (pid {}), each step = compute {:.0f} us, MPI_Allgather, "
        "MPI_Allreduce; {}.\nTracing the real MPI probes for {:.0f} s...\n\n",
        kRanks, args.workload, job->launcher_pid(), args.compute_us, injected, args.duration_s);

  TraceOptions trace;
  trace.pids = job->pids();
  trace.probe_patterns = {"mpi.*"};
  trace.duration_s = args.duration_s;
  trace.interval_s = args.interval_s;
  const auto& stop = install_stop_handlers();
  auto sink = make_stdout_sink(args.json);
  auto result = run_trace(trace, *sink, stop);
  job->stop();
  if (!result) return fail(result.error());

  std::set<int> named;
  for (const Finding& f : result->summary.findings) named.insert(f.culprit.rank);
  std::set<int> expected;
  if (args.slow_rank >= 0) expected.insert(args.slow_rank);
  bool match = named == expected;
  std::string named_text;
  for (int r : named) named_text += (named_text.empty() ? "rank " : ", rank ") + std::to_string(r);
  if (named_text.empty()) named_text = "nobody";
  if (args.json) {
    std::cout
        << fmt::format(
               R"({{"kind":"status","event":"demo","injected_rank":{},"named":"{}","match":{},"first_finding_after_s":{}}})",
               args.slow_rank >= 0 ? std::to_string(args.slow_rank) : "null", named_text, match ? "true" : "false",
               result->first_finding_after_s ? fmt::format("{:.3f}", *result->first_finding_after_s) : "null")
        << '\n';
  } else {
    std::cout << fmt::format("\nInjected: {}. slowburn named: {}. {}\n", injected, named_text,
                             match ? "MATCH" : "MISMATCH");
    if (result->first_finding_after_s)
      std::cout << fmt::format("First finding {:.1f} s after the probes were attached.\n",
                               *result->first_finding_after_s);
  }
  return match ? 0 : 3;
}
}  // namespace

Command add_demo_command(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  CLI::App* sub = app.add_subcommand(
      "demo",
      "Run the bundled 4-rank OpenMPI workload with one slowed rank (1.5x compute on a random rank by default), "
      "trace it live and check that the verdict names the injected rank. Exit 0 on a match, 3 on a mismatch.\n\n"
      "Examples:\n  slowburn demo\n  slowburn demo --slow-rank 2 --slowdown 1.3\n  slowburn demo --healthy");
  auto* slow = sub->add_option("--slow-rank", args->slow_rank, "Rank to slow down (default: random)");
  sub->add_option("--slowdown", args->slowdown, "Compute multiplier of the slow rank")
      ->check(CLI::Range(1.0, 100.0))
      ->capture_default_str();
  sub->add_flag("--healthy", args->healthy, "No straggler: the verdict must name nobody")->excludes(slow);
  sub->add_option("-d,--duration", args->duration_s, "Seconds to trace")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("-i,--interval", args->interval_s, "Seconds between live tables")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--compute-us", args->compute_us, "Compute per step on a normal rank")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--workload", args->workload, "Path of slowburn-mpi-workload");
  sub->add_flag("--json", args->json, "JSON lines");
  return {sub, [args] { return run_demo(*args); }};
}

}  // namespace slowburn::cli
