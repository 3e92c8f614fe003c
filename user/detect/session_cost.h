// The slow burn: a rank that costs the job a few percent, every step, for
// the whole session. Per window it is lost in the peers' noise (its blame a
// few percent of a window, under the window rule's 10% floor); summed over
// the session it is not. Judged on one lane's session totals: the rank
// whose own lateness (what its longer compute explains, not leaving its
// previous collective late: that is the scheduler's, and the inside and
// window tests' business) costs the job at least min_cost_share of the
// traced time, alone (uniqueness x the next rank's), and who arrives last
// far more often than chance (a binomial z against 1/members). The cost,
// not the ordering, decides: a rank that is last in every step by a hair
// costs nothing and is not named. Pure: totals in, judgement out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace slowburn {

struct SessionCostThresholds {
  double min_cost_share = 0.01;    // of the traced time (--min-cost)
  double major_cost_share = 0.10;  // at or above: "major", below: "minor"
  double uniqueness = 2.0;         // its cost against the next rank's
  double min_last_z = 5.0;         // lasts against 1/members, in standard deviations
  uint64_t min_instances = 200;
};

// One rank's session on one lane.
struct LaneRankTotals {
  uint64_t lasts = 0;             // instances it arrived last in
  uint64_t blame_ns = 0;          // its self-caused lead over the runner-up, summed
  uint64_t blame_leaving_ns = 0;  // of that: from leaving its previous collective late
  uint64_t own_ns() const { return blame_ns > blame_leaving_ns ? blame_ns - blame_leaving_ns : 0; }
};

struct SessionCostJudgement {
  int32_t pid = 0;
  uint64_t cost_ns = 0;        // its own lateness, summed: how much sooner the collectives would have started
  double cost_share = 0;       // of the traced time
  double next_cost_share = 0;  // the runner-up's
  double last_fraction = 0;
  double expected_last_fraction = 0;  // 1 / members
  double last_z = 0;
  uint64_t lasts = 0;
  uint64_t instances = 0;
};

// The lane's rank that costs the job, when every test holds.
std::optional<SessionCostJudgement> judge_session_cost(const std::map<int32_t, LaneRankTotals>& ranks,
                                                       uint64_t instances, size_t members, uint64_t traced_ns,
                                                       const SessionCostThresholds& thresholds = {});

// "minor" below major_cost_share of the traced time, "major" from there.
std::string severity_of(double cost_share, const SessionCostThresholds& thresholds = {});

}  // namespace slowburn
