// When a slow burn began: a rank named for what it costs the job (detect/
// session_cost.h) either cost it from the start (a slower node, a link
// trained down before the job began) or began to at some moment (a link
// that degraded, a neighbour that started, a ramp). The SRE's next question
// is "since when": the moment to look for in the node's logs.
//
// The rank's own cost, cumulative, sampled over the session (every 10 s
// by the detector): each stretch between two samples has its cost share.
// The onset is the classic CUSUM change-point estimate against a reference
// of half the cost floor: S_k = sum over stretches up to k of (share -
// reference) x stretch, and the onset is where S is lowest, the last
// moment before it only grows. A cost from the start keeps S growing from
// the first stretch; a step at t and a ramp both leave S falling (or flat)
// until the cost passes the reference. A change needs a stretch before it
// long enough to be one (min_before_ns: sooner is "from the start") and
// under the reference on average, and a stretch after it that costs at
// least the floor; a low point that is neither is not dated. Pure:
// samples in, onset out.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace slowburn {

// One sample of a rank's cumulative cost: at at_ns (the session's clock),
// traced_ns of the session traced and own_ns of its own lateness summed.
struct CumulativeCost {
  uint64_t at_ns = 0;
  uint64_t traced_ns = 0;
  uint64_t own_ns = 0;
};

struct CostOnset {
  bool from_start = true;
  uint64_t at_ns = 0;       // the change's time on the session's clock (0: from the start)
  uint64_t into_ns = 0;     // its samples' traced_ns there: how far into the session
  double before_share = 0;  // its cost before, as a share of that stretch
  double since_share = 0;   // and from there on (the whole span when from the start)
};

struct CostOnsetThresholds {
  double floor_share = 0.01;  // the slow burn's cost floor (--min-cost); the reference is half of it
  uint64_t min_before_ns = 20'000'000'000;
};

// samples: in time order, the first where the rank's cost was zero (the
// start of its lane); traced_ns from the session's start. nullopt with
// fewer than three samples, with no cost, or with a low point that is no
// change: too little to say.
std::optional<CostOnset> cost_onset(const std::vector<CumulativeCost>& samples,
                                    const CostOnsetThresholds& thresholds = {});

// The history behind the samples, kept by the detectors: per point each
// rank's own cost as (pid, own_ns) pairs sorted by pid. A rank's cost at
// a point (0 when it was not there yet).
uint64_t own_cost_at(const std::vector<std::pair<int32_t, uint64_t>>& own_ns, int32_t pid);

// Bounded for a service's days: at `kept` points every other one goes and
// the spacing between the points doubles.
template <class Point>
void thin_cost_history(std::vector<Point>& points, uint64_t& stride_ns, size_t kept) {
  if (points.size() < kept) return;
  std::vector<Point> halved;
  for (size_t i = 0; i < points.size(); i += 2) halved.push_back(std::move(points[i]));
  points = std::move(halved);
  stride_ns *= 2;
}

}  // namespace slowburn
