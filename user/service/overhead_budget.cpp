#include "service/overhead_budget.h"

#include <fmt/format.h>

#include <algorithm>

namespace slowburn {

BudgetDecision OverheadBudget::update(uint64_t interval_ns, const std::map<std::string, uint64_t>& calls) {
  BudgetDecision d;
  if (interval_ns == 0) return d;
  for (const auto& [probe, n] : calls) {
    ProbeBudget& p = probes_[probe];
    if (p.throttled) continue;  // its counts are from before the detach
    double ratio = static_cast<double>(n) * config_.call_cost_ns / static_cast<double>(interval_ns);
    d.probe_ratio[probe] = ratio;
    d.estimated_ratio += ratio;
  }
  bool over = d.estimated_ratio > config_.budget_ratio;

  // Off periods run down.
  std::vector<std::string> due;
  for (auto& [probe, p] : probes_)
    if (p.throttled && --p.remaining <= 0) due.push_back(probe);

  if (over) {
    std::vector<std::pair<double, std::string>> by_cost;
    for (const auto& [probe, ratio] : d.probe_ratio) by_cost.emplace_back(ratio, probe);
    std::sort(by_cost.rbegin(), by_cost.rend());
    double remaining = d.estimated_ratio;
    for (const auto& [ratio, probe] : by_cost) {
      if (remaining <= config_.budget_ratio || ratio <= 0) break;
      ProbeBudget& p = probes_[probe];
      p.off_intervals =
          p.off_intervals == 0 ? config_.first_off_intervals : std::min(p.off_intervals * 2, config_.max_off_intervals);
      p.remaining = p.off_intervals;
      p.calm_intervals = 0;
      p.throttled = true;
      p.throttles += 1;
      remaining -= ratio;
      d.throttle.push_back(probe);
      d.messages.push_back(fmt::format(
          "{}: estimated {:.2f}% of a CPU (probes in all {:.2f}%, budget {:.2f}%): detached for {} intervals", probe,
          ratio * 100, d.estimated_ratio * 100, config_.budget_ratio * 100, p.off_intervals));
    }
  } else {
    // A probe that stays on for twice its last off period without tripping
    // earns a fresh start (its rate really fell). Sooner would let two probes
    // that only fit one at a time trade places forever at the shortest period.
    for (auto& [probe, p] : probes_) {
      if (p.throttled || !d.probe_ratio.contains(probe) || p.off_intervals == 0) continue;
      if (++p.calm_intervals >= 2 * p.off_intervals) p.off_intervals = 0;
    }
  }

  // One probe comes back at a time, and only into an interval that is under
  // budget and follows no other return: a returning probe is measured for a
  // whole interval before the next may join it, so two returns can never make
  // two intervals in a row over budget.
  bool restoring = !over && !restored_last_interval_ && !due.empty();
  restored_last_interval_ = restoring;
  if (restoring) {
    ProbeBudget& p = probes_[due.front()];
    p.throttled = false;
    d.restore.push_back(due.front());
    d.messages.push_back(
        fmt::format("{}: attached again after {} intervals off, to measure its rate", due.front(), p.off_intervals));
  }
  return d;
}

bool OverheadBudget::throttled(const std::string& probe) const {
  auto it = probes_.find(probe);
  return it != probes_.end() && it->second.throttled;
}

uint64_t OverheadBudget::throttle_count(const std::string& probe) const {
  auto it = probes_.find(probe);
  return it == probes_.end() ? 0 : it->second.throttles;
}

}  // namespace slowburn
