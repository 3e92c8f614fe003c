#include "stats/sequential.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace slowburn {
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

}  // namespace
}  // namespace slowburn
