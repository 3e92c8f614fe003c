// The overhead budget at work in the service: every interval, the calls
// each probe took and what they cost (the calibrated cost of a call and of
// a toggle), which probes the budget (service/overhead_budget.h) throttles
// or restores, and the totals the metrics show.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "events/agg_counts.h"
#include "loader/collagg_program.h"
#include "probes/catalog.h"
#include "service/overhead_budget.h"

namespace slowburn {

// What one interval changed.
struct BudgetOutcome {
  std::vector<std::string> notes;
  std::vector<std::string> throttle, restore;  // probes to detach, and to attach again
  double estimated_ratio = 0;
};

class BudgetKeeper {
 public:
  // budget_ratio 0 and no selection: every call is traced, only counted.
  BudgetKeeper(std::vector<const ProbeSpec*> probes, BudgetConfig config);

  // One interval's calls (stats and their deltas, in the same order).
  BudgetOutcome update(uint64_t interval_ns, const std::vector<AggStats>& stats, const std::vector<AggCounts>& deltas);
  // An ended rank's calls since the last interval still count.
  void count_calls(uint32_t probe_id, uint64_t calls);

  const std::string& name_of(uint32_t probe_id) const;
  const std::map<uint32_t, std::string>& probe_names() const { return names_; }
  const BudgetConfig& config() const { return budget_.config(); }
  // The metrics: calls and throttles so far, the last interval's CPU share per probe.
  const std::map<std::string, uint64_t>& calls_total() const { return calls_total_; }
  std::map<std::string, uint64_t> throttles_total() const;
  const std::map<std::string, double>& cpu_ratio() const { return cpu_ratio_; }
  double estimated_cpu_ratio() const { return estimated_ratio_; }
  // probe -> (role, duty): where the plan samples a probe.
  std::map<std::string, std::pair<std::string, double>> duty() const;
  // Sampled, not throttled: a redundant probe on its duty cycle.
  bool sampled(const std::string& probe) const;

 private:
  std::map<std::string, ProbeReading> readings(const std::vector<AggStats>& stats,
                                               const std::vector<AggCounts>& deltas);

  std::vector<const ProbeSpec*> probes_;
  std::map<uint32_t, std::string> names_;
  OverheadBudget budget_;
  std::map<std::string, uint64_t> calls_total_;
  std::map<std::string, double> cpu_ratio_;  // last interval
  double estimated_ratio_ = 0;
};

}  // namespace slowburn
