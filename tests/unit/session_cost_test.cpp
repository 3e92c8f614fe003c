// The slow burn (detect/session_cost.h): a rank that costs the job a few
// percent over the session is named with its cost and severity; healthy
// structure (last often by a hair), noise and two equal ranks are not.
#include "detect/session_cost.h"

#include <gtest/gtest.h>

#include <cmath>

#include "detect/straggler.h"
#include "support/synthetic_job.h"

namespace slowburn::session_cost_test {
namespace {

using namespace testing;

constexpr uint64_t kMs = 1'000'000;

SessionVerdict verdict_of(int ranks, SyntheticJob& job, int steps, DetectorConfig config = {}) {
  StragglerDetector d = make_detector(ranks, config);
  Feed run = feed(d, job.run(steps));
  return d.verdict(static_cast<uint64_t>(job.prev_exit[0]));
}

// 8 ranks, 3 ms steps with 50 us of noise; rank 5 computes 5% longer.
SyntheticJob eight_ranks_one_slower(double factor) {
  SyntheticJob job;
  job.ranks = 8;
  job.compute_ns = [factor](int rank, int) { return rank == 5 ? 3e6 * factor : 3e6; };
  return job;
}

TEST(SessionCost, ARankFivePercentSlowerIsNamedMinorWithItsCost) {
  SyntheticJob job = eight_ranks_one_slower(1.05);
  SessionVerdict v = verdict_of(8, job, 3000);
  ASSERT_EQ(v.stragglers.size(), 1u);
  const Finding& f = v.stragglers.front();
  EXPECT_EQ(f.culprit.rank, 5);
  EXPECT_EQ(f.detector, "session-cost");
  EXPECT_EQ(f.severity, "minor");
  ASSERT_TRUE(f.session_cost.has_value());
  // Its 150 us a step, less what the runner-up's noise hides: 1-5% of a ~3.1 ms step.
  EXPECT_GT(f.cost_share, 0.01);
  EXPECT_LT(f.cost_share, 0.05);
  EXPECT_GT(f.last_fraction, 0.5);
  EXPECT_DOUBLE_EQ(f.session_cost->expected_last_fraction, 1.0 / 8);
  EXPECT_GT(f.session_cost->last_z, 5);
  EXPECT_NE(f.summary.find("is a minor straggler over the session"), std::string::npos) << f.summary;
  std::cout << f.summary << "\n";
}

TEST(SessionCost, WithoutItNoOtherRuleNamesTheFivePercentRank) {
  SyntheticJob job = eight_ranks_one_slower(1.05);
  DetectorConfig config;
  config.session_cost = false;
  SessionVerdict v = verdict_of(8, job, 3000, config);
  EXPECT_TRUE(v.stragglers.empty()) << v.stragglers.front().summary;
}

TEST(SessionCost, ABlatantStragglerIsMajor) {
  SyntheticJob job = eight_ranks_one_slower(1.5);
  SessionVerdict v = verdict_of(8, job, 1000);
  ASSERT_EQ(v.stragglers.size(), 1u);
  EXPECT_EQ(v.stragglers.front().culprit.rank, 5);
  EXPECT_NE(v.stragglers.front().detector, "session-cost");  // named earlier, by the window or sequential test
  EXPECT_EQ(v.stragglers.front().severity, "major");
}

TEST(SessionCost, ARankLastInEveryStepByAHairIsNotNamed) {
  // Rank 0 does 0.2% more work each step (6 us) and noise is 2 us: last in
  // nearly every instance, costing the job 0.2%.
  SyntheticJob job;
  job.ranks = 4;
  job.noise_ns = 2e3;
  job.compute_ns = [](int rank, int) { return rank == 0 ? 3.006e6 : 3e6; };
  SessionVerdict v = verdict_of(4, job, 3000);
  EXPECT_TRUE(v.stragglers.empty()) << v.stragglers.front().summary;
}

TEST(SessionCost, NoiseAloneNamesNobody) {
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    SyntheticJob job;
    job.ranks = 8;
    job.noise_ns = 150e3;  // 5% of the step
    job.seed = seed;
    SessionVerdict v = verdict_of(8, job, 3000);
    EXPECT_TRUE(v.stragglers.empty()) << seed << ": " << v.stragglers.front().summary;
  }
}

TEST(SessionCost, TwoEqualSlowRanksAreNotNamedByIt) {
  SyntheticJob job;
  job.ranks = 8;
  job.compute_ns = [](int rank, int) { return rank == 2 || rank == 5 ? 3e6 * 1.05 : 3e6; };
  SessionVerdict v = verdict_of(8, job, 3000);
  for (const Finding& f : v.stragglers) EXPECT_NE(f.detector, "session-cost") << f.summary;
}

// The judgement on hand-written totals.
TEST(SessionCostJudge, EachTestOnItsOwn) {
  std::map<int32_t, LaneRankTotals> ranks = {
      {1, {300, 30 * kMs, 0}}, {2, {100, 5 * kMs, 0}}, {3, {100, 5 * kMs, 0}}, {4, {100, 5 * kMs, 0}}};
  uint64_t traced = 1000 * kMs;
  auto j = judge_session_cost(ranks, 600, 4, traced);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->pid, 1);
  EXPECT_DOUBLE_EQ(j->cost_share, 0.03);
  EXPECT_DOUBLE_EQ(j->next_cost_share, 0.005);
  EXPECT_NEAR(j->last_z, (300 - 150) / std::sqrt(600 * 0.25 * 0.75), 1e-9);
  EXPECT_EQ(severity_of(j->cost_share), "minor");
  EXPECT_EQ(severity_of(0.1), "major");
  // Under the cost floor.
  EXPECT_FALSE(judge_session_cost(ranks, 600, 4, 4000 * kMs));
  // Leaving late is not its own lateness.
  auto leaving = ranks;
  leaving[1].blame_leaving_ns = 25 * kMs;
  EXPECT_FALSE(judge_session_cost(leaving, 600, 4, traced));
  // Not alone.
  auto pair = ranks;
  pair[2].blame_ns = 20 * kMs;
  EXPECT_FALSE(judge_session_cost(pair, 600, 4, traced));
  // Last no more often than chance.
  auto chance = ranks;
  chance[1].lasts = 160;
  EXPECT_FALSE(judge_session_cost(chance, 600, 4, traced));
  // Too few instances.
  EXPECT_FALSE(judge_session_cost(ranks, 100, 4, traced));
}

}  // namespace
}  // namespace slowburn::session_cost_test
