#include "analyze/clock_offsets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <optional>

#include "analyze/clock_causality.h"
#include "core/format.h"
#include "stats/robust.h"

namespace slowburn {

namespace {

// A microsecond added to both spreads before comparing them: two perfect
// matches (spread 0) are equally good, not infinitely different.
constexpr int64_t kSpreadFloorNs = 1000;

int64_t spread_of(const std::vector<int64_t>& values, int64_t center) {
  std::vector<int64_t> deviations;
  deviations.reserve(values.size());
  for (int64_t v : values) deviations.push_back(std::llabs(v - center));
  return upper_median(std::move(deviations));
}

// One matched release: the node's time and what to add to it for the reference's.
struct Matched {
  int64_t node_ns = 0;
  int64_t diff_ns = 0;
  bool prompt = true;    // on both nodes (analyze/clock_offsets.h)
  size_t ref_index = 0;  // the reference release it was matched to
  size_t node_index = 0;
};

// Release i of the series left when released (every release is, where the
// recording kept no run-queue waits).
bool prompt_at(const ReleaseSeries& s, size_t i) { return s.prompt.empty() || s.prompt[i] != 0; }

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
  c.offset_ns = upper_median(residuals);
  c.spread_ns = spread_of(residuals, c.offset_ns);
  return c;
}

// The line on the pairs prompt on both nodes where there are `min_matched`
// of them (a busy node's late exits would pull the offset by their
// delay), else on every pair; `matched` counts every pair either way.
ClockOffset fit_prompt(const std::vector<Matched>& matched, const std::string& lane, size_t min_matched) {
  std::vector<Matched> prompt;
  for (const Matched& m : matched)
    if (m.prompt) prompt.push_back(m);
  if (prompt.size() == matched.size() || prompt.size() < min_matched) return fit_line(matched, lane);
  ClockOffset c = fit_line(prompt, lane);
  c.matched = matched.size();
  c.prompt_matched = prompt.size();
  return c;
}

// The share of the series' releases that are prompt (0 where none is known).
double prompt_share(const ReleaseSeries& s) {
  if (s.prompt.empty()) return 0;
  return static_cast<double>(std::count(s.prompt.begin(), s.prompt.end(), uint8_t{1})) /
         static_cast<double>(s.prompt.size());
}

// Below this share on either node the prompt pairs are too few to search
// on (each shift would scan its whole window for them).
constexpr double kMinPromptShare = 0.1;

// The index of the reference release nearest `x`, if within `tolerance_ns`.
std::optional<size_t> nearest(const std::vector<int64_t>& ref, int64_t x, int64_t tolerance_ns) {
  auto it = std::lower_bound(ref.begin(), ref.end(), x);
  if (it != ref.begin() && (it == ref.end() || x - *(it - 1) < *it - x)) --it;
  if (it == ref.end() || std::llabs(*it - x) > tolerance_ns) return std::nullopt;
  return static_cast<size_t>(it - ref.begin());
}

// Every node release matched to the nearest reference release within
// `tolerance_ns`. First by walking out from the coarse match (node index
// `start`) both ways, each release predicted by the median of the last
// matched few: a drifting clock moves the offset by more than the
// tolerance over a long recording, never between neighbours. Then twice
// around the line fitted on the previous pass.
std::vector<Matched> match_nearest(const ReleaseSeries& ref, const ReleaseSeries& node, int64_t offset, size_t start,
                                   int64_t tolerance_ns, const std::string& lane, size_t min_matched) {
  constexpr size_t kRecent = 15;
  const std::vector<int64_t>& r = ref.release_ns;
  const std::vector<int64_t>& n = node.release_ns;
  // Prompt only where both nodes kept run-queue waits (else every pair is).
  bool both_known = !ref.prompt.empty() && !node.prompt.empty();
  auto matched_at = [&](size_t i, size_t k) {
    return Matched{n[i], r[k] - n[i], !both_known || (prompt_at(node, i) && prompt_at(ref, k)), k, i};
  };
  std::vector<Matched> backward, matched;
  // Prompt pairs predict the next (a late exit's difference is off by its
  // delay), where there are enough of them to follow a drifting clock.
  bool prompt_only = prompt_share(ref) >= kMinPromptShare && prompt_share(node) >= kMinPromptShare;
  auto step = [&](size_t i, std::deque<int64_t>& recent, std::vector<Matched>& out) {
    int64_t predicted = upper_median({recent.begin(), recent.end()});
    auto k = nearest(r, n[i] + predicted, tolerance_ns);
    if (!k) return;
    out.push_back(matched_at(i, *k));
    if (prompt_only && !out.back().prompt) return;
    recent.push_back(out.back().diff_ns);
    if (recent.size() > kRecent) recent.pop_front();
  };
  start = std::min(start, n.size());
  std::deque<int64_t> ahead{offset}, behind{offset};
  for (size_t i = start; i < n.size(); ++i) step(i, ahead, matched);
  for (size_t i = start; i-- > 0;) step(i, behind, backward);
  matched.insert(matched.begin(), backward.rbegin(), backward.rend());
  for (int pass = 0; pass < 2 && !matched.empty(); ++pass) {
    ClockOffset line = fit_prompt(matched, lane, min_matched);
    matched.clear();
    for (size_t i = 0; i < n.size(); ++i)
      if (auto k = nearest(r, n[i] + line.at(n[i]), tolerance_ns)) matched.push_back(matched_at(i, *k));
  }
  return matched;
}

Result<ClockOffset> by_sequence(const std::string& lane, const ReleaseSeries& ref, const ReleaseSeries& node,
                                const OffsetSearch& search) {
  std::map<uint64_t, size_t> at;
  for (size_t i = 0; i < ref.seq.size(); ++i) at[ref.seq[i]] = i;
  std::vector<Matched> matched;
  for (size_t i = 0; i < node.seq.size(); ++i)
    if (auto it = at.find(node.seq[i]); it != at.end())
      matched.push_back(
          {node.release_ns[i], ref.release_ns[it->second] - node.release_ns[i],
           node.prompt.empty() || ref.prompt.empty() || (prompt_at(node, i) && prompt_at(ref, it->second)), it->second,
           i});
  if (matched.size() < search.min_matched)
    return make_error("{}: {} instance(s) with the same sequence number on both nodes (at least {} needed)", lane,
                      matched.size(), search.min_matched);
  ClockOffset line = fit_prompt(matched, lane, search.min_matched);
  line.numbered = true;
  return line;
}

// On prompt pairs a shift is judged by how many of its differences agree
// (within this of their median): the true one's all do, give or take the
// collective's spread; one a step off agrees as far as the steps are
// regular. The spread alone is not enough there: over thousands of shifts
// the tightest of 20-48 pairs a few microseconds apart is tight by chance
// (a wrong shift, 29 steps off, passed the 2x contrast on regular steps).
constexpr int64_t kPromptAgreeNs = 100'000;
constexpr double kPromptAgreeing = 0.8;  // of the best shift's pairs
constexpr double kPromptRunnerUp = 0.5;  // of the next best's, at most

struct ShiftMatch {
  int64_t shift = 0;
  int64_t spread = INT64_MAX;
  int64_t runner_up = INT64_MAX;  // the next best shift's spread
  // Prompt pairs only: the shares of the best and the next best shift's
  // differences that agree (kPromptAgreeNs).
  double agreeing = 0, runner_up_agreeing = 0;
};

// The node's releases [start, start + w) tried at every shift against the
// reference's (reference index = node index + shift), each scored by the
// spread of a sample of its differences: of the pairs prompt on both nodes
// only, when `prompt` (a shift with fewer than min_matched of them is not
// scored).
ShiftMatch best_shift(const ReleaseSeries& ref, const ReleaseSeries& node, int64_t start, int64_t w, bool prompt,
                      const OffsetSearch& search) {
  auto ref_size = static_cast<int64_t>(ref.release_ns.size());
  auto min_pairs = std::min(static_cast<int64_t>(search.min_matched), w);
  int64_t end = start + w;
  std::vector<int64_t> candidates;  // the node's releases that may pair
  for (int64_t j = start; j < end; ++j)
    if (!prompt || prompt_at(node, static_cast<size_t>(j))) candidates.push_back(j);
  ShiftMatch m;
  std::vector<int64_t> diffs;
  for (int64_t shift = min_pairs - end; shift <= ref_size - min_pairs - start; ++shift) {
    int64_t lo = std::max(start, -shift);
    int64_t hi = std::min(end, ref_size - shift);
    if (hi - lo < min_pairs) continue;
    size_t stride =
        prompt ? 1 : static_cast<size_t>(std::max<int64_t>(1, (hi - lo) / static_cast<int64_t>(search.sample)));
    diffs.clear();
    auto first = static_cast<size_t>(std::lower_bound(candidates.begin(), candidates.end(), lo) - candidates.begin());
    for (size_t c = first; c < candidates.size() && candidates[c] < hi && diffs.size() < search.sample; c += stride) {
      auto j = static_cast<size_t>(candidates[c]);
      auto k = static_cast<size_t>(candidates[c] + shift);
      if (prompt && !prompt_at(ref, k)) continue;
      diffs.push_back(ref.release_ns[k] - node.release_ns[j]);
    }
    if (static_cast<int64_t>(diffs.size()) < min_pairs) continue;
    int64_t center = upper_median(diffs);
    int64_t spread = spread_of(diffs, center);
    if (prompt) {
      auto agree = std::count_if(diffs.begin(), diffs.end(),
                                 [center](int64_t d) { return std::llabs(d - center) <= kPromptAgreeNs; });
      double share = static_cast<double>(agree) / static_cast<double>(diffs.size());
      if (share > m.agreeing || (share == m.agreeing && spread < m.spread)) {
        m.runner_up_agreeing = m.agreeing;
        m.agreeing = share;
        m.spread = spread;
        m.shift = shift;
      } else {
        m.runner_up_agreeing = std::max(m.runner_up_agreeing, share);
      }
      continue;
    }
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

bool stands_out(const ShiftMatch& m, bool prompt, const OffsetSearch& search) {
  if (prompt) return m.agreeing >= kPromptAgreeing && m.runner_up_agreeing < kPromptRunnerUp * m.agreeing;
  return m.runner_up == INT64_MAX || static_cast<double>(m.runner_up + kSpreadFloorNs) >=
                                         search.min_contrast * static_cast<double>(m.spread + kSpreadFloorNs);
}

// The shift found in windows of `w` consecutive node releases spread over
// its series (one without a lost instance inside matches at a single
// shift): the window whose best stands out, else the first tried.
struct WindowMatch {
  ShiftMatch match;
  int64_t start = 0, w = 0;
};
std::optional<WindowMatch> search_windows(const ReleaseSeries& ref, const ReleaseSeries& node, int64_t w, bool prompt,
                                          const OffsetSearch& search) {
  auto n = static_cast<int64_t>(node.release_ns.size());
  w = std::min(w, n);
  int64_t windows = std::min<int64_t>(search.windows, std::max<int64_t>(1, n / w));
  std::optional<WindowMatch> chosen;
  for (int64_t k = 0; k < windows; ++k) {
    int64_t start = windows == 1 ? (n - w) / 2 : k * (n - w) / (windows - 1);
    ShiftMatch m = best_shift(ref, node, start, w, prompt, search);
    if (m.spread == INT64_MAX) continue;
    if (!chosen || (stands_out(m, prompt, search) &&
                    (!stands_out(chosen->match, prompt, search) || m.spread < chosen->match.spread)))
      chosen = WindowMatch{m, start, w};
  }
  return chosen;
}

// The prompt search's window: long enough to hold prompt_in_window of the
// node's prompt releases at their share of its series.
int64_t prompt_window(const ReleaseSeries& node, const OffsetSearch& search) {
  auto w = static_cast<size_t>(static_cast<double>(search.prompt_in_window) / prompt_share(node));
  return static_cast<int64_t>(std::min(std::max(w, search.window), std::max(search.window, search.max_prompt_window)));
}

// Where the recordings kept every rank's entries: the matching that alone
// keeps causality (analyze/clock_causality.h) is the right one, whatever the
// spreads say, moved there if it is an instance or two off, and the offset
// put inside the bounds causality sets; nullopt where causality does not
// tell (steps too regular) and the spreads must.
std::optional<ClockOffset> by_causality(const std::string& lane, const ReleaseSeries& ref, const ReleaseSeries& node,
                                        std::vector<Matched> matched, const ClockOffset& line,
                                        const OffsetSearch& search, CausalJudgement* undecided = nullptr) {
  auto pairs_of = [](const std::vector<Matched>& ms) {
    std::vector<CausalPair> pairs;
    pairs.reserve(ms.size());
    for (const Matched& m : ms) pairs.push_back({m.node_index, m.ref_index});
    return pairs;
  };
  CausalJudgement judged = judge_causality(ref, node, pairs_of(matched), line.drift_ppm, line.anchor_ns);
  if (!judged.side) {
    if (undecided) *undecided = std::move(judged);
    return std::nullopt;
  }
  ClockOffset placed = line;
  if (*judged.side != 0) {
    std::vector<Matched> moved;
    for (Matched m : matched) {
      auto k = static_cast<int64_t>(m.ref_index) + *judged.side;
      if (k < 0 || k >= static_cast<int64_t>(ref.release_ns.size())) continue;
      m.ref_index = static_cast<size_t>(k);
      m.diff_ns = ref.release_ns[m.ref_index] - m.node_ns;
      m.prompt =
          ref.prompt.empty() || node.prompt.empty() || (prompt_at(node, m.node_index) && prompt_at(ref, m.ref_index));
      moved.push_back(m);
    }
    if (moved.size() < search.min_matched) return std::nullopt;
    placed = fit_prompt(moved, lane, search.min_matched);
    matched = std::move(moved);
  }
  CausalFit fit = causal_fit(ref, node, pairs_of(matched), 0, placed.drift_ppm, placed.anchor_ns);
  if (auto bounded = causal_offset(fit, placed.offset_ns)) {
    placed.offset_ns = bounded->offset_ns;
    placed.causal_width_ns = bounded->width_ns;
  }
  return placed;
}

// The spreads' search: on the pairs prompt on both nodes first where
// run-queue waits were kept; on every pair where that finds no shift that
// stands out (`prompt` then false, `prompt_said` why).
std::optional<WindowMatch> spread_search(const ReleaseSeries& ref, const ReleaseSeries& node,
                                         const OffsetSearch& search, bool& prompt, std::string& prompt_said) {
  std::optional<WindowMatch> chosen;
  prompt = prompt_share(ref) >= kMinPromptShare && prompt_share(node) >= kMinPromptShare;
  if (prompt) {
    chosen = search_windows(ref, node, prompt_window(node, search), true, search);
    if (chosen && !stands_out(chosen->match, true, search))
      prompt_said = fmt::format(
          "; on the releases that waited for no CPU on either node, {:.0f}% of the best shift's differences agree "
          "within {}, {:.0f}% of the next's",
          chosen->match.agreeing * 100, format_ns(static_cast<double>(kPromptAgreeNs)),
          chosen->match.runner_up_agreeing * 100);
  }
  if (!chosen || !stands_out(chosen->match, prompt, search)) {
    chosen = search_windows(ref, node, static_cast<int64_t>(search.window), false, search);
    prompt = false;
  }
  return chosen;
}

// Every node release matched around the chosen window's shift.
std::vector<Matched> match_at(const std::string& lane, const ReleaseSeries& ref, const ReleaseSeries& node,
                              const WindowMatch& chosen, bool prompt, const OffsetSearch& search) {
  const std::vector<int64_t>& r = ref.release_ns;
  const std::vector<int64_t>& n = node.release_ns;
  std::vector<int64_t> diffs;
  auto ref_size = static_cast<int64_t>(r.size());
  int64_t shift = chosen.match.shift;
  for (int64_t j = std::max(chosen.start, -shift); j < std::min(chosen.start + chosen.w, ref_size - shift); ++j)
    if (!prompt || (prompt_at(node, static_cast<size_t>(j)) && prompt_at(ref, static_cast<size_t>(j + shift))))
      diffs.push_back(r[static_cast<size_t>(j + shift)] - n[static_cast<size_t>(j)]);
  int64_t coarse = upper_median(diffs);
  // Half the reference's usual step: a release further than that from any
  // reference release is one the reference did not see.
  std::vector<int64_t> steps;
  for (size_t i = 1; i < r.size(); ++i) steps.push_back(r[i] - r[i - 1]);
  int64_t tolerance = std::max<int64_t>(1, upper_median(steps) / 2);
  return match_nearest(ref, node, coarse, static_cast<size_t>(chosen.start + chosen.w / 2), tolerance, lane,
                       search.min_matched);
}

// Checked over every match, not a window's sample: the same releases one
// instance either way must spread clearly wider. On busy nodes (waits
// ~1 ms) a window's best shift stood out by chance one step off (a node
// placed 16 ms wrong beside two busy loops, 1 run in 5): left out, said
// why, rather than put a step away.
Result<ClockOffset> unless_a_neighbour_fits(const std::string& lane, const ReleaseSeries& ref,
                                            const std::vector<Matched>& matched, const ClockOffset& line,
                                            const OffsetSearch& search) {
  const std::vector<int64_t>& r = ref.release_ns;
  int64_t neighbour = INT64_MAX;
  for (int side : {-1, 1}) {
    std::vector<int64_t> diffs;
    for (const Matched& m : matched) {
      auto k = static_cast<int64_t>(m.ref_index) + side;
      if (k >= 0 && k < static_cast<int64_t>(r.size()))
        diffs.push_back(r[static_cast<size_t>(k)] - m.node_ns - (line.at(m.node_ns) - line.offset_ns));
    }
    if (diffs.size() >= search.min_matched) neighbour = std::min(neighbour, spread_of(diffs, upper_median(diffs)));
  }
  ShiftMatch whole{0, line.spread_ns, neighbour, 0, 0};
  if (!stands_out(whole, false, search))
    return make_error(
        "{}: matched one instance off, its releases fit nearly as well (they spread {} at the best match, {} one "
        "instance off, over {} matched): the nodes' waits for a CPU hide which instance is which",
        lane, format_ns(static_cast<double>(line.spread_ns)), format_ns(static_cast<double>(neighbour)),
        matched.size());
  return line;
}

Result<ClockOffset> by_shift(const std::string& lane, const ReleaseSeries& ref, const ReleaseSeries& node,
                             const OffsetSearch& search) {
  if (ref.release_ns.size() < search.min_matched || node.release_ns.size() < search.min_matched)
    return make_error("{}: {} and {} instances (at least {} on each node needed)", lane, ref.release_ns.size(),
                      node.release_ns.size(), search.min_matched);
  bool prompt = false;
  std::string prompt_said;  // why the prompt search did not place it
  std::optional<WindowMatch> chosen = spread_search(ref, node, search, prompt, prompt_said);
  if (!chosen) return make_error("{}: the two nodes' instances never overlap by {}", lane, search.min_matched);
  bool spreads_decide = stands_out(chosen->match, prompt, search);
  auto too_regular = [&lane, &prompt_said, spreads = chosen->match](const std::string& causal_said) {
    return make_error(
        "{}: its steps repeat too regularly to match the nodes' instances without sequence numbers (the best match "
        "spreads {}, the next {}{}{})",
        lane, format_ns(static_cast<double>(spreads.spread)), format_ns(static_cast<double>(spreads.runner_up)),
        prompt_said, causal_said);
  };
  // Where both recordings kept the entries, causality picks the shift (a
  // window in which a single one keeps it; on busy nodes the spreads' best
  // was a step off where it stood out at all), and over every match moves
  // it where it is still an instance or two off and bounds the offset.
  // Where it does not tell (steps too regular), the spreads' checks stand.
  bool causal = causality_known(ref, node);
  std::string causal_said;
  auto found = causal ? causal_windows(ref, node, search.window, search.windows, causal_said) : std::nullopt;
  if (found) {
    WindowMatch at{ShiftMatch{found->shift, 0, 0, 0, 0}, found->start, found->w};
    std::vector<Matched> matched = match_at(lane, ref, node, at, false, search);
    if (matched.size() >= search.min_matched) {
      ClockOffset line = fit_prompt(matched, lane, search.min_matched);
      if (auto placed = by_causality(lane, ref, node, matched, line, search)) return *placed;
    }
    causal_said = "; causality kept a single shift in a window but not over every match";
  }
  if (!spreads_decide) return too_regular(causal_said);
  std::vector<Matched> matched = match_at(lane, ref, node, *chosen, prompt, search);
  if (matched.size() < search.min_matched)
    return make_error("{}: only {} instance(s) matched on the estimated clock", lane, matched.size());
  ClockOffset line = fit_prompt(matched, lane, search.min_matched);
  CausalJudgement undecided;
  if (causal)
    if (auto placed = by_causality(lane, ref, node, matched, line, search, &undecided)) return *placed;
  if (prompt) {
    // Undecided by causality, but kept less causal than a match a step or
    // two away: no placement (a test run: 12 ms off on 35 prompt pairs, spread 19 us).
    if (auto side = more_causal_side(undecided))
      return make_error(
          "{}: the releases that waited for no CPU on either node agree on a match that causality keeps less than "
          "the match {:+d} instance(s) away ({}): the nodes' waits hide which instance is which",
          lane, *side, undecided.said);
    return line;
  }
  return unless_a_neighbour_fits(lane, ref, matched, line, search);
}

// A lane long enough to fit the drift on; then one whose instances are known; then one whose releases spread
// under half as wide on at least half as many matches (a lane whose exits
// wait ~20 ms for a CPU fits the drift on its noise: -151 ppm against
// -55 ppm on the other lane of a job in two QEMU guests); then the most
// matches, then the tightest.
bool better_lane(const ClockOffset& a, const ClockOffset& b) {
  auto drift_fitted = [](const ClockOffset& c) { return c.span_ns >= kMinDriftSpanNs; };
  if (drift_fitted(a) != drift_fitted(b)) return drift_fitted(a);
  // Instances known (by number, or bounded by causality) first: a spread
  // says the releases agree, not that they are the right ones (a test run: a
  // prompt lane a step off won).
  auto known = [](const ClockOffset& c) { return c.numbered || c.causal_width_ns > 0; };
  if (known(a) != known(b)) return known(a);
  auto much_tighter = [](const ClockOffset& x, const ClockOffset& y) {
    return 2 * x.spread_ns < y.spread_ns && 2 * x.matched >= y.matched;
  };
  if (much_tighter(a, b) || much_tighter(b, a)) return much_tighter(a, b);
  if (a.matched != b.matched) return a.matched > b.matched;
  return a.spread_ns < b.spread_ns;
}

}  // namespace

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
    auto estimate =
        numbered ? by_sequence(lane, theirs->second, mine, search) : by_shift(lane, theirs->second, mine, search);
    if (!estimate) {
      reasons += (reasons.empty() ? "" : "; ") + estimate.error().message;
      continue;
    }
    if (!chosen || better_lane(*estimate, *chosen)) chosen = *estimate;
  }
  if (chosen) return *chosen;
  if (shared == 0) return make_error("no collective of a communicator seen on both nodes");
  return make_error("{}", reasons);
}

}  // namespace slowburn
