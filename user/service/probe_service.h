// `slowburn probe`: the continuous, low-overhead mode. Every interval it
// re-discovers the node's rank processes (attaching the aggregation probes
// to new ones, dropping exited ones), reads the kernel's cumulative sums,
// keeps the probes inside the overhead budget, and every window runs the
// straggler detector on the differences. Hardware and fabric events are
// counted and joined to findings as causes. Output: a Prometheus endpoint,
// a rotating JSON-lines event log, and on SIGTERM the final metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "detect/straggler.h"
#include "engine/node_sources.h"

namespace slowburn {

struct ProbeServiceOptions {
  std::string listen = "127.0.0.1:9464";  // empty: no endpoint
  std::filesystem::path log_dir;          // empty: no event log
  // The slow burn's baselines across a restart (service/probe_state.h); empty: none kept.
  std::filesystem::path state_file;
  uint64_t log_max_bytes = 64ull << 20;
  int log_keep = 5;
  bool log_windows = false;              // every window's per-rank statistics into the log (verbose)
  double interval_s = 1.0;               // discovery, budget and metrics period
  double window_s = 5.0;                 // detector window
  double overhead_budget = 0.01;         // share of one CPU; 0: no budget
  std::optional<double> call_cost_ns;    // skip the calibration
  std::optional<double> toggle_cost_ns;  // a duty cycle's toggle, instead of the calibrated (or assumed) one
  // Signal-aware selection (service/overhead_budget.h): the collectives
  // issued right after another (already synchronised) are sampled on a
  // duty cycle; false traps every call of every probe.
  bool sampling = true;
  std::vector<std::string> probe_patterns;
  std::vector<int32_t> pids;  // empty: every rank process on the node
  // The node's sources (engine/node_sources.h), as trace has them: hardware
  // and fabric events and the host's side of each rank, joined to findings as
  // causes and counted in slowburn_device_events_total. The ECC/EDAC/MCE
  // activity comes from the health checklist (health_interval_s).
  NodeSourcesOptions node;
  double duration_s = 0;  // 0: until SIGTERM/SIGINT
  // Seconds between evaluations of the health checklist (health/health_checks.h,
  // the counters' rise measured over that period); 0: off.
  double health_interval_s = 60;
  DetectorConfig detector = probe_detector_defaults();

  // Windows of seconds, not half-seconds: a service looks at minutes.
  static DetectorConfig probe_detector_defaults();
};

// Runs until `stop`; `reopen_log` (SIGHUP) is cleared when the log has been
// reopened. Status lines go to `console` (the journal under systemd).
Result<void> run_probe_service(const ProbeServiceOptions& options, const std::atomic<bool>& stop,
                               std::atomic<bool>& reopen_log, std::ostream& console);

}  // namespace slowburn
