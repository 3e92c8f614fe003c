#include "analyze/clock_causality.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>

#include "stats/robust.h"

namespace slowburn {

namespace {

// Consecutive matched releases judged together: enough for the steps to
// vary more than the waits, few enough that a drift misfitted by a ppm
// moves the offset a few microseconds inside one.
constexpr size_t kChunkPairs = 64;
// Fewer pairs than this at the end make no chunk of their own.
constexpr size_t kMinChunkPairs = 16;
// Timestamps converted from each node's monotonic clock to its wall clock
// and a fitted line between them: bounds this close count as met.
constexpr int64_t kToleranceNs = 20'000;
// The side leaves out at most this share of its pairs, and every other
// shift at least kRunnerUpTimes as many plus kRunnerUpAbove.
constexpr double kMaxLeftOut = 0.01;
constexpr double kRunnerUpTimes = 3.0;
constexpr double kRunnerUpAbove = 0.005;
constexpr int kSides = 2;  // instances either way

}  // namespace

bool causality_known(const ReleaseSeries& ref, const ReleaseSeries& node) {
  return !ref.last_entry_ns.empty() && ref.last_entry_ns.size() == ref.release_ns.size() &&
         !node.last_entry_ns.empty() && node.last_entry_ns.size() == node.release_ns.size();
}

namespace {

// The offset that the most of a chunk's pairs allow (each pair bounds it
// on both sides, widened by the tolerance split evenly): how many, and
// where (the first stretch that deep). A pair whose bounds cross (its
// instance grouped wrong, or a call that did not synchronize) allows none.
struct Deepest {
  size_t depth = 0;
  CausalBounds bounds;
};
Deepest deepest(const std::vector<CausalBounds>& allowed) {
  constexpr int kOpens = -1, kCloses = 1;  // an open sorts before a close at the same point
  std::vector<std::pair<int64_t, int>> edges;
  edges.reserve(allowed.size() * 2);
  for (const CausalBounds& b : allowed) {
    if (b.lower_ns - kToleranceNs / 2 > b.upper_ns + kToleranceNs / 2) continue;
    edges.emplace_back(b.lower_ns - kToleranceNs / 2, kOpens);
    edges.emplace_back(b.upper_ns + kToleranceNs / 2, kCloses);
  }
  std::sort(edges.begin(), edges.end());
  Deepest best;
  size_t depth = 0;
  for (size_t i = 0; i < edges.size(); ++i) {
    if (edges[i].second == kCloses) {
      --depth;  // every close follows its own open
      continue;
    }
    if (++depth > best.depth) {
      best.depth = depth;
      best.bounds = {edges[i].first, i + 1 < edges.size() ? edges[i + 1].first : edges[i].first};
    }
  }
  return best;
}

}  // namespace

CausalFit causal_fit(const ReleaseSeries& ref, const ReleaseSeries& node, const std::vector<CausalPair>& pairs,
                     int side, double drift_ppm, int64_t anchor_ns) {
  CausalFit fit;
  auto ref_size = static_cast<int64_t>(ref.release_ns.size());
  // Each pair: offset >= lower (the node's exit after the reference's last
  // entry) and offset <= upper (the reference's exit after the node's).
  std::vector<CausalBounds> chunk;
  auto close = [&](bool last) {
    if (chunk.empty() || (last && chunk.size() < kMinChunkPairs)) return;
    Deepest d = deepest(chunk);
    ++fit.chunks;
    fit.pairs += chunk.size();
    fit.kept += d.depth;
    if (d.depth == chunk.size()) ++fit.feasible;
    fit.bounds.push_back(d.bounds);
    chunk.clear();
  };
  for (const CausalPair& p : pairs) {
    int64_t k = static_cast<int64_t>(p.ref_index) + side;
    if (k < 0 || k >= ref_size) continue;
    auto rk = static_cast<size_t>(k);
    int64_t n = node.release_ns[p.node_index];
    auto drift = static_cast<int64_t>(drift_ppm * 1e-6 * static_cast<double>(n - anchor_ns));
    chunk.push_back({ref.last_entry_ns[rk] - n - drift, ref.release_ns[rk] - node.last_entry_ns[p.node_index] - drift});
    if (chunk.size() == kChunkPairs) close(false);
  }
  close(true);
  return fit;
}

CausalJudgement judge_causality(const ReleaseSeries& ref, const ReleaseSeries& node,
                                const std::vector<CausalPair>& pairs, double drift_ppm, int64_t anchor_ns) {
  CausalJudgement j;
  std::optional<int> best;
  for (int side = -kSides; side <= kSides; ++side) {
    CausalFit fit = causal_fit(ref, node, pairs, side, drift_ppm, anchor_ns);
    j.said += fmt::format("{}{}{} {}/{} ({:.1f}% kept)", j.said.empty() ? "" : ", ", side > 0 ? "+" : "", side,
                          fit.feasible, fit.chunks, fit.kept_share() * 100);
    if (!best || fit.kept_share() > j.fits[*best].kept_share()) best = side;
    j.fits[side] = std::move(fit);
  }
  // Judged on the pairs each shift leaves out (that no constant of their
  // chunk keeps causal): the right one leaves out only a mis-grouped
  // instance now and then (0-0.4% beside two busy loops), one a step off
  // 1.5-40% there.
  double left_out = 1 - j.fits[*best].kept_share();
  if (j.fits[*best].chunks == 0 || left_out > kMaxLeftOut) return j;
  for (const auto& [side, fit] : j.fits)
    if (side != *best && 1 - fit.kept_share() < kRunnerUpTimes * left_out + kRunnerUpAbove) return j;
  j.side = best;
  return j;
}

std::optional<int> more_causal_side(const CausalJudgement& judged) {
  constexpr double kMoreKept = 0.005;
  auto right = judged.fits.find(0);
  if (right == judged.fits.end()) return std::nullopt;
  for (const auto& [side, fit] : judged.fits) {
    double more = fit.kept_share() - right->second.kept_share();
    if (side != 0 && more > kMoreKept && more * static_cast<double>(std::min(fit.pairs, right->second.pairs)) >= 2)
      return side;
  }
  return std::nullopt;
}

CausalShift causal_shift(const ReleaseSeries& ref, const ReleaseSeries& node, int64_t start, int64_t w) {
  CausalShift found;
  auto ref_size = static_cast<int64_t>(ref.release_ns.size());
  int64_t end = std::min(start + w, static_cast<int64_t>(node.release_ns.size()));
  auto min_pairs = std::min<int64_t>(static_cast<int64_t>(kMinChunkPairs), end - start);
  for (int64_t shift = min_pairs - end; shift <= ref_size - min_pairs - start; ++shift) {
    int64_t lo = std::max(start, -shift), hi = std::min(end, ref_size - shift);
    if (hi - lo < min_pairs) continue;
    int64_t lower = INT64_MIN, upper = INT64_MAX;
    for (int64_t j = lo; j < hi && (upper == INT64_MAX || lower - kToleranceNs <= upper); ++j) {
      auto n = static_cast<size_t>(j), k = static_cast<size_t>(j + shift);
      lower = std::max(lower, ref.last_entry_ns[k] - node.release_ns[n]);
      upper = std::min(upper, ref.release_ns[k] - node.last_entry_ns[n]);
    }
    if (lower - kToleranceNs > upper) continue;
    ++found.feasible;
    found.shift = shift;
  }
  if (found.feasible != 1) found.shift.reset();
  return found;
}

std::optional<CausalWindow> causal_windows(const ReleaseSeries& ref, const ReleaseSeries& node, size_t window,
                                           size_t windows, std::string& said) {
  auto n = static_cast<int64_t>(node.release_ns.size());
  int64_t w = std::min(static_cast<int64_t>(window), n);
  int64_t tried = std::min(static_cast<int64_t>(windows), std::max<int64_t>(1, n / std::max<int64_t>(1, w)));
  std::vector<size_t> feasible;
  for (int64_t k = 0; k < tried; ++k) {
    int64_t start = tried == 1 ? (n - w) / 2 : k * (n - w) / (tried - 1);
    CausalShift found = causal_shift(ref, node, start, w);
    if (found.shift) return CausalWindow{*found.shift, start, w};
    feasible.push_back(found.feasible);
  }
  said = fmt::format("; causality leaves {} shifts in windows of {} releases", fmt::join(feasible, ", "), w);
  return std::nullopt;
}

std::optional<CausalOffset> causal_offset(const CausalFit& fit, int64_t offset_ns) {
  if (fit.bounds.empty()) return std::nullopt;
  std::vector<int64_t> clamped, widths;
  for (const CausalBounds& b : fit.bounds) {
    clamped.push_back(std::clamp(offset_ns, b.lower_ns, b.upper_ns));
    widths.push_back(b.upper_ns - b.lower_ns);
  }
  return CausalOffset{upper_median(std::move(clamped)), upper_median(std::move(widths))};
}

}  // namespace slowburn
