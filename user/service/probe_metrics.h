// What `slowburn probe` exports, as Prometheus text: the service gathers a
// MetricsView every interval; render_metrics spells it. Names follow the
// Prometheus conventions (slowburn_ prefix, base units, _total counters);
// per-rank series carry job, rank, local_rank, node and probe labels.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/rank_identity.h"
#include "detect/report.h"
#include "health/check_row.h"
#include "loader/collagg_program.h"
#include "service/hang_watch.h"
#include "service/metrics_endpoint.h"
#include "service/self_stats.h"

namespace slowburn {

// One rank's cumulative sums on one probe and communicator.
struct RankSeries {
  RankIdentity identity;
  AggStats stats;
  CommunicatorRef comm;  // null: not told apart
};

struct MetricsView {
  std::string node;
  std::string version;
  std::map<uint32_t, std::string> probe_names;
  std::vector<RankSeries> rank_stats;                                            // cumulative, live ranks
  std::vector<WindowReport> windows;                                             // the last closed window
  std::map<int32_t, Finding> active_findings;                                    // by culprit pid
  std::map<std::tuple<std::string, int, std::string>, uint64_t> findings_total;  // (job, rank, type)
  // (type, device, role, severity)
  std::map<std::tuple<std::string, std::string, std::string, std::string>, uint64_t> device_events_total;
  std::map<std::string, std::pair<int, int>> jobs;  // job -> (world size, ranks here)
  std::map<std::string, std::string> probe_states;  // probe -> attached, unavailable, failed, throttled, sampled
  // probe -> (role: signal, sampled, unknown; share of intervals attached under the plan)
  std::map<std::string, std::pair<std::string, double>> probe_duty;
  std::map<std::string, uint64_t> probe_calls_total;
  std::map<std::string, uint64_t> probe_throttles_total;
  std::map<std::string, double> probe_cpu_ratio;
  double estimated_cpu_ratio = 0;
  double budget_ratio = 0;
  double call_cost_ns = 0;
  double toggle_cost_ns = 0;
  std::map<std::string, uint64_t> ringbuf_drops_total;  // by program
  uint64_t decode_errors_total = 0;
  uint64_t kernel_orphan_returns = 0;
  uint64_t kernel_stats_full = 0;
  uint64_t kernel_unplaced_returns = 0;  // returns no instance could take: not in lateness or blame
  uint64_t kernel_open_races = 0;        // arrivals that may have been lost to a concurrent open
  uint64_t log_lines_total = 0;
  uint64_t log_rotations_total = 0;
  uint64_t log_errors_total = 0;
  SelfStats self;
  std::optional<EndpointStats> endpoint;  // none: no --listen
  double start_time_seconds = 0;
  std::vector<CheckRow> health;                 // the latest evaluation of the health checklist
  std::vector<RankHang> hangs;                  // the ranks named as stopping their job now
  std::map<std::string, double> job_waiting_s;  // job -> its longest wait inside a collective now
};

std::string render_metrics(const MetricsView& view);

}  // namespace slowburn
