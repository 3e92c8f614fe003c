#include "service/budget_keeper.h"

#include <algorithm>
#include <set>

namespace slowburn {

BudgetKeeper::BudgetKeeper(std::vector<const ProbeSpec*> probes, BudgetConfig config)
    : probes_(std::move(probes)), budget_(config) {
  for (const ProbeSpec* spec : probes_) names_[spec->id] = spec->name;
}

const std::string& BudgetKeeper::name_of(uint32_t probe_id) const {
  static const std::string kUnknown = "?";
  auto it = names_.find(probe_id);
  return it == names_.end() ? kUnknown : it->second;
}

void BudgetKeeper::count_calls(uint32_t probe_id, uint64_t calls) { calls_total_[name_of(probe_id)] += calls; }

std::map<std::string, ProbeReading> BudgetKeeper::readings(const std::vector<AggStats>& stats,
                                                           const std::vector<AggCounts>& deltas) {
  std::map<std::string, ProbeReading> out;
  std::map<std::string, std::vector<double>> gaps;  // each rank's (and communicator's) mean compute gap
  std::map<std::string, std::set<uint32_t>> ranks;
  for (size_t i = 0; i < stats.size(); ++i) {
    const std::string& name = name_of(stats[i].probe_id);
    out[name].calls += deltas[i].calls;
    if (deltas[i].gaps)
      gaps[name].push_back(static_cast<double>(deltas[i].gap_ns) / static_cast<double>(deltas[i].gaps));
    if (deltas[i].calls) ranks[name].insert(stats[i].tgid);
  }
  for (const ProbeSpec* spec : probes_) {
    ProbeReading& r = out[spec->name];
    r.synchronizing = spec->kind == CallKind::synchronizing;
    r.ranks = static_cast<int>(ranks[spec->name].size());
    if (auto it = gaps.find(spec->name); it != gaps.end()) {
      std::vector<double>& g = it->second;
      std::nth_element(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(g.size() / 2), g.end());
      r.gap_ns = g[g.size() / 2];
    }
  }
  return out;
}

BudgetOutcome BudgetKeeper::update(uint64_t interval_ns, const std::vector<AggStats>& stats,
                                   const std::vector<AggCounts>& deltas) {
  std::map<std::string, uint64_t> calls;  // the probes that counted anything, even 0 calls
  for (size_t i = 0; i < stats.size(); ++i) calls[name_of(stats[i].probe_id)] += deltas[i].calls;
  for (const auto& [name, n] : calls) calls_total_[name] += n;
  cpu_ratio_.clear();
  BudgetOutcome out;
  if (interval_ns == 0) return out;
  const BudgetConfig& c = budget_.config();
  if (c.budget_ratio <= 0 && !c.select) {
    estimated_ratio_ = 0;
    for (const auto& [probe, n] : calls) {
      double ratio = static_cast<double>(n) * c.call_cost_ns / static_cast<double>(interval_ns);
      cpu_ratio_[probe] = ratio;
      estimated_ratio_ += ratio;
    }
    return out;
  }
  BudgetDecision d = budget_.update(interval_ns, readings(stats, deltas));
  estimated_ratio_ = d.estimated_ratio;
  cpu_ratio_ = d.probe_ratio;
  out.notes = d.messages;
  out.throttle = d.throttle;
  out.restore = d.restore;
  out.estimated_ratio = d.estimated_ratio;
  return out;
}

std::map<std::string, uint64_t> BudgetKeeper::throttles_total() const {
  std::map<std::string, uint64_t> out;
  for (const ProbeSpec* spec : probes_)
    if (uint64_t n = budget_.throttle_count(spec->name)) out[spec->name] = n;
  return out;
}

std::map<std::string, std::pair<std::string, double>> BudgetKeeper::duty() const {
  std::map<std::string, std::pair<std::string, double>> out;
  for (const auto& [probe, plan] : budget_.plans()) out[probe] = {probe_role_name(plan.role), plan.duty()};
  return out;
}

bool BudgetKeeper::sampled(const std::string& probe) const {
  auto plan = budget_.plans().find(probe);
  return plan != budget_.plans().end() && plan->second.role == ProbeRole::redundant && budget_.config().select;
}

}  // namespace slowburn
