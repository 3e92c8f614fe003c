#include "stats/sequential.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace slowburn::sequential_test {
namespace {

TEST(BernoulliCusum, ThresholdIsTheLogOfTheTargetArl) {
  EXPECT_NEAR(BernoulliCusum::threshold_for_arl(1e8), 8 * std::log(10.0), 1e-12);
  EXPECT_DOUBLE_EQ(BernoulliCusum::threshold_for_arl(1.0), 0.0);
  EXPECT_DOUBLE_EQ(BernoulliCusum::threshold_for_arl(0.5), 0.0);  // clamped: no negative threshold
  BernoulliCusum test({0.1, 0.5, 1e6});
  EXPECT_NEAR(test.threshold(), std::log(1e6), 1e-12);
}

TEST(BernoulliCusum, StepsAreTheLogLikelihoodRatios) {
  BernoulliCusum test({0.1, 0.5, 1e8});
  EXPECT_NEAR(test.event_step(), std::log(5.0), 1e-12);
  EXPECT_NEAR(test.quiet_step(), std::log(0.5 / 0.9), 1e-12);
  test.add(true);
  EXPECT_NEAR(test.statistic(), std::log(5.0), 1e-12);
  test.add(false);
  EXPECT_NEAR(test.statistic(), std::log(5.0) + std::log(0.5 / 0.9), 1e-12);
  EXPECT_EQ(test.run_observations(), 2u);
  EXPECT_EQ(test.run_events(), 1u);
}

TEST(BernoulliCusum, QuietObservationsDrainToZeroAndRestartTheRun) {
  BernoulliCusum test({0.1, 0.5, 1e8});
  test.add(true);
  for (int i = 0; i < 3; ++i) test.add(false);  // 1.61 - 3 * 0.59 < 0
  EXPECT_DOUBLE_EQ(test.statistic(), 0.0);
  EXPECT_EQ(test.run_observations(), 0u);
  EXPECT_EQ(test.run_events(), 0u);
  test.add(false);
  EXPECT_DOUBLE_EQ(test.statistic(), 0.0);
}

TEST(BernoulliCusum, AConstantStragglerAlarmsAtCeilOfThresholdOverTheEventStep) {
  BernoulliCusum test({0.1, 0.5, 1e8});
  int n = 0;
  while (!test.add(true)) ++n;
  ++n;
  EXPECT_EQ(n, static_cast<int>(std::ceil(test.threshold() / test.event_step())));  // 12
  EXPECT_TRUE(test.alarmed());
  EXPECT_EQ(test.run_events(), static_cast<uint64_t>(n));
}

TEST(BernoulliCusum, AStatisticHeldAtTwiceTheThresholdLeavesAlarmSoonAfterRecovery) {
  BernoulliCusum test({0.1, 0.5, 1e8});
  for (int i = 0; i < 10'000; ++i) test.add(true);
  EXPECT_DOUBLE_EQ(test.statistic(), test.ceiling());
  EXPECT_DOUBLE_EQ(test.ceiling(), 2 * test.threshold());
  int quiet = 0;
  while (test.alarmed()) {
    test.add(false);
    ++quiet;
  }
  EXPECT_EQ(quiet, static_cast<int>(std::floor(test.threshold() / -test.quiet_step())) + 1);  // 32, not 10'000
}

TEST(BernoulliCusum, ExpectedDelayFollowsTheDrift) {
  BernoulliCusum test({0.1, 0.5, 1e8});
  ASSERT_TRUE(test.expected_delay(1.0));
  EXPECT_NEAR(*test.expected_delay(1.0), test.threshold() / std::log(5.0), 1e-9);
  EXPECT_FALSE(test.expected_delay(0.1));  // at p0 the drift is negative
  EXPECT_FALSE(test.expected_delay(0.0));
}

// The stated false-alarm rate: at an event rate of p0 (the worst healthy
// case), no alarm in 200k observations with ARL0 = 1e6 is the expected
// outcome (Lorden: ARL >= e^h); with a small ARL0 the alarms come, but no
// more often than once per ARL0 observations.
TEST(BernoulliCusum, FalseAlarmsAtP0AreNoMoreFrequentThanTheTargetArl) {
  std::mt19937_64 rng(42);
  std::bernoulli_distribution healthy(0.10);
  {
    BernoulliCusum test({0.1, 0.5, 1e6});
    int alarms = 0;
    for (int i = 0; i < 200'000; ++i) alarms += test.add(healthy(rng));
    EXPECT_EQ(alarms, 0);
  }
  {
    BernoulliCusum test({0.1, 0.5, 100});
    int alarms = 0;
    const int n = 200'000;
    for (int i = 0; i < n; ++i)
      if (test.add(healthy(rng))) {
        ++alarms;
        test.reset();
      }
    EXPECT_GT(alarms, 0);
    EXPECT_LE(alarms, n / 100);
  }
}

TEST(BernoulliCusum, AStragglerLastHalfTheTimeIsFoundWithinFourTimesTheExpectedDelay) {
  std::mt19937_64 rng(7);
  std::bernoulli_distribution straggler(0.5);
  BernoulliCusum test({0.1, 0.5, 1e8});
  int n = 0;
  while (!test.add(straggler(rng)) && n < 10'000) ++n;
  ASSERT_TRUE(test.alarmed());
  EXPECT_LT(n, 4 * *test.expected_delay(0.5));
}

TEST(BernoulliCusum, CountsMoveTheStatisticByTheirSummedSteps) {
  BernoulliCusum one({0.1, 0.5, 1e8}), batch({0.1, 0.5, 1e8});
  for (int i = 0; i < 20; ++i) one.add(true);
  for (int i = 0; i < 4; ++i) one.add(false);
  batch.add_counts(24, 20);
  EXPECT_NEAR(batch.statistic(), one.statistic(), 1e-9);
  EXPECT_EQ(batch.run_observations(), 24u);
  EXPECT_EQ(batch.run_events(), 20u);
  EXPECT_TRUE(batch.alarmed());
}

TEST(BernoulliCusum, CountsAlarmOnlyWhereOneByOneWouldHave) {
  // One by one the statistic stops at zero on the way (quiet runs); counts
  // clamp once, so from zero up to the first alarm they never exceed one by
  // one, and a batch that alarms means the observations one by one alarmed
  // within it: the false-alarm bound holds for counts. (After an alarm the
  // ceiling, also applied once, can hold counts higher for a while: that is
  // how long a finding stands, not a new alarm.)
  std::mt19937_64 rng(11);
  std::bernoulli_distribution event(0.3);
  int alarms = 0;
  BernoulliCusum one({0.1, 0.5, 1e8}), batch({0.1, 0.5, 1e8});
  for (int interval = 0; interval < 20'000; ++interval) {
    uint64_t n = 1 + rng() % 40, k = 0;
    bool one_alarmed = false;
    for (uint64_t i = 0; i < n; ++i) {
      bool e = event(rng);
      k += e;
      one_alarmed = one.add(e) || one_alarmed;
    }
    batch.add_counts(n, k);
    ASSERT_LE(batch.statistic(), one.statistic() + 1e-9) << "interval " << interval;
    if (batch.alarmed()) {
      ++alarms;
      ASSERT_TRUE(one_alarmed) << "interval " << interval;
    }
    if (one_alarmed) {  // both start again from zero, as after a finding
      one.reset();
      batch.reset();
    }
  }
  EXPECT_GT(alarms, 0) << "the counts never reached the threshold: the test tests nothing";
}

TEST(BernoulliCusum, MoreEventsThanObservationsCountAsAllEvents) {
  BernoulliCusum a({0.1, 0.5, 1e8}), b({0.1, 0.5, 1e8});
  a.add_counts(5, 9);
  b.add_counts(5, 5);
  EXPECT_DOUBLE_EQ(a.statistic(), b.statistic());
  EXPECT_FALSE(a.add_counts(0, 0)) << "no observations move nothing";
  EXPECT_DOUBLE_EQ(a.statistic(), b.statistic());
}

}  // namespace
}  // namespace slowburn::sequential_test
