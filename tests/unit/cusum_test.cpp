#include "stats/cusum.h"

#include <gtest/gtest.h>

namespace slowburn::cusum_test {
namespace {

TEST(Cusum, AccumulatesOnlyAboveAllowance) {
  Cusum c(0.5, 5.0);
  EXPECT_FALSE(c.add(0.4));  // 0.4 - 0.5 < 0: stays 0
  EXPECT_DOUBLE_EQ(c.statistic(), 0.0);
  EXPECT_FALSE(c.add(2.0));  // 1.5
  EXPECT_DOUBLE_EQ(c.statistic(), 1.5);
  EXPECT_FALSE(c.add(2.0));  // 3.0
  EXPECT_FALSE(c.add(2.5));  // 5.0: not above h
  EXPECT_DOUBLE_EQ(c.statistic(), 5.0);
  EXPECT_TRUE(c.add(1.0));  // 5.5 > 5
  EXPECT_TRUE(c.alarmed());
}

TEST(Cusum, NegativeInputsDrainToZero) {
  Cusum c(0.5, 5.0);
  c.add(3.0);   // 2.5
  c.add(-1.0);  // 1.0
  EXPECT_DOUBLE_EQ(c.statistic(), 1.0);
  c.add(-10.0);
  EXPECT_DOUBLE_EQ(c.statistic(), 0.0);
  c.add(3.0);
  c.reset();
  EXPECT_DOUBLE_EQ(c.statistic(), 0.0);
}

TEST(Cusum, SlowShiftAlarmsWhereNoSingleValueIsExtreme) {
  Cusum c(0.5, 5.0);
  int windows = 0;
  while (!c.add(1.5) && windows < 100) ++windows;
  // +1.0 per window: passes 5 on the sixth.
  EXPECT_EQ(windows, 5);
}

}  // namespace
}  // namespace slowburn::cusum_test
