// Everything `slowburn probe` shows, gathered from its parts into one
// MetricsView (service/probe_metrics.h renders it): what the kernel counted
// per rank, the last window, the standing findings, the probes' states and
// duty, the budget's estimate, the node's sources and the health rows.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "detect/report.h"
#include "engine/node_sources.h"
#include "service/budget_keeper.h"
#include "service/event_log.h"
#include "service/hang_watch.h"
#include "service/health_watch.h"
#include "service/probe_metrics.h"
#include "service/rank_tracker.h"
#include "service/service_comms.h"

namespace slowburn {

// What accumulates over the service's life for the metrics (the rest of the
// view is read fresh every interval).
struct ServiceTotals {
  std::map<std::tuple<std::string, int, std::string>, uint64_t> findings;  // (job, rank, type)
  std::map<std::tuple<std::string, std::string, std::string, std::string>, uint64_t> device_events;
};

struct ServiceParts {
  std::string node;
  std::string version;
  double start_time_seconds = 0;
  const BudgetKeeper* budget = nullptr;
  const RankTracker* tracker = nullptr;
  const ServiceComms* comms = nullptr;
  const CollaggProgram* program = nullptr;
  const NodeSources* sources = nullptr;  // null: hardware events off
  EventLog* log = nullptr;               // null: no event log
  const HealthWatch* health = nullptr;
  const std::vector<WindowReport>* windows = nullptr;  // the last closed window's
  const ServiceTotals* totals = nullptr;
  const HangWatch* hangs = nullptr;
};

// `active_findings`: the standing ones, explained as of now. `self` is left
// for whoever renders the page (it reads the service's own CPU then).
MetricsView gather_metrics(const ServiceParts& parts, const std::vector<AggStats>& stats,
                           std::map<int32_t, Finding> active_findings);

}  // namespace slowburn
