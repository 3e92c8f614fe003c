#include "service/overhead_budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace slowburn {

const char* probe_role_name(ProbeRole role) {
  switch (role) {
    case ProbeRole::signal:
      return "signal";
    case ProbeRole::redundant:
      return "sampled";
    case ProbeRole::unknown:
      break;
  }
  return "unknown";
}

// Roles from this interval's gaps, taken only when every probe that now
// carries the signal was on: with one of them off, the next probe's gap
// would include the compute and pass for a signal of its own.
void OverheadBudget::learn_roles(const std::map<std::string, ProbeReading>& readings) {
  for (const auto& [probe, s] : probes_)
    if (s.plan.role == ProbeRole::signal && !s.plan.on) return;
  for (const auto& [probe, r] : readings) {
    State& s = probes_[probe];
    if (s.plan.on && r.gap_ns && r.calls > 0) s.gap_ns = r.gap_ns;
  }
  double largest = 0;
  for (const auto& [probe, s] : probes_)
    if (s.synchronizing && s.gap_ns) largest = std::max(largest, *s.gap_ns);
  for (auto& [probe, s] : probes_) {
    if (!s.synchronizing) {
      s.plan.role = ProbeRole::unknown;
      continue;
    }
    if (!s.gap_ns) {  // not seen after a traced return yet: kept on until it is
      s.plan.role = ProbeRole::signal;
      continue;
    }
    bool follows_compute =
        largest < static_cast<double>(config_.min_compute_gap_ns) || *s.gap_ns >= config_.redundant_gap_share * largest;
    s.plan.role = follows_compute ? ProbeRole::signal : ProbeRole::redundant;
  }
}

// What a duty cycle's toggles cost, as a share of a CPU over its period.
double OverheadBudget::cycle_cost_ratio(const State& s, int on, int off, uint64_t interval_ns) const {
  if (off == 0) return 0;
  return 2 * config_.toggle_cost_ns * std::max(s.ranks, 1) / (static_cast<double>(on + off) * interval_ns);
}

bool OverheadBudget::cycle_pays(const State& s, int on, int off, uint64_t interval_ns) const {
  double saved = s.plan.full_ratio * off / (on + off);
  return saved > 0 && cycle_cost_ratio(s, on, off, interval_ns) <= config_.cycle_cost_share * saved;
}

std::pair<std::string, std::string> OverheadBudget::replan(uint64_t interval_ns) {
  const int w = std::max(config_.window_intervals, 1);
  auto cost = [&](const State& s) {
    return s.plan.full_ratio * s.plan.duty() +
           cycle_cost_ratio(s, s.plan.on_intervals, s.plan.off_intervals, interval_ns);
  };
  auto sample = [&](State& s, int period_windows) {
    int on = w, off = (period_windows - 1) * w;
    if (!cycle_pays(s, on, off, interval_ns)) return false;
    s.plan.on_intervals = on;
    s.plan.off_intervals = off;
    return true;
  };
  for (auto& [probe, s] : probes_) {
    s.plan.on_intervals = 1;
    s.plan.off_intervals = 0;
    if (config_.select && s.plan.role == ProbeRole::redundant) sample(s, config_.sample_period_windows);
  }
  double budget = config_.budget_ratio;
  auto total = [&] {
    double t = 0;
    for (const auto& [probe, s] : probes_) t += cost(s);
    return t;
  };
  if (budget <= 0 || total() <= budget) return {};

  // 1. The sampled probes (and those of no known role), sampled more rarely.
  for (auto& [probe, s] : probes_)
    if (s.plan.role != ProbeRole::signal) sample(s, config_.max_sample_period_windows);
  if (total() <= budget) return {};

  // 2. Of the signal probes, the cheapest keeps the verdict; the rest are sampled.
  std::vector<std::pair<double, std::string>> signal;
  for (const auto& [probe, s] : probes_)  // a probe that is never called costs nothing and keeps nothing
    if (s.plan.role == ProbeRole::signal && s.plan.full_ratio > 0) signal.emplace_back(s.plan.full_ratio, probe);
  std::sort(signal.begin(), signal.end());
  for (size_t i = 1; i < signal.size(); ++i) sample(probes_[signal[i].second], config_.max_sample_period_windows);
  if (signal.empty()) return {"none", "over budget with no probe that carries the signal left to cut"};
  if (total() <= budget) return {};

  // 3. The cheapest by a duty cycle: on a window at least, dark at most max_dark_windows.
  State& keeper = probes_[signal.front().second];
  double others = total() - cost(keeper);
  double duty = std::clamp((budget - others) / std::max(keeper.plan.full_ratio, 1e-12), 0.0, 1.0);
  int on = w;
  int off = duty > 0 ? static_cast<int>(std::ceil(on * (1 - duty) / duty)) : config_.max_dark_windows * w;
  off = std::min(off, config_.max_dark_windows * w);
  if (off > 0 && cycle_pays(keeper, on, off, interval_ns)) {
    keeper.plan.on_intervals = on;
    keeper.plan.off_intervals = off;
  }
  if (total() <= budget * 1.0001) return {};
  std::string key = signal.front().second + (keeper.plan.off_intervals ? " cycles" : " on");
  return {
      key,
      fmt::format(
          "{} carries the signal and {}: the probes cost ~{:.2f}% of a CPU against a budget of {:.2f}% (a budget may "
          "cost detail, never the verdict)",
          signal.front().second,
          keeper.plan.off_intervals ? fmt::format("stays on {:.0f}% of the time, no less", keeper.plan.duty() * 100)
                                    : std::string("stays on: no duty cycle of it pays for its own detaching"),
          total() * 100, budget * 100)};
}

BudgetDecision OverheadBudget::update(uint64_t interval_ns, const std::map<std::string, ProbeReading>& readings) {
  BudgetDecision d;
  if (interval_ns == 0) return d;
  for (const auto& [probe, r] : readings) {
    State& s = probes_[probe];
    if (r.ranks > 0) s.ranks = r.ranks;
    s.synchronizing = r.synchronizing;
    if (!s.plan.on) continue;  // its counts are from before the detach
    double ratio = static_cast<double>(r.calls) * config_.call_cost_ns / static_cast<double>(interval_ns);
    d.probe_ratio[probe] = ratio;
    d.estimated_ratio += ratio;
    s.plan.full_ratio = ratio;
  }
  std::map<std::string, ProbePlan> before;
  for (const auto& [probe, s] : probes_) before[probe] = s.plan;
  learn_roles(readings);
  auto [key, note] = replan(interval_ns);
  if (key != last_note_ && !note.empty()) d.messages.push_back(note);
  last_note_ = key;

  // Phases run down. A probe that starts cycling starts on (it is); one
  // whose cycle only changed length keeps its phase, so a rate that moves a
  // little never forces a toggle.
  for (auto& [probe, s] : probes_) {
    const ProbePlan& was = before[probe];
    bool cycling = s.plan.off_intervals > 0, was_cycling = was.off_intervals > 0;
    if (cycling != was_cycling || (cycling && was.role != s.plan.role))
      d.messages.push_back(
          !cycling
              ? fmt::format("{} ({}): always on", probe, probe_role_name(s.plan.role))
              : fmt::format("{} ({}): on {} of every {} intervals ({:.0f}%), ~{:.2f}% of a CPU while on", probe,
                            probe_role_name(s.plan.role), s.plan.on_intervals,
                            s.plan.on_intervals + s.plan.off_intervals, s.plan.duty() * 100, s.plan.full_ratio * 100));
    bool on = s.plan.on;
    if (!cycling) {
      on = true;
    } else if (!was_cycling) {
      s.phase_left = s.plan.on_intervals;
    } else if (--s.phase_left <= 0) {
      on = !on;
      s.phase_left = on ? s.plan.on_intervals : s.plan.off_intervals;
    } else {
      s.phase_left = std::min(s.phase_left, on ? s.plan.on_intervals : s.plan.off_intervals);
    }
    if (on != s.plan.on) {
      (on ? d.restore : d.throttle).push_back(probe);
      if (!on) s.throttles += 1;
    }
    s.plan.on = on;
  }
  plans_.clear();
  for (const auto& [probe, s] : probes_) {
    plans_[probe] = s.plan;
    d.planned_ratio +=
        s.plan.full_ratio * s.plan.duty() + cycle_cost_ratio(s, s.plan.on_intervals, s.plan.off_intervals, interval_ns);
  }
  return d;
}

bool OverheadBudget::throttled(const std::string& probe) const {
  auto it = probes_.find(probe);
  return it != probes_.end() && !it->second.plan.on;
}

uint64_t OverheadBudget::throttle_count(const std::string& probe) const {
  auto it = probes_.find(probe);
  return it == probes_.end() ? 0 : it->second.throttles;
}

}  // namespace slowburn
