// The straggler detector's sequential test (DetectorConfig::sequential):
// per-instance evidence, named as soon as the log-likelihood ratio crosses
// ln(ARL0), never on healthy, asymmetric or node-wide noisy jobs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "detect/straggler.h"
#include "support/synthetic_job.h"

namespace slowburn::sequential_detector_test {
namespace {

using namespace testing;

constexpr uint64_t kJobStartNs = 1'000'000'000;  // SyntheticJob's first step

double max_statistic(const Feed& run) {
  double max = 0;
  for (const WindowReport& w : run.windows)
    for (const RankWindowStats& s : w.ranks) max = std::max(max, s.sequential_statistic.value_or(0));
  return max;
}

TEST(SequentialTest, A1_3xRankIsNamedWithinASecondBySequentialEvidence) {
  SyntheticJob job;
  job.compute_ns = [](int rank, int) { return rank == 1 ? 3.9e6 : 3e6; };
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, job.run(2000));
  ASSERT_FALSE(run.findings.empty());
  EXPECT_EQ(culprits(run.findings), std::set<int>{1});
  const Finding& f = run.findings.front();
  EXPECT_EQ(f.detector, "sequential");
  // 12 events (ceil(ln 1e8 / ln 5)) of ~4 ms steps, then the next advance (100 ms).
  EXPECT_LT(f.detected_ns - kJobStartNs, 250'000'000u);
  EXPECT_GE(f.sequential_statistic, f.sequential_threshold);
  EXPECT_NEAR(f.sequential_threshold, std::log(1e8), 1e-9);
  EXPECT_EQ(f.sequential_arl0, 1e8);
  EXPECT_EQ(f.instances_flagged, 12u);
  EXPECT_EQ(f.instances_considered, 12u);
  EXPECT_GT(f.last_fraction, 0.9);
  EXPECT_GT(f.blame_share, 0.15);
  EXPECT_GT(f.lateness_median_ns, 0.5e6);
  EXPECT_NE(f.summary.find("sequential test"), std::string::npos) << f.summary;
  // One finding for the rank: the window rule does not name it again.
  EXPECT_EQ(run.findings.size(), 1u);
  SessionVerdict v = d.verdict(static_cast<uint64_t>(job.prev_exit[0]));
  ASSERT_EQ(v.stragglers.size(), 1u);
  EXPECT_EQ(v.stragglers.front().culprit.rank, 1);
  EXPECT_TRUE(v.episodes.empty());
}

TEST(SequentialTest, WithoutItTheWindowRuleNamesTheSameRankLater) {
  SyntheticJob job;
  job.compute_ns = [](int rank, int) { return rank == 1 ? 3.9e6 : 3e6; };
  DetectorConfig config;
  config.sequential = false;
  StragglerDetector d = make_detector(4, config);
  Feed run = feed(d, job.run(2000));
  ASSERT_FALSE(run.findings.empty());
  EXPECT_EQ(run.findings.front().detector, "persistence");
  EXPECT_GT(run.findings.front().detected_ns - kJobStartNs, 1'500'000'000u);
  EXPECT_EQ(max_statistic(run), 0);
}

TEST(SequentialTest, HealthyAndAsymmetricJobsStayWellBelowTheThreshold) {
  for (double asymmetry : {0.0, 0.03, 0.06}) {
    SyntheticJob job;
    job.ranks = 5;
    job.noise_ns = 100e3;
    job.compute_ns = [asymmetry](int rank, int) { return rank < 2 ? 3e6 * (1 + asymmetry) : 3e6; };
    StragglerDetector d = make_detector(5);
    Feed run = feed(d, job.run(5000));
    EXPECT_TRUE(run.findings.empty()) << asymmetry << ": " << run.findings.front().summary;
    EXPECT_LT(max_statistic(run), std::log(1e8) / 2) << asymmetry;
  }
}

TEST(SequentialTest, NodeWideNoiseThatDelaysEveryRankInTurnNamesNobody) {
  // A CPU hog outside the job: in 10% of the steps one rank (any) loses a
  // whole millisecond; each rank's event rate is ~2.5%, far below p0.
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> whom(0, 3);
  std::bernoulli_distribution hit(0.10);
  std::vector<int> victim(20'000);
  for (int& v : victim) v = hit(rng) ? whom(rng) : -1;
  SyntheticJob job;
  job.compute_ns = [&](int rank, int step) { return 3e6 + (victim[static_cast<size_t>(step)] == rank ? 1e6 : 0); };
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, job.run(20'000));
  EXPECT_TRUE(run.findings.empty()) << run.findings.front().summary;
  EXPECT_LT(max_statistic(run), std::log(1e8));
}

TEST(SequentialTest, ALeadBelowTheFloorIsNoEvidence) {
  // Rank 2 is last in every instance, by 5% of the step: below the 10%
  // lead floor, no event; the windows' CUSUM is what catches such onsets.
  SyntheticJob job;
  job.noise_ns = 10e3;
  job.compute_ns = [](int rank, int) { return rank == 2 ? 3.15e6 : 3e6; };
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, job.run(1000));
  EXPECT_EQ(max_statistic(run), 0);
  for (const Finding& f : run.findings) EXPECT_NE(f.detector, "sequential") << f.summary;
}

TEST(SequentialTest, ARecoveredRankIsClearedAndARelapseIsANewFinding) {
  SyntheticJob job;
  job.compute_ns = [](int rank, int step) { return rank == 3 && (step < 300 || step >= 1500) ? 4.5e6 : 3e6; };
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, job.run(2500));
  std::string all;
  for (const Finding& f : run.findings) all += f.detector + " " + std::to_string(f.detected_ns) + "\n";
  ASSERT_EQ(run.findings.size(), 2u) << all;
  EXPECT_EQ(culprits(run.findings), std::set<int>{3});
  EXPECT_EQ(run.findings[0].detector, "sequential");
  EXPECT_EQ(run.findings[1].detector, "sequential");
  EXPECT_GT(run.findings[1].detected_ns, run.findings[0].detected_ns + 3'000'000'000ull);
}

TEST(SequentialTest, TwoRanksAreLeftToTheWindowRule) {
  SyntheticJob job;
  job.ranks = 2;
  job.compute_ns = [](int rank, int) { return rank == 0 ? 4e6 : 3e6; };
  StragglerDetector d = make_detector(2);
  Feed run = feed(d, job.run(1000));
  ASSERT_FALSE(run.findings.empty());
  EXPECT_EQ(run.findings.front().detector, "persistence");
  EXPECT_EQ(culprits(run.findings), std::set<int>{0});
  EXPECT_EQ(max_statistic(run), 0);
}

}  // namespace
}  // namespace slowburn::sequential_detector_test
