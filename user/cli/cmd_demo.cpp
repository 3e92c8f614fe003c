// slowburn demo: launch a bundled 4-rank job with one slowed rank (the
// OpenMPI workload, or a PyTorch DDP job on gloo), trace it live with the
// real probes, and check the verdict against the injected rank.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <random>
#include <set>

#include "cli/command.h"
#include "cli/options.h"
#include "demo/mpi_job.h"
#include "demo/torch_job.h"
#include "loader/privileges.h"
#include "trace/trace_session.h"

namespace slowburn::cli {

namespace {
constexpr int kRanks = 4;

struct DemoArgs {
  int slow_rank = -1;
  double slowdown = 1.5;
  double slow_ms = 8;
  bool healthy = false;
  double duration_s = 10;
  double interval_s = 2;
  double compute_us = 3000;
  std::string workload = "mpi";  // mpi, pytorch, or the path of an MPI workload binary
  bool json = false;
};

// A launched job, whatever launched it.
struct DemoJob {
  std::vector<int32_t> pids;
  std::string description;  // what runs, and what was injected
  std::string injected;
  std::vector<std::string> probes;
  std::function<void()> stop;
};

// mkstemp: a fixed name in /tmp would let another user plant a symlink.
Result<std::string> temp_log() {
  std::string path = "/tmp/slowburn-demo-XXXXXX.log";
  int fd = mkstemps(path.data(), 4);
  if (fd < 0) return make_sys_error(errno, "cannot create a log file in /tmp");
  close(fd);
  return path;
}

Result<std::shared_ptr<DemoJob>> launch_mpi(const DemoArgs& args) {
  std::string program = args.workload;
  if (program == "mpi") {
    auto found = find_libexec("slowburn-mpi-workload");
    if (!found)
      return make_error(
          "the demo workload (slowburn-mpi-workload) is not next to slowburn: run make, or give "
          "--workload PATH");
    program = *found;
  }
  auto log = temp_log();
  if (!log) return log.error();
  MpiJobOptions options;
  options.program = demo_workload_argv(program, args.slow_rank, args.slowdown, args.compute_us, args.duration_s + 60);
  options.ranks = kRanks;
  options.log_path = *log;
  auto job = MpiJob::launch(options);
  if (!job) return job.error();
  auto held = std::make_shared<MpiJob>(std::move(*job));
  auto demo = std::make_shared<DemoJob>();
  demo->pids = held->pids();
  demo->injected = args.slow_rank >= 0
                       ? fmt::format("rank {} does {:.2g}x the compute of the others", args.slow_rank, args.slowdown)
                       : std::string("no straggler (healthy run)");
  demo->description =
      fmt::format("{} ranks of {} under mpirun (pid {}), each step = compute {:.0f} us, MPI_Allgather, MPI_Allreduce",
                  kRanks, program, held->launcher_pid(), args.compute_us);
  demo->probes = {"mpi.*"};
  demo->stop = [held] { held->stop(); };
  return demo;
}

Result<std::shared_ptr<DemoJob>> launch_pytorch(const DemoArgs& args) {
  auto script = find_libexec("slowburn-ddp-workload.py");
  if (!script) return make_error("the PyTorch workload (slowburn-ddp-workload.py) is not next to slowburn: run make");
  TorchJobOptions options;
  options.script = *script;
  options.args = ddp_workload_args(args.slow_rank, args.slow_ms, 0, args.duration_s + 60);
  options.ranks = kRanks;
  auto job = TorchJob::launch(options);
  if (!job) return job.error();
  auto held = std::make_shared<TorchJob>(std::move(*job));
  auto demo = std::make_shared<DemoJob>();
  demo->pids = held->pids();
  demo->injected = args.slow_rank >= 0
                       ? fmt::format("rank {} stalls {:.0f} ms per step in its data path", args.slow_rank, args.slow_ms)
                       : std::string("no straggler (healthy run)");
  demo->description = fmt::format(
      "{} ranks of a PyTorch DDP job on gloo ({} {}, torchrun environment), each step = a batch, forward, backward "
      "(gloo all-reduces the gradients), a small all-reduce",
      kRanks, options.python, *script);
  demo->probes = {"gloo.*"};
  demo->stop = [held] { held->stop(); };
  return demo;
}

void print_outcome(const DemoArgs& args, const DemoJob& job, const TraceResult& result, bool match,
                   const std::string& named) {
  if (args.json) {
    std::cout
        << fmt::format(
               R"({{"kind":"status","event":"demo","workload":"{}","injected_rank":{},"named":"{}","match":{},"first_finding_after_s":{}}})",
               args.workload == "pytorch" ? "pytorch" : "mpi",
               args.slow_rank >= 0 ? std::to_string(args.slow_rank) : "null", named, match ? "true" : "false",
               result.first_finding_after_s ? fmt::format("{:.3f}", *result.first_finding_after_s) : "null")
        << '\n';
    return;
  }
  std::cout << fmt::format("\nInjected: {}. slowburn named: {}. {}\n", job.injected, named,
                           match ? "MATCH" : "MISMATCH");
  if (result.first_finding_after_s)
    std::cout << fmt::format("First finding {:.1f} s after the probes were attached.\n", *result.first_finding_after_s);
}

int run_demo(DemoArgs args) {
  if (auto ok = check_tracing_privileges(); !ok) return fail(ok.error());
  if (args.healthy)
    args.slow_rank = -1;
  else if (args.slow_rank < 0)
    args.slow_rank = std::uniform_int_distribution<int>(0, kRanks - 1)(*std::make_unique<std::random_device>());
  if (args.slow_rank >= kRanks)
    return fail(make_error("--slow-rank {} is not a rank of the {}-rank job", args.slow_rank, kRanks));

  auto job = args.workload == "pytorch" ? launch_pytorch(args) : launch_mpi(args);
  if (!job) return fail(job.error());
  if (!args.json)
    std::cout << fmt::format("slowburn demo: {}; {}.\nTracing the real {} probes for {:.0f} s...\n\n",
                             (*job)->description, (*job)->injected, args.workload == "pytorch" ? "gloo" : "MPI",
                             args.duration_s);

  TraceOptions trace;
  trace.pids = (*job)->pids;
  trace.probe_patterns = (*job)->probes;
  trace.duration_s = args.duration_s;
  trace.interval_s = args.interval_s;
  const auto& stop = install_stop_handlers();
  auto sink = make_stdout_sink(args.json);
  auto result = run_trace(trace, *sink, stop);
  (*job)->stop();
  if (!result) return fail(result.error());

  // The verdict's stragglers: those that held, not a passing episode.
  std::set<int> named, expected;
  for (const Finding& f : result->verdict.stragglers) named.insert(f.culprit.rank);
  if (args.slow_rank >= 0) expected.insert(args.slow_rank);
  std::string named_text;
  for (int r : named) named_text += (named_text.empty() ? "rank " : ", rank ") + std::to_string(r);
  if (named_text.empty()) named_text = result->verdict.judged ? "nobody" : "nobody (undetermined)";
  bool match = named == expected && result->verdict.judged;
  print_outcome(args, **job, *result, match, named_text);
  if (!result->verdict.judged) return kExitUndetermined;
  return match ? 0 : kExitMismatch;
}
}  // namespace

Command add_demo_command(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  CLI::App* sub = app.add_subcommand(
      "demo",
      "Run a bundled 4-rank job with one slowed rank, trace it live and check that the verdict names the injected "
      "rank: the OpenMPI workload (1.5x compute on a random rank by default), or a PyTorch DDP job on gloo (a rank "
      "stalling in its data path).\n\n"
      "Examples:\n  slowburn demo\n  slowburn demo --slow-rank 2 --slowdown 1.3\n  slowburn demo --healthy\n"
      "  slowburn demo --workload pytorch\n  slowburn demo --workload pytorch --slow-rank 1 --slow-ms 12\n\n"
      "Exit status: 0 the verdict names the injected rank (nobody with --healthy), 1 an error, 2 no verdict (too "
      "few aligned collectives), 3 the verdict names someone else.");
  auto* slow = sub->add_option("--slow-rank", args->slow_rank, "Rank to slow down (default: random)")
                   ->check(CLI::Range(0, kRanks - 1));
  sub->add_option("--slowdown", args->slowdown, "MPI: compute multiplier of the slow rank")
      ->check(CLI::Range(1.0, 100.0))
      ->capture_default_str();
  sub->add_option("--slow-ms", args->slow_ms, "PyTorch: the slow rank's stall per step, in ms")
      ->check(CLI::Range(0.0, 10000.0))
      ->capture_default_str();
  sub->add_flag("--healthy", args->healthy, "No straggler: the verdict must name nobody")->excludes(slow);
  add_bounded_duration(sub, args->duration_s, "trace");
  add_interval(sub, args->interval_s, "live tables");
  sub->add_option("--compute-us", args->compute_us, "MPI: compute per step on a normal rank")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--workload", args->workload,
                  "mpi (the bundled OpenMPI job), pytorch (the bundled DDP job), or the path of an MPI workload")
      ->capture_default_str();
  add_json(sub, args->json, "status, window, finding, hist, event, verdict");
  return {sub, [args] { return run_demo(*args); }};
}

}  // namespace slowburn::cli
