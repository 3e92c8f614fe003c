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

  // Off periods run down; a probe whose period ended comes back to be measured.
  for (auto& [probe, p] : probes_) {
    if (!p.throttled || --p.remaining > 0) continue;
    p.throttled = false;

    d.restore.push_back(probe);
    d.messages.push_back(
        fmt::format("{}: attached again after {} intervals off, to measure its rate", probe, p.off_intervals));
  }

  if (d.estimated_ratio <= config_.budget_ratio) {
    // Under budget: a probe that stays on for twice its last off period
    // without tripping earns a fresh start (its rate really fell). Sooner
    // would let two probes that only fit one at a time trade places forever
    // at the shortest period.
    for (auto& [probe, p] : probes_) {
      if (p.throttled || !d.probe_ratio.contains(probe) || p.off_intervals == 0) continue;
      if (++p.calm_intervals >= 2 * p.off_intervals) p.off_intervals = 0;
    }
    return d;
  }
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
    d.messages.push_back(
        fmt::format("{}: estimated {:.2f}% of a CPU (probes in all {:.2f}%, budget {:.2f}%): detached for {} intervals",
                    probe, ratio * 100, d.estimated_ratio * 100, config_.budget_ratio * 100, p.off_intervals));
  }
  // A probe restored this interval may not have run a whole interval yet: it
  // stays on and is judged by its next one.
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
