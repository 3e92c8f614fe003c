// The probe mode's circuit breaker. Every probe's cost is estimated as its
// call rate times a per-call cost calibrated on this machine at start-up
// (a call is an entry and a return: two uprobe hits and the programs). When
// the estimate passes the budget, the most expensive probes are detached
// until what remains fits; a detached probe comes back after an off period
// to measure its rate again, and the period doubles each time it trips again
// on its return (duty-cycling), up to max_off_intervals. Probes come back
// one at a time, into an interval under budget: the budget is exceeded at
// most for the interval that measured it, never two in a row. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace slowburn {

struct BudgetConfig {
  double budget_ratio = 0.01;  // of one CPU
  double call_cost_ns = 0;     // calibrated
  int first_off_intervals = 2;
  int max_off_intervals = 64;
};

struct BudgetDecision {
  double estimated_ratio = 0;                 // all attached probes, this interval
  std::map<std::string, double> probe_ratio;  // per probe, this interval
  std::vector<std::string> throttle;          // detach now
  std::vector<std::string> restore;           // attach again now
  std::vector<std::string> messages;          // what was done and why, for the log
};

class OverheadBudget {
 public:
  explicit OverheadBudget(BudgetConfig config) : config_(config) {}

  // calls: per probe, calls completed during the interval by attached probes.
  BudgetDecision update(uint64_t interval_ns, const std::map<std::string, uint64_t>& calls);

  bool throttled(const std::string& probe) const;
  uint64_t throttle_count(const std::string& probe) const;
  const BudgetConfig& config() const { return config_; }

 private:
  struct ProbeBudget {
    bool throttled = false;
    int off_intervals = 0;   // current off period
    int remaining = 0;       // intervals left off
    int calm_intervals = 0;  // on and under budget since it last came back

    uint64_t throttles = 0;
  };
  BudgetConfig config_;
  std::map<std::string, ProbeBudget> probes_;
  bool restored_last_interval_ = false;
};

}  // namespace slowburn
