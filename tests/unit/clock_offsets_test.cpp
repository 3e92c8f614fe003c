// Node clock offsets from collective releases: recovered from the data
// whatever the sign and size of the skew, through lost instances and
// different start times; refused when the steps are too regular to match.
#include "analyze/clock_offsets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "analyze/clock_placement.h"

namespace slowburn::clock_offsets_test {
namespace {

// Releases of a job whose steps take ~10 ms with a few % of jitter, on the
// reference clock.
std::vector<int64_t> job_releases(size_t n, double jitter_share, uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> jitter(0, 10e6 * jitter_share);
  std::vector<int64_t> out;
  double t = 1.7e18;  // a wall clock in ns
  for (size_t i = 0; i < n; ++i) {
    t += 10e6 + jitter(rng);
    out.push_back(static_cast<int64_t>(t));
  }
  return out;
}

// The same releases as a node whose clock is `skew_ns` behind the
// reference (offset = +skew), traced from `first` to `last`, with a
// collective spread of up to 20 us and every 97th instance lost.
ReleaseSeries as_node(const std::vector<int64_t>& reference, int64_t skew_ns, size_t first, size_t last) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> spread(0, 20'000);
  ReleaseSeries s;
  for (size_t i = first; i < last; ++i)
    if (i % 97 != 0) s.release_ns.push_back(reference[i] - skew_ns + spread(rng));
  return s;
}

TEST(ClockOffsets, RecoveredByShiftWhateverTheSignAndSize) {
  auto ref = job_releases(3000, 0.03);
  for (int64_t skew : {int64_t{37'000'000}, int64_t{-42'000'000}, int64_t{3'500'000'000}, int64_t{-2'000'000'000}}) {
    LaneReleases a{{"mpi:1:cid=0/mpi.allreduce", {ref, {}, {}, {}}}};
    LaneReleases b{{"mpi:1:cid=0/mpi.allreduce", as_node(ref, skew, 150, 2700)}};
    auto offset = estimate_clock_offset(a, b);
    ASSERT_TRUE(offset) << offset.error().message;
    EXPECT_NEAR(static_cast<double>(offset->offset_ns), static_cast<double>(skew), 30'000) << "skew " << skew;
    EXPECT_LT(offset->spread_ns, 20'000);
    EXPECT_GT(offset->matched, 2400u) << "every release the two share, lost ones aside";
  }
}

TEST(ClockOffsets, BySequenceNumbersWithoutSearching) {
  auto ref = job_releases(500, 0.0);  // perfectly regular: numbers need no search
  ReleaseSeries a{ref, {}, {}, {}}, b;
  for (size_t i = 0; i < ref.size(); ++i) {
    a.seq.push_back(i + 1);
    if (i >= 40) {
      b.release_ns.push_back(ref[i] + 5'000'000);
      b.seq.push_back(i + 1);
    }
  }
  auto offset = estimate_clock_offset({{"gloo:g/gloo.allreduce", a}}, {{"gloo:g/gloo.allreduce", b}});
  ASSERT_TRUE(offset) << offset.error().message;
  EXPECT_EQ(offset->offset_ns, -5'000'000);
  EXPECT_EQ(offset->matched, 460u);
}

TEST(ClockOffsets, TooRegularStepsAreRefusedNotGuessed) {
  auto ref = job_releases(1000, 0.0);
  auto offset = estimate_clock_offset({{"lane", {ref, {}, {}, {}}}}, {{"lane", as_node(ref, 25'000'000, 100, 900)}});
  ASSERT_FALSE(offset);
  EXPECT_NE(offset.error().message.find("too regularly"), std::string::npos) << offset.error().message;
}

TEST(ClockOffsets, NothingSharedOrTooFewIsSaid) {
  auto ref = job_releases(100, 0.03);
  auto none = estimate_clock_offset({{"a", {ref, {}, {}, {}}}}, {{"b", {ref, {}, {}, {}}}});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no collective of a communicator seen on both nodes"), std::string::npos);
  auto few = estimate_clock_offset({{"a", {ref, {}, {}, {}}}}, {{"a", as_node(ref, 0, 0, 10)}});
  ASSERT_FALSE(few);
  EXPECT_NE(few.error().message.find("at least 20"), std::string::npos) << few.error().message;
}

TEST(ClockOffsets, TheLaneWithMostMatchesDecides) {
  auto ref = job_releases(2000, 0.03);
  auto other = job_releases(60, 0.03, 99);
  LaneReleases a{{"big", {ref, {}, {}, {}}}, {"small", {other, {}, {}, {}}}};
  LaneReleases b{{"big", as_node(ref, 8'000'000, 0, 2000)}, {"small", as_node(other, 8'000'000, 0, 60)}};
  auto offset = estimate_clock_offset(a, b);
  ASSERT_TRUE(offset) << offset.error().message;
  EXPECT_EQ(offset->lane, "big");
  EXPECT_NEAR(static_cast<double>(offset->offset_ns), 8e6, 30'000);
}

}  // namespace
}  // namespace slowburn::clock_offsets_test

namespace slowburn::clock_offsets_test {
namespace {

TEST(ClockOffsets, AStretchOfTheNodeWhereTheRecordingsOverlapGivesTheSameOffset) {
  // analyze keeps only node_releases of a node: the stretch around the
  // middle of its overlap with the reference still recovers the offset.
  auto ref = job_releases(20000, 0.03);
  ReleaseSeries node = as_node(ref, -1'250'000'000, 3000, 20000);
  int64_t center = node.release_ns[node.release_ns.size() / 2];
  ReleaseSeries part = section_near(node, center, 1000);
  ASSERT_EQ(part.release_ns.size(), 1000u);
  EXPECT_LE(part.release_ns.front(), center);
  EXPECT_GE(part.release_ns.back(), center);
  EXPECT_TRUE(std::is_sorted(part.release_ns.begin(), part.release_ns.end()));
  auto offset = estimate_clock_offset({{"lane", {ref, {}, {}, {}}}}, {{"lane", part}});
  ASSERT_TRUE(offset) << offset.error().message;
  EXPECT_NEAR(static_cast<double>(offset->offset_ns), -1.25e9, 30'000);
  EXPECT_GT(offset->matched, 950u);

  // Near either end the stretch stays whole; a short series is kept as is,
  // and sequence numbers travel with their releases.
  EXPECT_EQ(section_near(node, INT64_MIN, 1000).release_ns.front(), node.release_ns.front());
  EXPECT_EQ(section_near(node, INT64_MAX, 1000).release_ns.back(), node.release_ns.back());
  ReleaseSeries numbered{{10, 20, 30, 40}, {1, 2, 3, 4}, {}, {}};
  EXPECT_EQ(section_near(numbered, 25, 10).release_ns.size(), 4u);
  ReleaseSeries two = section_near(numbered, 31, 2);
  EXPECT_EQ(two.release_ns, (std::vector<int64_t>{20, 30}));
  EXPECT_EQ(two.seq, (std::vector<uint64_t>{2, 3}));
}

}  // namespace
}  // namespace slowburn::clock_offsets_test

namespace slowburn::clock_offsets_test {
namespace {

// The node's clock `skew_ns` behind at the reference's first release and
// drifting `ppm` slower from there (its offset grows), with the same
// collective spread and lost instances as as_node.
ReleaseSeries drifting_node(const std::vector<int64_t>& reference, int64_t skew_ns, double ppm) {
  ReleaseSeries s = as_node(reference, skew_ns, 0, reference.size());
  for (int64_t& t : s.release_ns) t -= static_cast<int64_t>(ppm * 1e-6 * static_cast<double>(t - reference.front()));
  return s;
}

TEST(ClockOffsets, ADriftingClockIsALineNotAConstant) {
  // 10 minutes of 10 ms steps; the node's clock drifts 50 ppm (30 ms over
  // the recording): one constant would leave the ends 15 ms off.
  auto ref = job_releases(60'000, 0.03);
  for (double ppm : {50.0, -35.0}) {
    ReleaseSeries node = drifting_node(ref, 40'000'000, ppm);
    auto offset = estimate_clock_offset({{"lane", {ref, {}, {}, {}}}}, {{"lane", node}});
    ASSERT_TRUE(offset) << offset.error().message;
    EXPECT_NEAR(offset->drift_ppm, ppm, 0.5);
    EXPECT_LE(offset->spread_ns, 100'000) << "the releases lie on the line, as on a clock that does not drift";
    EXPECT_GT(offset->matched, 59'000u) << "matched to the ends of the recording";
    // At both ends the line gives what to add within the collective's spread.
    for (size_t i : {size_t{1}, node.release_ns.size() - 1}) {
      int64_t t = node.release_ns[i];
      // The reference release this one is (every 97th lost: index i maps back).
      size_t k = i + i / 96 + 1;
      EXPECT_NEAR(static_cast<double>(t + offset->at(t)), static_cast<double>(ref[k]), 60'000) << "release " << i;
    }
  }
  // Numbered releases fit the same line.
  ReleaseSeries a{ref, {}, {}, {}}, b = drifting_node(ref, -7'000'000, 20.0);
  b.release_ns.clear();
  for (size_t i = 0; i < ref.size(); ++i) {
    a.seq.push_back(i + 1);
    b.release_ns.push_back(ref[i] + 7'000'000 -
                           static_cast<int64_t>(20e-6 * static_cast<double>(ref[i] - ref.front())));
    b.seq.push_back(i + 1);
  }
  auto numbered = estimate_clock_offset({{"gloo", a}}, {{"gloo", b}});
  ASSERT_TRUE(numbered) << numbered.error().message;
  EXPECT_NEAR(numbered->drift_ppm, 20.0, 0.1);
  EXPECT_LE(numbered->spread_ns, 1'000);
}

TEST(ClockOffsets, AShortRecordingHasNoDrift) {
  // Under 10 s of matched releases the slope would be their spread: 0.
  auto ref = job_releases(800, 0.03);
  auto offset = estimate_clock_offset({{"lane", {ref, {}, {}, {}}}}, {{"lane", drifting_node(ref, 3'000'000, 50.0)}});
  ASSERT_TRUE(offset) << offset.error().message;
  EXPECT_EQ(offset->drift_ppm, 0.0);
}

}  // namespace
}  // namespace slowburn::clock_offsets_test

namespace slowburn::clock_offsets_test {
namespace {

TEST(ClockOffsets, ALaneLongEnoughToFitTheDriftOnIsPreferred) {
  // analyze keeps 4096 releases a lane: a lane stepping every 2 ms spans
  // 8 s of them (no drift fitted), one stepping every 100 ms 100 s of 1000.
  auto series = [](size_t n, double step_ns, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> jitter(0, step_ns * 0.03);
    std::vector<int64_t> out;
    double t = 1.7e18;
    for (size_t i = 0; i < n; ++i) out.push_back(static_cast<int64_t>(t += step_ns + jitter(rng)));
    return out;
  };
  auto fast = series(4000, 2e6, 3), slow = series(1000, 100e6, 5);
  LaneReleases a{{"fast", {fast, {}, {}, {}}}, {"slow", {slow, {}, {}, {}}}};
  LaneReleases b{{"fast", drifting_node(fast, 9'000'000, 50.0)}, {"slow", drifting_node(slow, 9'000'000, 50.0)}};
  auto offset = estimate_clock_offset(a, b);
  ASSERT_TRUE(offset) << offset.error().message;
  EXPECT_EQ(offset->lane, "slow") << "fewer matches, but the drift fitted";
  EXPECT_NEAR(offset->drift_ppm, 50.0, 1.0);
  EXPECT_GT(offset->span_ns, kMinDriftSpanNs);
}

}  // namespace
}  // namespace slowburn::clock_offsets_test

namespace slowburn::clock_offsets_test {
namespace {

// A busy node's view of the releases (its ranks wait for CPUs): an
// instance it left within 20 us of the release with probability `prompt`,
// marked prompt as the recording's run-queue waits would say; else
// exponentially late (mean 1 ms), as a rank that got its CPU back then.
// Every 499th instance lost (a window of prompt releases is a few hundred
// long: one lost inside puts the pairs after it a step off; as_node's
// every 97th would leave no window whole). `skew_ns` behind the
// reference's clock.
ReleaseSeries busy_view(const std::vector<int64_t>& truth, int64_t skew_ns, double prompt, uint64_t seed, size_t first,
                        size_t last) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> spread(0, 20'000);
  std::bernoulli_distribution left_promptly(prompt);
  std::exponential_distribution<double> late(1.0 / 1e6);
  ReleaseSeries s;
  for (size_t i = first; i < last; ++i) {
    if (i % 499 == 0) continue;
    bool p = left_promptly(rng);
    s.release_ns.push_back(truth[i] - skew_ns + (p ? spread(rng) : 20'000 + static_cast<int64_t>(late(rng))));
    s.prompt.push_back(p ? 1 : 0);
  }
  return s;
}

TEST(ClockOffsets, OnBusyNodesThePromptReleasesPlaceTheNode) {
  // Both nodes busy, half of each one's exits late by ~1 ms: every shift's
  // differences spread ~1 ms, the true one's and its neighbours' alike.
  // On the releases prompt on both the true shift's spread is the
  // collective's (20 us): the offset within it.
  auto truth = job_releases(3000, 0.03);
  for (int64_t skew : {int64_t{37'000'000}, int64_t{-2'500'000'000}}) {
    ReleaseSeries ref = busy_view(truth, 0, 0.5, 3, 0, truth.size());
    ReleaseSeries node = busy_view(truth, skew, 0.5, 4, 150, 2700);
    auto offset = estimate_clock_offset({{"lane", ref}}, {{"lane", node}});
    ASSERT_TRUE(offset) << offset.error().message;
    EXPECT_NEAR(static_cast<double>(offset->offset_ns), static_cast<double>(skew), 30'000) << "skew " << skew;
    EXPECT_LT(offset->spread_ns, 20'000);
    EXPECT_GT(offset->prompt_matched, 500u);
    EXPECT_GT(offset->matched, 2400u);
    // Without the run-queue waits the same releases cannot be placed (what
    // analyze said of a busy node before).
    ref.prompt.clear();
    node.prompt.clear();
    auto blind = estimate_clock_offset({{"lane", ref}}, {{"lane", node}});
    ASSERT_FALSE(blind) << blind->offset_ns - skew << " ns off";
    EXPECT_NE(blind.error().message.find("too regularly"), std::string::npos) << blind.error().message;
  }
}

TEST(ClockOffsets, TooFewPromptReleasesFallBackToEveryPair) {
  // Under a tenth prompt on a node: searched on every pair, as without
  // run-queue waits (and refused here, busy as it is); an idle job (all
  // prompt) placed as before.
  auto truth = job_releases(3000, 0.03);
  ReleaseSeries ref = busy_view(truth, 0, 1.0, 3, 0, truth.size());
  ReleaseSeries node = busy_view(truth, 5'000'000, 0.05, 4, 150, 2700);
  auto offset = estimate_clock_offset({{"lane", ref}}, {{"lane", node}});
  ASSERT_FALSE(offset) << offset->offset_ns - 5'000'000 << " ns off";
  EXPECT_NE(offset.error().message.find("too regularly"), std::string::npos) << offset.error().message;
  EXPECT_EQ(offset.error().message.find("waited for no CPU"), std::string::npos) << "not searched on prompt pairs";
  ReleaseSeries idle = busy_view(truth, 5'000'000, 1.0, 4, 150, 2700);
  auto placed = estimate_clock_offset({{"lane", ref}}, {{"lane", idle}});
  ASSERT_TRUE(placed) << placed.error().message;
  EXPECT_NEAR(static_cast<double>(placed->offset_ns), 5e6, 30'000);
  EXPECT_EQ(placed->prompt_matched, 0u) << "every pair is prompt: fitted on all";
}

TEST(ClockOffsets, RegularStepsOnBusyNodesAreStillRefused) {
  // Perfectly regular steps: the prompt pairs match one step off as well
  // as at the true shift; refused, said on which releases.
  auto truth = job_releases(1000, 0.0);
  auto offset = estimate_clock_offset({{"lane", busy_view(truth, 0, 0.5, 3, 0, truth.size())}},
                                      {{"lane", busy_view(truth, 25'000'000, 0.5, 4, 100, 900)}});
  ASSERT_FALSE(offset) << offset->offset_ns << " ns: a shift " << (offset->offset_ns - 25'000'000) / 10'000'000
                       << " steps off accepted";
  EXPECT_NE(offset.error().message.find("too regularly"), std::string::npos) << offset.error().message;
  EXPECT_NE(offset.error().message.find("waited for no CPU on either node, 100% of the best shift's"),
            std::string::npos)
      << offset.error().message;
}

}  // namespace
}  // namespace slowburn::clock_offsets_test
