// The checklist as `slowburn health` runs it: the counters read once, the
// topology and the node's ranks mapped, the interval waited, the second
// reading, both evaluated. One owner for the CLI and slowburn mcp's health
// tool.
#pragma once

#include <optional>
#include <vector>

#include "core/error.h"
#include "health/check_row.h"
#include "health/health_snapshot.h"
#include "pcie/link.h"

namespace slowburn {

struct HealthRunOptions {
  HealthSources sources;
  double interval_s = 1.0;                  // between the two readings; 0: one reading, no trends
  std::vector<ExpectationRule> link_rules;  // --expect
  std::optional<double> nic_speed_gbps;     // --nic-speed
};

// An error only when a source root itself cannot be read (the collector's
// errors); every unreadable check is a row in state unavailable.
Result<std::vector<CheckRow>> run_health_checklist(const HealthRunOptions& options);

}  // namespace slowburn
