// Which instance is which from causality: no rank leaves a synchronizing
// collective before every rank came in, on any node. Late exits (a busy
// node) only loosen the bounds, so the right matching always fits and the
// offset lands inside them; one instance off does not fit where the steps
// vary more than the waits; perfectly regular steps leave it undecided.
#include "analyze/clock_causality.h"

#include <gtest/gtest.h>

#include <random>

#include "analyze/clock_offsets.h"

namespace slowburn::clock_causality_test {
namespace {

// A job of two one-rank nodes: per instance the release on the reference
// clock, when each rank came in and when each left.
struct Job {
  std::vector<int64_t> release_ns;
  std::vector<int64_t> entry_a_ns, entry_b_ns;  // on the reference clock
  std::vector<int64_t> exit_a_ns, exit_b_ns;
};

// Releases ~10 ms apart (`jitter_share` of it), the collective 20 us
// after its last arrival, the other rank up to 3 ms before, and each exit
// late by ~1 ms (exponential) where `busy`: the rank got its CPU back after
// the release.
Job busy_job(size_t n, double jitter_share, bool busy, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> jitter(0, 10e6 * jitter_share);
  std::uniform_real_distribution<double> apart(0, 3e6);
  std::bernoulli_distribution a_last(0.5);
  std::exponential_distribution<double> late(1.0 / 1e6);
  Job job;
  double release = 1.7e18;
  for (size_t i = 0; i < n; ++i) {
    release += 10e6 + jitter(rng);
    double last = release - 20'000, other = last - apart(rng);
    bool a_is_last = a_last(rng);
    double a = a_is_last ? last : other, b = a_is_last ? other : last;
    job.release_ns.push_back(static_cast<int64_t>(release));
    job.entry_a_ns.push_back(static_cast<int64_t>(a));
    job.entry_b_ns.push_back(static_cast<int64_t>(b));
    job.exit_a_ns.push_back(static_cast<int64_t>(release + (busy ? late(rng) : 2'000.0)));
    job.exit_b_ns.push_back(static_cast<int64_t>(release + (busy ? late(rng) : 2'000.0)));
  }
  return job;
}

// One node's series of instances [first, last), its clock `skew_ns` behind
// the reference's, with its entries where `entries`.
ReleaseSeries series_of(const std::vector<int64_t>& exits, const std::vector<int64_t>& entries, int64_t skew_ns,
                        size_t first, size_t last, bool with_entries = true) {
  ReleaseSeries s;
  for (size_t i = first; i < last; ++i) {
    s.release_ns.push_back(exits[i] - skew_ns);
    if (with_entries) s.last_entry_ns.push_back(entries[i] - skew_ns);
  }
  return s;
}

// Node release j matched to reference release j + first + side.
std::vector<CausalPair> pairs_at(size_t n, size_t first, int side) {
  std::vector<CausalPair> pairs;
  for (size_t j = 0; j < n; ++j) pairs.push_back({j, j + first + static_cast<size_t>(side)});
  return pairs;
}

TEST(ClockCausality, TheRightMatchingAloneFitsOnBusyNodes) {
  Job job = busy_job(2000, 0.03, true, 5);
  ReleaseSeries ref = series_of(job.exit_a_ns, job.entry_a_ns, 0, 0, job.release_ns.size());
  const int64_t skew = 40'000'000;
  ReleaseSeries node = series_of(job.exit_b_ns, job.entry_b_ns, skew, 100, 1900);
  size_t n = node.release_ns.size();
  CausalJudgement right = judge_causality(ref, node, pairs_at(n, 100, 0), 0, 0);
  ASSERT_TRUE(right.side) << right.said;
  EXPECT_EQ(*right.side, 0) << right.said;
  EXPECT_EQ(right.fits[0].feasible, right.fits[0].chunks) << "late exits only loosen the bounds: " << right.said;
  // Matched one instance off (what the spreads chose beside two busy
  // loops): causality says which way to move it.
  for (int off : {-1, 1}) {
    CausalJudgement moved = judge_causality(ref, node, pairs_at(n, 100, off), 0, 0);
    ASSERT_TRUE(moved.side) << moved.said;
    EXPECT_EQ(*moved.side, -off) << moved.said;
  }
}

TEST(ClockCausality, TheOffsetLandsInsideTheBoundsWhateverTheDelays) {
  // Only one node busy: the median difference carries its ~1 ms of
  // lateness (0.7 ms, the exponential's median), the bounds do not.
  Job job = busy_job(2000, 0.03, true, 9);
  for (size_t i = 0; i < job.exit_a_ns.size(); ++i) job.exit_a_ns[i] = job.release_ns[i] + 2'000;
  const int64_t skew = -2'500'000'000;
  ReleaseSeries ref = series_of(job.exit_a_ns, job.entry_a_ns, 0, 0, job.release_ns.size());
  ReleaseSeries node = series_of(job.exit_b_ns, job.entry_b_ns, skew, 100, 1900);
  CausalFit fit = causal_fit(ref, node, pairs_at(node.release_ns.size(), 100, 0), 0, 0, 0);
  ASSERT_EQ(fit.feasible, fit.chunks);
  for (const CausalBounds& b : fit.bounds) {
    EXPECT_LE(b.lower_ns, skew);
    EXPECT_GE(b.upper_ns, skew);
  }
  int64_t biased = skew - 700'000;  // the node's exits late: the differences smaller
  auto placed = causal_offset(fit, biased);
  ASSERT_TRUE(placed);
  // Off by how tightly the node's earliest exits follow the reference's
  // last entries (the lower bound), not by the 700 us of lateness.
  EXPECT_NEAR(static_cast<double>(placed->offset_ns), static_cast<double>(skew), 100'000);
  EXPECT_GT(placed->width_ns, 0);
  EXPECT_LT(placed->width_ns, 200'000);
}

TEST(ClockCausality, ABusyNodeTheSpreadsCannotPlaceIsPlacedThroughEstimateClockOffset) {
  // Both nodes busy and no run-queue waits kept: the spreads refuse ("too
  // regularly", as analyze said of busy nodes); with the entries the node
  // is placed within the bounds.
  Job job = busy_job(3000, 0.03, true, 3);
  for (int64_t skew : {int64_t{37'000'000}, int64_t{-2'500'000'000}}) {
    ReleaseSeries ref = series_of(job.exit_a_ns, job.entry_a_ns, 0, 0, job.release_ns.size());
    ReleaseSeries node = series_of(job.exit_b_ns, job.entry_b_ns, skew, 150, 2700);
    auto offset = estimate_clock_offset({{"lane", ref}}, {{"lane", node}});
    ASSERT_TRUE(offset) << offset.error().message;
    EXPECT_NEAR(static_cast<double>(offset->offset_ns), static_cast<double>(skew), 50'000) << "skew " << skew;
    EXPECT_GT(offset->causal_width_ns, 0);
    EXPECT_LE(offset->uncertainty_ns(), offset->spread_ns);
    EXPECT_GT(offset->matched, 2400u);
    ReleaseSeries blind_ref = series_of(job.exit_a_ns, job.entry_a_ns, 0, 0, job.release_ns.size(), false);
    ReleaseSeries blind_node = series_of(job.exit_b_ns, job.entry_b_ns, skew, 150, 2700, false);
    auto blind = estimate_clock_offset({{"lane", blind_ref}}, {{"lane", blind_node}});
    if (blind) {
      // Where the spreads place it at all, the late exits pull it.
      EXPECT_GT(std::llabs(blind->offset_ns - skew), std::llabs(offset->offset_ns - skew)) << "skew " << skew;
      EXPECT_EQ(blind->causal_width_ns, 0);
    }
  }
}

TEST(ClockCausality, ALaneCausalityBoundsIsPreferredToATighterOneItCannotJudge) {
  // A busy lane with every rank's entries (causality bounds it, its late
  // exits spread ~1 ms) beside a quiet lane without them (spread ~10 us,
  // placed by the spreads alone, fewer matches): the spreads say how well
  // the matched releases agree, not that they are the right instances (a test run:
  // a prompt lane one step off, spread 19 us, beat the bounded lane).
  Job busy = busy_job(3000, 0.03, true, 3), quiet = busy_job(2000, 0.03, false, 11);
  const int64_t skew = 37'000'000;
  LaneReleases ref{{"bounded", series_of(busy.exit_a_ns, busy.entry_a_ns, 0, 0, busy.release_ns.size())},
                   {"tight", series_of(quiet.exit_a_ns, quiet.entry_a_ns, 0, 0, quiet.release_ns.size(), false)}};
  LaneReleases node{{"bounded", series_of(busy.exit_b_ns, busy.entry_b_ns, skew, 150, 2700)},
                    {"tight", series_of(quiet.exit_b_ns, quiet.entry_b_ns, skew, 100, 1900, false)}};
  auto tight_alone = estimate_clock_offset({{"tight", ref["tight"]}}, {{"tight", node["tight"]}});
  ASSERT_TRUE(tight_alone) << "the premise: the quiet lane is placed alone: " << tight_alone.error().message;
  auto bounded_alone = estimate_clock_offset({{"bounded", ref["bounded"]}}, {{"bounded", node["bounded"]}});
  ASSERT_TRUE(bounded_alone) << bounded_alone.error().message;
  ASSERT_LT(2 * tight_alone->spread_ns, bounded_alone->spread_ns) << "the premise: much tighter";
  auto offset = estimate_clock_offset(ref, node);
  ASSERT_TRUE(offset) << offset.error().message;
  EXPECT_EQ(offset->lane, "bounded");
  EXPECT_GT(offset->causal_width_ns, 0);
  EXPECT_NEAR(static_cast<double>(offset->offset_ns), static_cast<double>(skew), 50'000);
  // Numbered from the communicator's creation, the tight lane's instances
  // are known too: the tighter of the two then.
  for (auto* s : {&ref["tight"], &node["tight"]}) s->seq.clear();
  for (size_t i = 0; i < ref["tight"].release_ns.size(); ++i) ref["tight"].seq.push_back(i);
  for (size_t i = 0; i < node["tight"].release_ns.size(); ++i) node["tight"].seq.push_back(i + 100);
  auto numbered = estimate_clock_offset(ref, node);
  ASSERT_TRUE(numbered) << numbered.error().message;
  EXPECT_EQ(numbered->lane, "tight");
  EXPECT_TRUE(numbered->numbered);
  EXPECT_NEAR(static_cast<double>(numbered->offset_ns), static_cast<double>(skew), 50'000);
}

TEST(ClockCausality, AShiftThatKeepsClearlyMorePairsCausalContradictsTheMatch) {
  auto judged = [](size_t pairs0, size_t kept0, size_t pairs1, size_t kept1) {
    CausalJudgement j;
    j.fits[0].pairs = pairs0;
    j.fits[0].kept = kept0;
    j.fits[1].pairs = pairs1;
    j.fits[1].kept = kept1;
    j.fits[-1].pairs = pairs1;
    j.fits[-1].kept = kept1 / 2;
    return j;
  };
  EXPECT_EQ(more_causal_side(judged(463, 440, 462, 462)), 1) << "4.8% more, 22 pairs";
  EXPECT_FALSE(more_causal_side(judged(1000, 999, 999, 999))) << "0.1% more: as good";
  EXPECT_FALSE(more_causal_side(judged(100, 99, 98, 98))) << "1% more, but under 2 pairs";
  EXPECT_FALSE(more_causal_side(judged(463, 462, 462, 440))) << "the match keeps more";
}

TEST(ClockCausality, RegularStepsLeaveItUndecided) {
  // Every release 10 ms after the last: one instance off fits as well as
  // the right one (its bounds are the right ones a step on); the spreads'
  // rule (refuse) stands.
  Job job = busy_job(1000, 0.0, true, 4);
  ReleaseSeries ref = series_of(job.exit_a_ns, job.entry_a_ns, 0, 0, job.release_ns.size());
  ReleaseSeries node = series_of(job.exit_b_ns, job.entry_b_ns, 25'000'000, 100, 900);
  CausalJudgement judged = judge_causality(ref, node, pairs_at(node.release_ns.size(), 100, 0), 0, 0);
  EXPECT_FALSE(judged.side) << judged.said;
  auto offset = estimate_clock_offset({{"lane", ref}}, {{"lane", node}});
  ASSERT_FALSE(offset) << offset->offset_ns << " ns: a shift " << (offset->offset_ns - 25'000'000) / 10'000'000
                       << " steps off accepted";
  EXPECT_NE(offset.error().message.find("too regularly"), std::string::npos) << offset.error().message;
}

TEST(ClockCausality, ACallThatDoesNotSynchronizeDecidesNothing) {
  // Each rank leaves 2 us after it came in (a call with nothing to wait
  // for): no matching keeps causality, and nothing is moved.
  Job job = busy_job(1000, 0.03, false, 6);
  for (size_t i = 0; i < job.release_ns.size(); ++i) {
    job.exit_a_ns[i] = job.entry_a_ns[i] + 2'000;
    job.exit_b_ns[i] = job.entry_b_ns[i] + 2'000;
  }
  ReleaseSeries ref = series_of(job.exit_a_ns, job.entry_a_ns, 0, 0, job.release_ns.size());
  ReleaseSeries node = series_of(job.exit_b_ns, job.entry_b_ns, 0, 100, 900);
  CausalJudgement judged = judge_causality(ref, node, pairs_at(node.release_ns.size(), 100, 0), 0, 0);
  EXPECT_FALSE(judged.side) << judged.said;
  EXPECT_LT(judged.fits[0].share(), 0.75) << judged.said;
}

TEST(ClockCausality, KnownOnlyWhereBothSeriesCarryEntries) {
  ReleaseSeries with{{1, 2}, {}, {}, {0, 1}}, without{{1, 2}, {}, {}, {}};
  EXPECT_TRUE(causality_known(with, with));
  EXPECT_FALSE(causality_known(with, without));
  EXPECT_FALSE(causality_known(without, with));
}

}  // namespace
}  // namespace slowburn::clock_causality_test
