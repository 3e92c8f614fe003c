// slowburn trace: an ad-hoc session on every rank of the node.
#include <iostream>

#include "cli/command.h"
#include "cli/options.h"
#include "record/recorder.h"
#include "record/recording_sink.h"
#include "sinks/fan_out_sink.h"
#include "sinks/perfetto_sink.h"
#include "trace/trace_session.h"

namespace slowburn::cli {

namespace {
struct TraceArgs {
  TraceOptions options;
  std::string library;
  std::string persistence = "3/5";
  double window_ms = 500;
  double hang_s = 10;
  bool json = false;
  std::string record;
  std::string perfetto;
  std::string host;
};

// --record DIR (an existing directory, or a path ending in '/', made if
// missing: every node's tracer writes into one shared one): DIR/HOST.sbr.
Result<std::filesystem::path> recording_path(const TraceArgs& args) {
  std::filesystem::path path = args.record;
  std::error_code ec;
  if (!args.record.ends_with('/') && !std::filesystem::is_directory(path, ec)) return path;
  std::filesystem::create_directories(path, ec);
  if (ec) return make_error("cannot make the recordings directory {}: {}", path.string(), ec.message());
  return path / (args.host + ".sbr");
}

Result<void> apply(TraceArgs& args) {
  if (auto ok = parse_persistence(args.persistence, args.options.detector); !ok) return ok;
  args.options.detector.window_ns = static_cast<uint64_t>(args.window_ms * 1e6);
  args.options.detector.hang_ns = static_cast<uint64_t>(args.hang_s * 1e9);
  if (!args.library.empty()) args.options.library = args.library;
  if (args.host.empty()) args.host = hostname();
  return {};
}

// The session with its outputs: stdout, and the recording and the timeline
// when asked for (each also fed every call through the session's tap).
int run(TraceArgs& args, const std::atomic<bool>& stop) {
  auto out = make_stdout_sink(args.json, args.host);
  std::vector<Sink*> sinks{out.get()};
  std::unique_ptr<Recorder> recorder;
  std::unique_ptr<RecordingSink> recording;
  std::unique_ptr<PerfettoSink> timeline;
  if (!args.record.empty()) {
    auto path = recording_path(args);
    if (!path) return fail(path.error());
    auto created = Recorder::create(*path, {args.host});
    if (!created) return fail(created.error());
    recorder = std::move(*created);
    recording = std::make_unique<RecordingSink>(*recorder);
    sinks.push_back(recording.get());
  }
  // Only a timeline this run created is removed when it traced nothing.
  std::error_code ec;
  const bool timeline_is_new = !args.perfetto.empty() && !std::filesystem::exists(args.perfetto, ec);
  if (!args.perfetto.empty()) {
    auto created = PerfettoSink::create(args.perfetto, wall_offset_ns(), args.host, true);
    if (!created) return fail(created.error());
    timeline = std::move(*created);
    sinks.push_back(timeline.get());
  }
  std::atomic<bool> traced_a_call = false;
  args.options.on_call = [&](const CallEvent& call, const CallComm& comm) {
    traced_a_call = true;
    if (recorder) recorder->call(call, comm);
    if (timeline)
      if (const ProbeSpec* spec = find_probe(static_cast<uint16_t>(call.probe_id)))
        timeline->call(call, comm, spec->name);
  };
  if (recorder) {
    args.options.on_in_flight = [&](uint64_t now_ns, const std::vector<InFlightCall>& calls) {
      recorder->in_flight(now_ns, calls);
    };
    args.options.on_process_views = [&](uint64_t now_ns, const std::map<int32_t, ProcessView>& views) {
      recorder->process_views(now_ns, views);
    };
    args.options.on_rank_end = [&](int32_t pid, const ProcessEnd& end) { recorder->process_end(pid, end); };
  }
  FanOutSink sink(sinks);
  auto result = run_trace(args.options, sink, stop);
  Result<void> timeline_closed = timeline ? timeline->close() : Result<void>{};
  if (!result && !traced_a_call) {
    // A session that failed before any call (no rank, nothing traced)
    // leaves no files: a retry with the same --record would find the
    // recording there and be refused ("a recording is never appended to").
    // One that failed later keeps what it recorded.
    if (recorder) {
      (void)recorder->finish();
      for (const char* suffix : {"", "-wal", "-shm", "-journal"})
        std::filesystem::remove(recorder->path().string() + suffix, ec);
    }
    if (timeline && timeline_is_new && std::filesystem::is_regular_file(args.perfetto, ec))
      std::filesystem::remove(args.perfetto, ec);
    return fail(result.error());
  }
  if (!result) {
    if (recorder && recorder->finish())
      std::cerr << fmt::format("slowburn: recorded to {} (until the error)\n", recorder->path().string());
    if (!timeline_closed) std::cerr << "slowburn: " << timeline_closed.error().message << "\n";
    return fail(result.error());
  }
  if (recorder) {
    auto finished = recorder->finish();
    if (!finished) return fail(finished.error());
    std::cerr << fmt::format("slowburn: recorded to {}{}\n", recorder->path().string(),
                             recorder->dropped_calls()
                                 ? fmt::format(" ({} calls dropped: the disk fell behind)", recorder->dropped_calls())
                                 : "");
  }
  if (!timeline_closed) return fail(timeline_closed.error());
  // Too little aligned to judge is not an all-clear.
  return result->verdict.judged ? 0 : kExitUndetermined;
}

}  // namespace

Command add_trace_command(CLI::App& app) {
  auto args = std::make_shared<TraceArgs>();
  CLI::App* sub = app.add_subcommand(
      "trace",
      "Trace collective calls of every rank on this node: live per-rank table, log2 histograms, straggler "
      "verdict.\n\nExamples:\n"
      "  slowburn trace                         # every rank, every probe, until Ctrl-C\n"
      "  slowburn trace -d 30 -i 2              # 30 s, table every 2 s\n"
      "  slowburn trace --probe 'mpi.*' --pid 4242 --pid 4243\n"
      "  slowburn trace --json | jq 'select(.kind==\"verdict\")'\n"
      "  slowburn trace --probe 'gloo.*' -d 20       # a PyTorch job on the gloo backend\n"
      "  slowburn trace -d 60 --record /shared/run42/   # every node: then slowburn analyze /shared/run42\n"
      "Exit status: 0 a verdict was reached, 1 an error, 2 no verdict: too few aligned collectives to judge, or "
      "nothing traced (no collective probe attached).\n"
      "A finding names a likely cause when an Xid, AER error or degraded PCIe link concerns the culprit's GPU or NIC.");
  TraceOptions& o = args->options;
  add_pids(sub, o.pids, "Trace only these rank processes");
  sub->add_option("--probe", o.probe_patterns, "Probes to attach, glob allowed (default: all; see 'slowburn catalog')");
  sub->add_option("--lib", args->library, "Attach in this library file instead of the one each rank loaded");
  add_duration(sub, o.duration_s, "trace");
  add_interval(sub, o.interval_s, "live tables");
  add_json(sub, args->json, "status, window, finding, hist, event, verdict");
  sub->add_option("--record", args->record,
                  "Also write the session to this SQLite recording (a directory: DIR/HOST.sbr) for 'slowburn analyze'");
  sub->add_option(
      "--perfetto", args->perfetto,
      "Also write a timeline of every call, finding and event to this file (Perfetto UI, chrome://tracing)");
  sub->add_option("--host", args->host, "The node's name in the recording and JSON lines (default: the hostname)");
  add_node_source_options(sub, o.node);
  auto* detector = sub->add_option_group("detector", "Straggler detector (defaults and why: docs/detector.md)");
  detector->add_option("--window-ms", args->window_ms, "Window length")
      ->check(CLI::Range(10.0, 3'600'000.0))
      ->capture_default_str();
  detector->add_option("--z-threshold", o.detector.z_threshold, "Robust z of arrival lateness")
      ->capture_default_str()
      ->check(above_zero("3.5"));
  detector->add_option("--persistence", args->persistence, "Flagged in M of the last N windows")->capture_default_str();
  detector
      ->add_option("--min-blame-share", o.detector.min_blame_share, "Effect-size floor: blame as a share of the window")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  detector
      ->add_option("--min-cost", o.detector.session_cost_thresholds.min_cost_share,
                   "The slow burn: name a rank whose own lateness costs the job this share of the traced time "
                   "over the session (severity minor under 0.1, major from there)")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  detector
      ->add_option("--hang-s", args->hang_s,
                   "A hang: ranks inside a collective this long while a member never entered it")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  detector->add_flag("!--no-sequential", o.detector.sequential,
                     "Judge by the windows only (no per-instance sequential test: a strong straggler is then named "
                     "after M windows, not within a second)");
  return {sub, [args] {
            if (auto ok = apply(*args); !ok) return fail(ok.error());
            const auto& stop = install_stop_handlers();
            return run(*args, stop);
          }};
}

}  // namespace slowburn::cli
