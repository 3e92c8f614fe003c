// Which instance is which, from causality rather than from how well the
// differences agree. A synchronizing collective (allreduce, allgather,
// barrier) lets no rank out before its last rank came in, so on the right
// merged clock every exit of an instance, on any node, falls after every
// entry of it on any node. A node's exits may be late (a rank descheduled
// at the release leaves when it gets a CPU back) and that only loosens the
// bound; its entries are exact (the probe fires on the CPU that makes the
// call). So the right matching of two nodes' instances always admits some
// offset, whatever the nodes' load, while one instance off asks the offset
// to fall between bounds a step apart that cross wherever the steps vary
// more than the waits.
//
// Judged per chunk of consecutive matched releases, each with its own
// constant (after the line's drift is taken out: a drift misfitted by a
// ppm over a long recording does not make a whole recording infeasible),
// by how many of its pairs the best constant keeps causal (an instance
// grouped wrong costs one pair, not the chunk).
// Pure: fed release series, no files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyze/clock_offsets.h"

namespace slowburn {

// One matched release: index into the node's series and the reference's.
struct CausalPair {
  size_t node_index = 0;
  size_t ref_index = 0;
};

// Where a chunk's offset must lie (the line's drift taken out: the offset
// at the line's anchor).
struct CausalBounds {
  int64_t lower_ns = 0;
  int64_t upper_ns = 0;
};

struct CausalFit {
  size_t chunks = 0;    // chunks with enough pairs to judge
  size_t feasible = 0;  // of them, those one constant offset fits without a rank leaving before another came
  size_t pairs = 0;     // in the chunks
  size_t kept = 0;      // of them, those the best constant of each chunk keeps causal
  std::vector<CausalBounds> bounds;  // each chunk's, where its best constant lies
  double share() const { return chunks ? static_cast<double>(feasible) / static_cast<double>(chunks) : 0; }
  double kept_share() const { return pairs ? static_cast<double>(kept) / static_cast<double>(pairs) : 0; }
};

struct CausalJudgement {
  // The instance shift (added to every pair's reference index) that alone
  // keeps causality; nullopt where none, or more than one, does.
  std::optional<int> side;
  std::map<int, CausalFit> fits;  // per shift tried
  std::string said;               // the fits, for a reason a person reads
};

// Both series carry their instances' latest entries.
bool causality_known(const ReleaseSeries& ref, const ReleaseSeries& node);

// The pairs (in the node's time order) each moved `side` instances on the
// reference, judged in chunks against a line of `drift_ppm` through
// `anchor_ns` on the node's clock.
CausalFit causal_fit(const ReleaseSeries& ref, const ReleaseSeries& node, const std::vector<CausalPair>& pairs,
                     int side, double drift_ppm, int64_t anchor_ns);

// Shifts -2..2 tried; the one that leaves out at most 1% of its pairs
// while every other leaves out 3x as many plus half a percent is the side.
// A wrong shift keeps a pair causal only where the waits are wider than
// the steps vary; the right one leaves out only mis-grouped instances.
CausalJudgement judge_causality(const ReleaseSeries& ref, const ReleaseSeries& node,
                                const std::vector<CausalPair>& pairs, double drift_ppm, int64_t anchor_ns);

// A shift other than 0 that keeps clearly more of its pairs causal than 0
// (half a percent more, and 2 pairs at least: shifts drop different edge
// pairs) where the judgement named no side; nullopt where none does. The
// right match leaves out 0-0.4% beside two busy loops, one a step off 1.5-40%.
std::optional<int> more_causal_side(const CausalJudgement& judged);

// Where the spreads find no shift that stands out (both nodes' exits
// late by a millisecond): the node's releases [start, start + w) tried at
// every shift against the reference's (reference index = node index +
// shift), each asked whether one constant offset keeps causality over the
// window. The shift that alone does; nullopt where none or several do
// (`feasible` says how many).
struct CausalShift {
  std::optional<int64_t> shift;
  size_t feasible = 0;
};
CausalShift causal_shift(const ReleaseSeries& ref, const ReleaseSeries& node, int64_t start, int64_t w);

// The first of `windows` windows of `window` releases spread over the
// node's series (as the spreads' search tries them) in which causality
// leaves a single shift; `said`, where none does, how many it left in each.
struct CausalWindow {
  int64_t shift = 0, start = 0, w = 0;
};
std::optional<CausalWindow> causal_windows(const ReleaseSeries& ref, const ReleaseSeries& node, size_t window,
                                           size_t windows, std::string& said);

// The offset at the anchor moved into each chunk's deepest stretch (where
// its best constant lies): the median of it clamped into each. A busy
// node's late exits pull the median difference by their delay; the bounds
// hold whatever the delays.
// `width_ns`: the bounds' median width (how closely causality pins it).
struct CausalOffset {
  int64_t offset_ns = 0;
  int64_t width_ns = 0;
};
std::optional<CausalOffset> causal_offset(const CausalFit& fit, int64_t offset_ns);

}  // namespace slowburn
