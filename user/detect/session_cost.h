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
// costs nothing and is not named. Where every member of the lane waits for
// a CPU (more runnable threads than CPUs: the scheduler decides who is
// last), a minor cost is not the rank's own unless it waits for a CPU
// more than its peers: the judgement says so, and the verdict withholds
// the name. Pure: totals in, judgement out.
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
  // A busy lane: its members' median time inside their calls runnable but
  // off a CPU. A minor cost there is the scheduler's unless the rank waits
  // this much more of it than its peers (the inside test's and host
  // causes' excess, detect/inside.h).
  double busy_runq_share = 0.2;
  double runq_excess_share = 0.1;
};

// One rank's session on one lane.
struct LaneRankTotals {
  uint64_t lasts = 0;             // instances it arrived last in
  uint64_t blame_ns = 0;          // its self-caused lead over the runner-up, summed
  uint64_t blame_leaving_ns = 0;  // of that: from leaving its previous collective late
  // Its calls on the lane: time inside, and of that runnable but off a
  // CPU (unset where the kernel keeps no run-queue waits).
  uint64_t inside_ns = 0;
  std::optional<uint64_t> runq_ns;
  uint64_t own_ns() const { return blame_ns > blame_leaving_ns ? blame_ns - blame_leaving_ns : 0; }
  std::optional<double> runq_share() const;
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
  std::optional<double> runq_share;        // its time inside waiting for a CPU
  std::optional<double> peers_runq_share;  // the other members' median
  // Every test holds, but the cost is minor and every member waits for a
  // CPU about as much as it does: not named (the verdict's withheld).
  bool scheduler_noise = false;
};

// A rank's time inside its calls on a lane runnable but off a CPU, and its
// peers' median (unset where the kernel keeps no run-queue waits).
struct RunqShares {
  std::optional<double> rank;
  std::optional<double> peers;
};
RunqShares runq_shares(const std::map<int32_t, LaneRankTotals>& ranks, int32_t pid);

// Whether a cost of cost_share is the scheduler's choice: minor, on a lane
// whose members all wait for a CPU (busy_runq_share), the rank not waiting
// runq_excess_share more than they do. Shared by the slow burn and the
// verdict's other straggler rules (a victim late in bursts on a busy node).
bool schedulers_choice(const RunqShares& shares, double cost_share, const SessionCostThresholds& thresholds = {});

// The lane's rank that costs the job, when every test holds.
std::optional<SessionCostJudgement> judge_session_cost(const std::map<int32_t, LaneRankTotals>& ranks,
                                                       uint64_t instances, size_t members, uint64_t traced_ns,
                                                       const SessionCostThresholds& thresholds = {});

// A lane's session totals at one moment: the latest stretch of a session
// is its totals now less an earlier snapshot's.
struct LaneSnapshot {
  uint64_t at_ns = 0;
  uint64_t traced_ns = 0;
  uint64_t instances = 0;
  std::map<int32_t, LaneRankTotals> ranks;
};

// What happened between `before` and `now` (ranks that were not in
// `before` count from zero).
LaneSnapshot totals_since(const LaneSnapshot& now, const LaneSnapshot& before);

// "minor" below major_cost_share of the traced time, "major" from there.
std::string severity_of(double cost_share, const SessionCostThresholds& thresholds = {});

}  // namespace slowburn
