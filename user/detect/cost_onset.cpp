#include "detect/cost_onset.h"

#include <algorithm>

namespace slowburn {

namespace {

double share(uint64_t own_ns, uint64_t traced_ns) {
  return traced_ns ? static_cast<double>(own_ns) / static_cast<double>(traced_ns) : 0.0;
}

}  // namespace

std::optional<CostOnset> cost_onset(const std::vector<CumulativeCost>& samples, const CostOnsetThresholds& thresholds) {
  if (samples.size() < 3) return std::nullopt;
  const CumulativeCost& first = samples.front();
  const CumulativeCost& last = samples.back();
  if (last.traced_ns <= first.traced_ns) return std::nullopt;
  const double reference = thresholds.floor_share / 2;
  // S_k in nanoseconds of cost over the reference; its lowest point, the
  // last one where it ties (a cost that sat at zero for a while began at
  // the end of that while).
  double s = 0, lowest = 0;
  size_t onset = 0;
  for (size_t i = 1; i < samples.size(); ++i) {
    const CumulativeCost& a = samples[i - 1];
    const CumulativeCost& b = samples[i];
    if (b.traced_ns < a.traced_ns || b.own_ns < a.own_ns) return std::nullopt;  // not cumulative
    double traced = static_cast<double>(b.traced_ns - a.traced_ns);
    s += static_cast<double>(b.own_ns - a.own_ns) - reference * traced;
    if (s <= lowest) lowest = s, onset = i;
  }
  CostOnset out;
  out.since_share = share(last.own_ns - first.own_ns, last.traced_ns - first.traced_ns);
  if (onset + 1 >= samples.size()) return std::nullopt;  // never grew: no cost to date
  if (onset == 0) return out;                            // grew from the first stretch
  const CumulativeCost& at = samples[onset];
  uint64_t before_ns = at.traced_ns - first.traced_ns;
  double before = share(at.own_ns - first.own_ns, before_ns);
  double since = share(last.own_ns - at.own_ns, last.traced_ns - at.traced_ns);
  if (before_ns < thresholds.min_before_ns) return out;  // too soon to be a change
  // A low point that is no change (cheap before it, costly after): not to
  // be dated, and not "from the start" either.
  if (before >= reference || since < thresholds.floor_share) return std::nullopt;
  out.from_start = false;
  out.at_ns = at.at_ns;
  out.into_ns = at.traced_ns;
  out.before_share = before;
  out.since_share = since;
  return out;
}

uint64_t own_cost_at(const std::vector<std::pair<int32_t, uint64_t>>& own_ns, int32_t pid) {
  auto at = std::lower_bound(own_ns.begin(), own_ns.end(), std::make_pair(pid, uint64_t{0}));
  return at != own_ns.end() && at->first == pid ? at->second : 0;
}

}  // namespace slowburn
