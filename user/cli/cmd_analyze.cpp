// slowburn analyze: recordings of one job from many nodes, judged as one job.
#include <sys/resource.h>

#include <iostream>

#include "analyze/analyze.h"
#include "cli/command.h"
#include "cli/options.h"
#include "record/recording_reader.h"
#include "sinks/fan_out_sink.h"

namespace slowburn::cli {

namespace {
struct AnalyzeArgs {
  AnalyzeOptions options;
  std::vector<std::string> inputs;
  std::string job;
  std::string persistence = "3/5";
  double window_ms = 500;
  double hang_s = 10;
  bool json = false;
  std::string perfetto;
};
}  // namespace

namespace {
// A node's recording stays open while the merge reads it: past ~1,000
// nodes Debian's default soft limit of 1024 descriptors would run out, so
// it goes up to the hard limit (as systemd and Go's runtime do).
void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}
}  // namespace

Command add_analyze_command(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  CLI::App* sub = app.add_subcommand(
      "analyze",
      "Merge the recordings of one job from many nodes ('slowburn trace --record') and judge it as one job: each "
      "node's clock offset estimated from the collectives themselves, then the same straggler verdict as trace, "
      "naming rank, node and communicator.\n\nExamples:\n"
      "  slowburn analyze /shared/run42                  # every *.sbr in the directory\n"
      "  slowburn analyze node-a.sbr node-b.sbr --json | jq 'select(.kind==\"node\" or .kind==\"verdict\")'\n"
      "  slowburn analyze run42/ --job 1603207169         # recordings holding several jobs\n"
      "  slowburn analyze run42/ --perfetto run42.json    # then open it in https://ui.perfetto.dev\n"
      "The first recording is the clock reference. Exit status: 0 a verdict was reached, 1 an error, 2 too few "
      "aligned collectives to judge.");
  sub->add_option("recordings", args->inputs, "Recordings (.sbr) or directories of them")->required();
  sub->add_option("--job", args->job, "The job to judge, when the recordings hold several");
  sub->add_option("--perfetto", args->perfetto,
                  "Also write the merged timeline to this file (Perfetto UI, chrome://tracing): one process per node");
  add_json(sub, args->json, "node, window, finding, status, verdict");
  auto* detector = sub->add_option_group("detector", "Straggler detector (defaults and why: docs/detector.md)");
  detector->add_option("--window-ms", args->window_ms, "Window length")
      ->check(CLI::Range(10.0, 3'600'000.0))
      ->capture_default_str();
  detector->add_option("--z-threshold", args->options.detector.z_threshold, "Robust z of arrival lateness")
      ->capture_default_str()
      ->check(above_zero("3.5"));
  detector->add_option("--persistence", args->persistence, "Flagged in M of the last N windows")->capture_default_str();
  detector
      ->add_option("--min-cost", args->options.detector.session_cost_thresholds.min_cost_share,
                   "The slow burn: name a rank whose own lateness costs the job this share of the traced time "
                   "over the session (severity minor under 0.1, major from there)")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  detector
      ->add_option("--hang-s", args->hang_s,
                   "A hang: ranks inside a collective this long, when the recordings end, while a member never entered")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  return {sub, [args] {
            raise_open_file_limit();
            if (auto ok = parse_persistence(args->persistence, args->options.detector); !ok) return fail(ok.error());
            args->options.detector.window_ns = static_cast<uint64_t>(args->window_ms * 1e6);
            args->options.detector.hang_ns = static_cast<uint64_t>(args->hang_s * 1e9);
            for (const std::string& input : args->inputs) args->options.inputs.emplace_back(input);
            if (!args->job.empty()) args->options.job = args->job;
            // Times are put on the reference's clock (with --job, the first
            // recording of that job: not the first recording).
            std::optional<int64_t> wall_offset = reference_wall_offset(args->options.inputs, args->options.job);
            auto out = make_stdout_sink(args->json, "", wall_offset);
            std::vector<Sink*> sinks{out.get()};
            std::unique_ptr<PerfettoSink> timeline;
            if (!args->perfetto.empty()) {
              auto created = PerfettoSink::create(args->perfetto, wall_offset.value_or(0), "");
              if (!created) return fail(created.error());
              timeline = std::move(*created);
              args->options.timeline = timeline.get();
              sinks.push_back(timeline.get());
            }
            FanOutSink sink(sinks);
            auto result = run_analyze(args->options, sink);
            Result<void> closed = timeline ? timeline->close() : Result<void>{};
            if (!result) {
              if (!closed) std::cerr << "slowburn: " << closed.error().message << "\n";
              return fail(result.error());
            }
            if (!closed) return fail(closed.error());
            return result->verdict.judged ? 0 : kExitUndetermined;
          }};
}

}  // namespace slowburn::cli
