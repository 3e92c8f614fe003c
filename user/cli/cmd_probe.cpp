// slowburn probe: the continuous service (systemd unit in deploy/systemd).
#include <csignal>
#include <iostream>

#include "cli/command.h"
#include "cli/options.h"
#include "service/probe_service.h"

namespace slowburn::cli {

namespace {
std::atomic<bool> g_reopen_log{false};

void on_hangup(int) { g_reopen_log.store(true); }

struct ProbeArgs {
  ProbeServiceOptions options;
  std::string log_dir;
  std::string persistence = "3/5";
  double budget_percent = 1.0;
  double window_s = 5.0;
  double window_ms = 0;  // 0: --window's seconds
  double hang_s = 10.0;
  double log_max_mb = 64;
  double call_cost_ns = 0;
  double toggle_cost_ns = 0;
};
}  // namespace

Command add_probe_command(CLI::App& app) {
  auto args = std::make_shared<ProbeArgs>();
  CLI::App* sub = app.add_subcommand(
      "probe",
      "Run continuously with in-kernel aggregation only: every rank process of every job on the node, found as jobs "
      "start and end; Prometheus metrics, a JSON-lines event log, an overhead budget.\n\nExamples:\n"
      "  slowburn probe                                   # metrics on 127.0.0.1:9464/metrics\n"
      "  slowburn probe --log-dir /var/log/slowburn       # and an event log (SIGHUP reopens it)\n"
      "  slowburn probe --overhead-budget 0.5             # at most 0.5% of one CPU for the probes\n"
      "  slowburn probe --listen 0.0.0.0:9464 --no-rdma   # scraped from another host\n"
      "  slowburn probe --health-interval 300             # the health checklist every 5 minutes\n"
      "  slowburn probe --state-file /var/lib/slowburn/probe.json  # slow-burn baselines survive a restart\n"
      "Under systemd: deploy/systemd/slowburn-probe.service. Fleet rules: deploy/prometheus/.\n\n"
      "Exit status: 0 stopped by SIGINT/SIGTERM (or -d ran out), 1 an error. A node with no job is not an error: "
      "probe waits for one.");
  ProbeServiceOptions& o = args->options;
  sub->add_option("--listen", o.listen, "HOST:PORT of the metrics endpoint ('' for none)")->capture_default_str();
  sub->add_option("--log-dir", args->log_dir, "Write the JSON-lines event log (slowburn.jsonl) here");
  sub->add_option("--log-max-mb", args->log_max_mb, "Rotate the log at this size")->capture_default_str();
  sub->add_option("--log-keep", o.log_keep, "Rotated logs kept (slowburn.jsonl.1 ...)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  sub->add_flag("--log-windows", o.log_windows, "Log every window's per-rank statistics (verbose)");
  sub->add_option("--state-file", o.state_file,
                  "Keep the slow burn's per-job baselines here (written once a minute and at exit) and go on from "
                  "them after a restart of the service, for the ranks still running on this boot");
  add_interval(sub, o.interval_s, "discovery, budget checks and metric updates", "", 0.1);
  // Milliseconds, as trace, analyze and investigate say it (docs/cli.md);
  // --window (seconds) stays for this release.
  auto* window_ms = sub->add_option("--window-ms", args->window_ms, "Detector window length in ms (default 5000)")
                        ->check(CLI::Range(500.0, 3600000.0));
  sub->add_option("--window", args->window_s, "Detector window in seconds (old spelling of --window-ms)")
      ->check(CLI::Range(0.5, 3600.0))
      ->excludes(window_ms);
  sub->add_option("--overhead-budget", args->budget_percent,
                  "Percent of one CPU the probes may cost (estimated from their call rate); 0 turns the budget off")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option("--call-cost-ns", args->call_cost_ns,
                  "Cost of one traced call, instead of calibrating it at start-up");
  sub->add_option("--toggle-cost-ns", args->toggle_cost_ns,
                  "Cost to the ranks of detaching a probe and attaching it again, per rank, instead of the calibrated "
                  "wall time (50 ms with --call-cost-ns); duty cycles are used only where their toggles cost at most "
                  "10% of what they save");
  sub->add_flag("!--no-sampling", o.sampling,
                "Trap every call of every probe: no sampling of the collectives that follow another at once (they "
                "start synchronised and carry little of the straggler's signal)");
  sub->add_option("--probe", o.probe_patterns, "Probes to attach, glob allowed (default: all; see 'slowburn catalog')");
  add_pids(sub, o.pids, "Only these processes", "every rank process, re-discovered");
  add_duration(sub, o.duration_s, "run", "SIGTERM");
  add_node_source_options(sub, o.node);
  sub->add_option("--health-interval", o.health_interval_s,
                  "Seconds between evaluations of the `slowburn health` checklist, exported as "
                  "slowburn_health_check and logged when a check changes state (0: off)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  auto* detector = sub->add_option_group("detector", "Straggler detector (defaults and why: docs/detector.md)");
  detector->add_option("--z-threshold", o.detector.z_threshold, "Robust z of arrival lateness or compute gap")
      ->capture_default_str();
  detector->add_option("--persistence", args->persistence, "Flagged in M of the last N windows")->capture_default_str();
  detector
      ->add_option("--min-blame-share", o.detector.min_blame_share, "Effect-size floor: blame as a share of the window")
      ->capture_default_str();
  detector
      ->add_option("--min-cost", o.detector.session_cost_thresholds.min_cost_share,
                   "The slow burn: name a rank whose lateness costs its job this share of the traced time, over "
                   "the job's life on this node or its latest 10 minutes (minor under 0.1, major from there)")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  detector->add_flag("!--no-sequential", o.detector.sequential,
                     "Judge by the windows only (no per-instance sequential test: a strong straggler is then named "
                     "after M windows, not within an interval)");
  detector
      ->add_option("--hang-s", args->hang_s,
                   "A hang: ranks inside a collective this long while a rank of their job on this node is outside "
                   "every collective, stopped or gone (slowburn_hang_seconds names it)")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();

  return {sub, [args] {
            ProbeServiceOptions& o = args->options;
            if (auto ok = parse_persistence(args->persistence, o.detector); !ok) return fail(ok.error());
            o.detector.window_ns = args->window_ms > 0 ? static_cast<uint64_t>(args->window_ms * 1e6)
                                                       : static_cast<uint64_t>(args->window_s * 1e9);
            o.detector.hang_ns = static_cast<uint64_t>(args->hang_s * 1e9);
            o.overhead_budget = args->budget_percent / 100.0;
            o.log_max_bytes = static_cast<uint64_t>(args->log_max_mb * (1 << 20));
            if (args->call_cost_ns > 0) o.call_cost_ns = args->call_cost_ns;
            if (args->toggle_cost_ns > 0) o.toggle_cost_ns = args->toggle_cost_ns;
            o.log_dir = args->log_dir;
            const auto& stop = install_stop_handlers();
            struct sigaction action {};
            action.sa_handler = on_hangup;
            sigemptyset(&action.sa_mask);
            sigaction(SIGHUP, &action, nullptr);
            auto ran = run_probe_service(o, stop, g_reopen_log, std::cerr);
            return ran ? 0 : fail(ran.error());
          }};
}

}  // namespace slowburn::cli
