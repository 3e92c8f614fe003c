#include "stats/robust.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace slowburn::robust_test {
namespace {

TEST(Median, OddEvenEmpty) {
  std::vector<double> odd{5, 1, 3};
  std::vector<double> even{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(*median(odd), 3.0);
  EXPECT_DOUBLE_EQ(*median(even), 2.5);
  EXPECT_FALSE(median(std::vector<double>{}).has_value());
}

TEST(MedianAbsDeviation, HandComputed) {
  // median 3; |x - 3| = 2 1 0 1 6 -> sorted 0 1 1 2 6 -> MAD 1
  std::vector<double> v{1, 2, 3, 4, 9};
  EXPECT_DOUBLE_EQ(*median_abs_deviation(v), 1.0);
  // mean AD from the median: (2 + 1 + 0 + 1 + 6) / 5
  EXPECT_DOUBLE_EQ(*mean_abs_deviation(v), 2.0);
}

TEST(RobustZ, HandComputed) {
  std::vector<double> v{1, 2, 3, 4, 9};
  auto z = robust_z_scores(v);
  ASSERT_TRUE(z.has_value());
  // (9 - 3) / (1.4826 * 1)
  EXPECT_NEAR((*z)[4], 6.0 / 1.4826, 1e-9);
  EXPECT_NEAR((*z)[0], -2.0 / 1.4826, 1e-9);
  EXPECT_DOUBLE_EQ((*z)[2], 0.0);
}

TEST(RobustZ, MadZeroFallsBackToMeanAbsDeviation) {
  // Three of four equal: MAD = 0; mean AD = (0 + 0 + 0 + 8) / 4 = 2
  std::vector<double> v{5, 5, 5, 13};
  auto z = robust_z_scores(v);
  ASSERT_TRUE(z.has_value());
  EXPECT_NEAR((*z)[3], 8.0 / (1.253314 * 2.0), 1e-9);
  EXPECT_DOUBLE_EQ((*z)[0], 0.0);
}

TEST(RobustZ, AllEqualGivesZero) {
  std::vector<double> v{7, 7, 7};
  auto z = robust_z_scores(v);
  ASSERT_TRUE(z.has_value());
  for (double x : *z) EXPECT_DOUBLE_EQ(x, 0.0);
}

TEST(RobustZ, FewerThanThreeValuesHaveNoZ) {
  EXPECT_FALSE(robust_z_scores(std::vector<double>{1, 100}).has_value());
  EXPECT_FALSE(robust_z_scores(std::vector<double>{1}).has_value());
}

TEST(RobustZAgainst, AgainstPeers) {
  std::vector<double> peers{1, 2, 3, 4, 9};  // median 3, MAD 1
  EXPECT_NEAR(*robust_z_against(6, peers), 3.0 / 1.4826, 1e-9);
  EXPECT_FALSE(robust_z_against(6, std::vector<double>{}).has_value());
}

TEST(RobustZAgainst, NoSpreadCapsTheScore) {
  std::vector<double> peers{2, 2, 2};
  EXPECT_DOUBLE_EQ(*robust_z_against(2, peers), 0.0);
  EXPECT_DOUBLE_EQ(*robust_z_against(5, peers), kRobustZCap);
  EXPECT_DOUBLE_EQ(*robust_z_against(-5, peers), -kRobustZCap);
}

TEST(Quantile, NearestRank) {
  std::vector<double> v{10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_DOUBLE_EQ(*quantile(v, 0.5), 50);
  EXPECT_DOUBLE_EQ(*quantile(v, 0.99), 100);
  EXPECT_DOUBLE_EQ(*quantile(v, 0.0), 10);
  EXPECT_DOUBLE_EQ(*quantile(v, 0.1), 10);
  EXPECT_DOUBLE_EQ(*quantile(v, 0.11), 20);
  EXPECT_FALSE(quantile(std::vector<double>{}, 0.5).has_value());
}

}  // namespace
}  // namespace slowburn::robust_test
