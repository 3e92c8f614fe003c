// Clock-free blame, and what it says of the clocks that placed the calls.
// The last rank to arrive at a synchronizing collective waits least: all its
// ranks leave together, so wait = release - entry, and differences of wait
// are differences of arrival on no clock at all. "Release" is the earliest
// exit of the rank's own node in the instance (one clock within a node), so
// a rank the algorithm lets out early does not look late. Per instance the
// rank that waited least is blamed for how much less than the runner-up it waited
// (the clock-free twin of "last arrival - second-to-last"), and the instance
// agrees with the clocks when that rank is also the last to arrive on them.
//
// analyze puts every node's calls on the reference clock with estimated
// offsets; this check says whether the waits back that up. Instances whose
// ranks all ran on one node test nothing about the merge (one clock) and are
// left out. Pure: fed instances and each rank's node, no files.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "detect/aligner.h"

namespace slowburn {

struct ClockFreeRank {
  RankIdentity identity;
  uint64_t instances = 0;        // cross-node instances it took part in
  uint64_t least_waits = 0;      // in which it waited least
  double blame_by_wait_ns = 0;   // (runner-up's wait - its wait) where it waited least
  double blame_by_clock_ns = 0;  // (its entry - runner-up's entry) where it arrived last on the merged clocks
};

struct ClockCheck {
  uint64_t instances = 0;  // cross-node instances of synchronizing collectives
  uint64_t agreed = 0;     // the least-waiting rank arrived last on the merged clocks
  // Of all clock-free blame, the part in instances that agreed: near-ties
  // (healthy ranks arriving together) disagree at random and weigh little.
  double agreed_blame_share = 0;
  double traced_ns = 0;
  std::vector<ClockFreeRank> ranks;     // most clock-free blame first
  std::optional<RankIdentity> culprit;  // the rank clock-free blame names (its share >= the floor)
  double culprit_blame_share = 0;       // its clock-free blame over the traced time
  bool disagrees = false;               // over these instances one side charges a rank >= the floor, the other < half
  std::string summary;                  // one line for a person
};

class ClockCheckBuilder {
 public:
  // `min_blame_share`: the effect-size floor a culprit needs (the detector's).
  explicit ClockCheckBuilder(double min_blame_share = 0.10) : min_blame_share_(min_blame_share) {}

  void add_rank(const RankIdentity& identity) { identities_[identity.pid] = identity; }
  // One aligned instance of a synchronizing collective (calls on the merged clock).
  void add(const CollectiveInstance& instance);
  // `traced_ns`: what the blame shares are of.
  ClockCheck finish(double traced_ns) const;

 private:
  double min_blame_share_;
  std::map<int32_t, RankIdentity> identities_;
  std::map<int32_t, ClockFreeRank> ranks_;
  uint64_t instances_ = 0;
  uint64_t agreed_ = 0;
  double blame_ns_ = 0;
  double agreed_blame_ns_ = 0;
};

}  // namespace slowburn
