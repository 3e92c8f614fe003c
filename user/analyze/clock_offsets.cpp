#include "analyze/clock_offsets.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <optional>

#include "core/format.h"
#include "stats/robust.h"

namespace slowburn {

namespace {

// A microsecond added to both spreads before comparing them: two perfect
// matches (spread 0) are equally good, not infinitely different.
constexpr int64_t kSpreadFloorNs = 1000;

int64_t median_of(std::vector<int64_t> values) {
  auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

int64_t spread_of(const std::vector<int64_t>& values, int64_t center) {
  std::vector<int64_t> deviations;
  deviations.reserve(values.size());
  for (int64_t v : values) deviations.push_back(std::llabs(v - center));
  return median_of(std::move(deviations));
}

// One matched release: the node's time and what to add to it for the reference's.
struct Matched {
  int64_t node_ns = 0;
  int64_t diff_ns = 0;
};

// The line through the matched releases (in the node's time order): the
// drift by Theil-Sen over pairs half the series apart (robust to a few
// mismatched releases), the offset the median of what the drift leaves.
ClockOffset fit_line(const std::vector<Matched>& matched, const std::string& lane) {
  ClockOffset c;
  c.matched = matched.size();
  c.lane = lane;
  size_t n = matched.size();
  if (n == 0) return c;
  c.anchor_ns = matched[n / 2].node_ns;
  c.span_ns = matched.back().node_ns - matched.front().node_ns;
  size_t half = n / 2;
  if (half > 0 && c.span_ns >= kMinDriftSpanNs) {
    std::vector<double> slopes;
    slopes.reserve(half);
    for (size_t i = 0; i + half < n; ++i) {
      int64_t dt = matched[i + half].node_ns - matched[i].node_ns;
      if (dt > 0)
        slopes.push_back(static_cast<double>(matched[i + half].diff_ns - matched[i].diff_ns) / static_cast<double>(dt));
    }
    if (auto slope = median(slopes)) c.drift_ppm = *slope * 1e6;
  }
  std::vector<int64_t> residuals;
  residuals.reserve(n);
  for (const Matched& m : matched) residuals.push_back(m.diff_ns - (c.at(m.node_ns) - c.offset_ns));
  c.offset_ns = median_of(residuals);
  c.spread_ns = spread_of(residuals, c.offset_ns);
  return c;
}

// The reference release nearest `x`, as what to add to `t` to reach it, if
// within `tolerance_ns`.
std::optional<int64_t> nearest(const std::vector<int64_t>& ref, int64_t t, int64_t x, int64_t tolerance_ns) {
  auto it = std::lower_bound(ref.begin(), ref.end(), x);
  int64_t best = INT64_MAX;
  if (it != ref.end()) best = *it - x;
  if (it != ref.begin() && x - *(it - 1) < std::llabs(best)) best = *(it - 1) - x;
  if (best == INT64_MAX || std::llabs(best) > tolerance_ns) return std::nullopt;
  return x + best - t;
}

// Every node release matched to the nearest reference release within
// `tolerance_ns`. First by walking out from the coarse match (node index
// `start`) both ways, each release predicted by the median of the last
// matched few: a drifting clock moves the offset by more than the
// tolerance over a long recording, never between neighbours. Then twice
// around the line fitted on the previous pass.
std::vector<Matched> match_nearest(const std::vector<int64_t>& ref, const std::vector<int64_t>& node, int64_t offset,
                                   size_t start, int64_t tolerance_ns, const std::string& lane) {
  constexpr size_t kRecent = 15;
  std::vector<Matched> backward, matched;
  auto walk = [&](auto first, auto last, std::vector<Matched>& out) {
    std::deque<int64_t> recent{offset};
    for (auto it = first; it != last; ++it) {
      int64_t predicted = median_of({recent.begin(), recent.end()});
      if (auto diff = nearest(ref, *it, *it + predicted, tolerance_ns)) {
        out.push_back({*it, *diff});
        recent.push_back(*diff);
        if (recent.size() > kRecent) recent.pop_front();
      }
    }
  };
  start = std::min(start, node.size());
  walk(node.begin() + static_cast<std::ptrdiff_t>(start), node.end(), matched);
  walk(node.rbegin() + static_cast<std::ptrdiff_t>(node.size() - start), node.rend(), backward);
  matched.insert(matched.begin(), backward.rbegin(), backward.rend());
  for (int pass = 0; pass < 2 && !matched.empty(); ++pass) {
    ClockOffset line = fit_line(matched, lane);
    matched.clear();
    for (int64_t t : node)
      if (auto diff = nearest(ref, t, t + line.at(t), tolerance_ns)) matched.push_back({t, *diff});
  }
  return matched;
}

Result<ClockOffset> by_sequence(const std::string& lane, const ReleaseSeries& ref, const ReleaseSeries& node,
                                const OffsetSearch& search) {
  std::map<uint64_t, int64_t> at;
  for (size_t i = 0; i < ref.seq.size(); ++i) at[ref.seq[i]] = ref.release_ns[i];
  std::vector<Matched> matched;
  for (size_t i = 0; i < node.seq.size(); ++i)
    if (auto it = at.find(node.seq[i]); it != at.end())
      matched.push_back({node.release_ns[i], it->second - node.release_ns[i]});
  if (matched.size() < search.min_matched)
    return make_error("{}: {} instance(s) with the same sequence number on both nodes (at least {} needed)", lane,
                      matched.size(), search.min_matched);
  return fit_line(matched, lane);
}

struct ShiftMatch {
  int64_t shift = 0;
  int64_t spread = INT64_MAX;
  int64_t runner_up = INT64_MAX;  // the next best shift's spread
};

// The node's releases [start, start + w) tried at every shift against the
// reference's (reference index = node index + shift), each scored by the
// spread of a sample of its differences.
ShiftMatch best_shift(const std::vector<int64_t>& ref, const std::vector<int64_t>& node, int64_t start, int64_t w,
                      const OffsetSearch& search) {
  auto ref_size = static_cast<int64_t>(ref.size());
  auto min_pairs = std::min(static_cast<int64_t>(search.min_matched), w);
  int64_t end = start + w;
  ShiftMatch m;
  std::vector<int64_t> diffs;
  for (int64_t shift = min_pairs - end; shift <= ref_size - min_pairs - start; ++shift) {
    int64_t lo = std::max(start, -shift);
    int64_t hi = std::min(end, ref_size - shift);
    if (hi - lo < min_pairs) continue;
    int64_t stride = std::max<int64_t>(1, (hi - lo) / static_cast<int64_t>(search.sample));
    diffs.clear();
    for (int64_t j = lo; j < hi; j += stride)
      diffs.push_back(ref[static_cast<size_t>(j + shift)] - node[static_cast<size_t>(j)]);
    int64_t spread = spread_of(diffs, median_of(diffs));
    if (spread < m.spread) {
      m.runner_up = m.spread;
      m.spread = spread;
      m.shift = shift;
    } else if (spread < m.runner_up) {
      m.runner_up = spread;
    }
  }
  return m;
}

bool stands_out(const ShiftMatch& m, const OffsetSearch& search) {
  return m.runner_up == INT64_MAX || static_cast<double>(m.runner_up + kSpreadFloorNs) >=
                                         search.min_contrast * static_cast<double>(m.spread + kSpreadFloorNs);
}

Result<ClockOffset> by_shift(const std::string& lane, const std::vector<int64_t>& ref, const std::vector<int64_t>& node,
                             const OffsetSearch& search) {
  if (ref.size() < search.min_matched || node.size() < search.min_matched)
    return make_error("{}: {} and {} instances (at least {} on each node needed)", lane, ref.size(), node.size(),
                      search.min_matched);
  // A few short windows of consecutive releases spread over the node's
  // series: one without a lost instance inside matches at a single shift.
  auto w = static_cast<int64_t>(std::min(search.window, node.size()));
  auto n = static_cast<int64_t>(node.size());
  int64_t windows = std::min<int64_t>(search.windows, std::max<int64_t>(1, n / w));
  std::optional<ShiftMatch> chosen;
  int64_t chosen_start = 0;
  for (int64_t k = 0; k < windows; ++k) {
    int64_t start = windows == 1 ? (n - w) / 2 : k * (n - w) / (windows - 1);
    ShiftMatch m = best_shift(ref, node, start, w, search);
    if (m.spread == INT64_MAX) continue;
    if (!chosen || (stands_out(m, search) && (!stands_out(*chosen, search) || m.spread < chosen->spread))) {
      chosen = m;
      chosen_start = start;
    }
  }
  if (!chosen) return make_error("{}: the two nodes' instances never overlap by {}", lane, search.min_matched);
  if (!stands_out(*chosen, search))
    return make_error(
        "{}: its steps repeat too regularly to match the nodes' instances without sequence numbers (the best match "
        "spreads {}, the next {})",
        lane, format_ns(static_cast<double>(chosen->spread)), format_ns(static_cast<double>(chosen->runner_up)));

  std::vector<int64_t> diffs;
  auto ref_size = static_cast<int64_t>(ref.size());
  for (int64_t j = std::max(chosen_start, -chosen->shift); j < std::min(chosen_start + w, ref_size - chosen->shift);
       ++j)
    diffs.push_back(ref[static_cast<size_t>(j + chosen->shift)] - node[static_cast<size_t>(j)]);
  int64_t coarse = median_of(diffs);
  // Half the reference's usual step: a release further than that from any
  // reference release is one the reference did not see.
  std::vector<int64_t> steps;
  for (size_t i = 1; i < ref.size(); ++i) steps.push_back(ref[i] - ref[i - 1]);
  int64_t tolerance = std::max<int64_t>(1, median_of(steps) / 2);
  std::vector<Matched> matched =
      match_nearest(ref, node, coarse, static_cast<size_t>(chosen_start + w / 2), tolerance, lane);
  if (matched.size() < search.min_matched)
    return make_error("{}: only {} instance(s) matched on the estimated clock", lane, matched.size());
  return fit_line(matched, lane);
}

}  // namespace

ReleaseSeries section_near(const ReleaseSeries& series, int64_t center_ns, size_t max) {
  size_t n = series.release_ns.size();
  if (n <= max) return series;
  auto at = static_cast<size_t>(std::lower_bound(series.release_ns.begin(), series.release_ns.end(), center_ns) -
                                series.release_ns.begin());
  if (at > 0 && (at == n || center_ns - series.release_ns[at - 1] <= series.release_ns[at] - center_ns)) --at;
  size_t first = std::min(n - max, at > max / 2 ? at - max / 2 : 0);
  ReleaseSeries out;
  out.release_ns.assign(series.release_ns.begin() + static_cast<std::ptrdiff_t>(first),
                        series.release_ns.begin() + static_cast<std::ptrdiff_t>(first + max));
  if (!series.seq.empty())
    out.seq.assign(series.seq.begin() + static_cast<std::ptrdiff_t>(first),
                   series.seq.begin() + static_cast<std::ptrdiff_t>(first + max));
  return out;
}

Result<ClockOffset> estimate_clock_offset(const LaneReleases& reference, const LaneReleases& node,
                                          const OffsetSearch& search) {
  std::optional<ClockOffset> chosen;
  std::string reasons;
  size_t shared = 0;
  for (const auto& [lane, mine] : node) {
    auto theirs = reference.find(lane);
    if (theirs == reference.end()) continue;
    ++shared;
    bool numbered = !mine.seq.empty() && !theirs->second.seq.empty();
    auto estimate = numbered ? by_sequence(lane, theirs->second, mine, search)
                             : by_shift(lane, theirs->second.release_ns, mine.release_ns, search);
    if (!estimate) {
      reasons += (reasons.empty() ? "" : "; ") + estimate.error().message;
      continue;
    }
    // A lane long enough to fit the drift on, then the most matches, then the tightest.
    auto drift_fitted = [](const ClockOffset& c) { return c.span_ns >= kMinDriftSpanNs; };
    bool better = !chosen || drift_fitted(*estimate) > drift_fitted(*chosen) ||
                  (drift_fitted(*estimate) == drift_fitted(*chosen) &&
                   (estimate->matched > chosen->matched ||
                    (estimate->matched == chosen->matched && estimate->spread_ns < chosen->spread_ns)));
    if (better) chosen = *estimate;
  }
  if (chosen) return *chosen;
  if (shared == 0) return make_error("no collective of a communicator seen on both nodes");
  return make_error("{}", reasons);
}

}  // namespace slowburn
