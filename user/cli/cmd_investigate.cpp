// slowburn investigate: the layer-by-layer method on a live node (a trace
// session with every source on) or on recordings, ending in a failure graph.
#include <fstream>
#include <iostream>

#include "cli/command.h"
#include "cli/options.h"
#include "investigate/investigate_run.h"
#include "investigate/investigation_output.h"

namespace slowburn::cli {

namespace {

struct InvestigateArgs {
  TraceOptions options;
  std::vector<std::string> from;
  std::string job;
  std::string dot;
  std::string persistence = "3/5";
  double window_ms = 500;
  bool json = false;
};

int run(InvestigateArgs& args) {
  if (auto ok = parse_persistence(args.persistence, args.options.detector); !ok) return fail(ok.error());
  args.options.detector.window_ns = static_cast<uint64_t>(args.window_ms * 1e6);
  std::unique_ptr<Sink> lines = args.json ? make_stdout_sink(true) : make_stdout_sink(false);
  Result<InvestigationInput> input = make_error("unset");
  if (args.from.empty()) {
    if (!args.json)
      std::cerr << fmt::format("slowburn: investigating every rank for {:.0f} s (Ctrl-C ends it sooner)...\n",
                               args.options.duration_s);
    input = gather_live(args.options, lines.get(), install_stop_handlers());
  } else {
    AnalyzeOptions options;
    options.detector = args.options.detector;
    for (const std::string& path : args.from) options.inputs.emplace_back(path);
    if (!args.job.empty()) options.job = args.job;
    input = gather_recorded(options, lines.get());
  }
  if (!input) return fail(input.error());
  Investigation inv = investigate(*input);
  if (args.json) {
    for (const Layer& l : inv.layers) std::cout << layer_json(l).dump() << '\n';
    std::cout << graph_json(inv).dump() << '\n';
  } else {
    print_investigation(inv, std::cout);
  }
  std::cout.flush();
  if (!args.dot.empty()) {
    std::ofstream dot(args.dot, std::ios::trunc);
    dot << graph_dot(inv);
    dot.close();
    if (!dot) return fail(make_error("--dot {}: cannot write it", args.dot));
  }
  return input->verdict.judged ? 0 : kExitUndetermined;
}

}  // namespace

Command add_investigate_command(CLI::App& app) {
  auto args = std::make_shared<InvestigateArgs>();
  args->options.duration_s = 30;
  CLI::App* sub = app.add_subcommand(
      "investigate",
      "Find the cause layer by layer: the collective layer (who is the straggler or the hang, on which "
      "communicator, what it cost), then each layer below the culprit (host, GPU, PCIe, NIC and fabric) looked at "
      "and ruled in or out with its evidence, ending in a failure graph, the most likely path first.\n\n"
      "Examples:\n"
      "  slowburn investigate                          # every rank on this node, 30 s\n"
      "  slowburn investigate -d 60 --dot graph.dot    # then: dot -Tsvg graph.dot > graph.svg\n"
      "  slowburn investigate --json | jq 'select(.kind==\"layer\" or .kind==\"graph\")'\n"
      "  slowburn investigate --from /shared/run42     # recordings of 'slowburn trace --record'\n"
      "Exit status: 0 investigated (whether or not something was found), 1 an error, 2 no verdict: too few "
      "aligned collectives to judge, or nothing traced.");
  TraceOptions& o = args->options;
  add_bounded_duration(sub, o.duration_s, "trace");
  add_pids(sub, o.pids, "Trace only these rank processes");
  sub->add_option("--probe", o.probe_patterns, "Probes to attach, glob allowed (default: all)");
  sub->add_option("--from", args->from, "Investigate these recordings (.sbr or directories) instead of tracing");
  sub->add_option("--job", args->job, "With --from: the job to judge, when the recordings hold several");
  sub->add_option("--dot", args->dot, "Also write the failure graph to this file (Graphviz DOT)");
  add_json(sub, args->json, "finding, verdict, layer (one per layer), graph");
  add_node_source_options(sub, o.node);
  auto* detector = sub->add_option_group("detector", "Straggler detector (defaults and why: docs/detector.md)");
  detector->add_option("--window-ms", args->window_ms, "Window length")
      ->check(CLI::Range(10.0, 3'600'000.0))
      ->capture_default_str();
  detector->add_option("--persistence", args->persistence, "Flagged in M of the last N windows")->capture_default_str();
  return {sub, [args] { return run(*args); }};
}

}  // namespace slowburn::cli
