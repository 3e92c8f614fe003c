#include "detect/session_cost.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "stats/robust.h"

namespace slowburn {

std::optional<SessionCostJudgement> judge_session_cost(const std::map<int32_t, LaneRankTotals>& ranks,
                                                       uint64_t instances, size_t members, uint64_t traced_ns,
                                                       const SessionCostThresholds& t) {
  if (members < 2 || instances < t.min_instances || traced_ns == 0) return std::nullopt;
  const std::pair<const int32_t, LaneRankTotals>* worst = nullptr;
  uint64_t next_ns = 0;
  for (const auto& entry : ranks) {
    uint64_t own = entry.second.own_ns();
    if (!worst || own > worst->second.own_ns()) {
      if (worst) next_ns = std::max(next_ns, worst->second.own_ns());
      worst = &entry;
    } else {
      next_ns = std::max(next_ns, own);
    }
  }
  if (!worst) return std::nullopt;
  SessionCostJudgement j;
  j.pid = worst->first;
  j.cost_ns = worst->second.own_ns();
  j.cost_share = static_cast<double>(j.cost_ns) / static_cast<double>(traced_ns);
  j.next_cost_share = static_cast<double>(next_ns) / static_cast<double>(traced_ns);
  j.lasts = worst->second.lasts;
  j.instances = instances;
  j.last_fraction = static_cast<double>(j.lasts) / static_cast<double>(instances);
  j.expected_last_fraction = 1.0 / static_cast<double>(members);
  double p = j.expected_last_fraction;
  j.last_z = (static_cast<double>(j.lasts) - static_cast<double>(instances) * p) /
             std::sqrt(static_cast<double>(instances) * p * (1 - p));
  bool costs = j.cost_share >= t.min_cost_share;
  bool alone = static_cast<double>(j.cost_ns) >= t.uniqueness * static_cast<double>(next_ns);
  bool beyond_chance = j.last_z >= t.min_last_z;
  if (!costs || !alone || !beyond_chance) return std::nullopt;
  RunqShares shares = runq_shares(ranks, j.pid);
  j.runq_share = shares.rank;
  j.peers_runq_share = shares.peers;
  j.scheduler_noise = schedulers_choice(shares, j.cost_share, t);
  return j;
}

RunqShares runq_shares(const std::map<int32_t, LaneRankTotals>& ranks, int32_t pid) {
  RunqShares s;
  std::vector<double> peers;
  for (const auto& [other, totals] : ranks) {
    if (other == pid)
      s.rank = totals.runq_share();
    else if (auto share = totals.runq_share())
      peers.push_back(*share);
  }
  if (!peers.empty()) s.peers = median(peers);
  return s;
}

bool schedulers_choice(const RunqShares& s, double cost_share, const SessionCostThresholds& t) {
  return cost_share < t.major_cost_share && s.rank && s.peers && *s.peers >= t.busy_runq_share &&
         *s.rank - *s.peers < t.runq_excess_share;
}

std::optional<double> LaneRankTotals::runq_share() const {
  if (!runq_ns || inside_ns == 0) return std::nullopt;
  return static_cast<double>(std::min(*runq_ns, inside_ns)) / static_cast<double>(inside_ns);
}

LaneSnapshot totals_since(const LaneSnapshot& now, const LaneSnapshot& before) {
  LaneSnapshot d;
  d.at_ns = now.at_ns;
  auto less = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
  d.traced_ns = less(now.traced_ns, before.traced_ns);
  d.instances = less(now.instances, before.instances);
  for (const auto& [pid, t] : now.ranks) {
    LaneRankTotals r = t;
    if (auto b = before.ranks.find(pid); b != before.ranks.end()) {
      r.lasts = less(t.lasts, b->second.lasts);
      r.blame_ns = less(t.blame_ns, b->second.blame_ns);
      r.blame_leaving_ns = less(t.blame_leaving_ns, b->second.blame_leaving_ns);
      r.inside_ns = less(t.inside_ns, b->second.inside_ns);
      // Run-queue times only where both ends kept them (else the share
      // would set a whole session's waits against a stretch's time inside).
      r.runq_ns = t.runq_ns && b->second.runq_ns ? std::optional(less(*t.runq_ns, *b->second.runq_ns)) : std::nullopt;
    }
    d.ranks[pid] = r;
  }
  return d;
}

std::string severity_of(double cost_share, const SessionCostThresholds& t) {
  return cost_share >= t.major_cost_share ? "major" : "minor";
}

}  // namespace slowburn
