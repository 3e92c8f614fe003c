#include "service/overhead_budget.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace slowburn {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

// 10 us a call, 1% of a CPU: 1000 calls a second fit.
OverheadBudget budget() { return OverheadBudget(BudgetConfig{0.01, 10'000, 2, 16}); }

TEST(OverheadBudget, UnderBudgetNothingHappens) {
  auto b = budget();
  auto d = b.update(kSecond, {{"mpi.allreduce", 400}, {"mpi.barrier", 500}});
  EXPECT_NEAR(d.estimated_ratio, 0.009, 1e-12);
  EXPECT_NEAR(d.probe_ratio["mpi.allreduce"], 0.004, 1e-12);
  EXPECT_TRUE(d.throttle.empty());
  EXPECT_TRUE(d.restore.empty());
}

TEST(OverheadBudget, DetachesTheMostExpensiveUntilTheRestFits) {
  auto b = budget();
  auto d = b.update(kSecond, {{"a", 300}, {"b", 900}, {"c", 200}});
  ASSERT_EQ(d.throttle, std::vector<std::string>{"b"});  // 1.4% -> 0.5%
  EXPECT_TRUE(b.throttled("b"));
  EXPECT_FALSE(b.throttled("a"));
  EXPECT_EQ(b.throttle_count("b"), 1u);
  EXPECT_EQ(d.messages.size(), 1u);

  d = b.update(kSecond, {{"a", 2000}, {"b", 0}, {"c", 1500}});
  EXPECT_EQ(d.throttle, (std::vector<std::string>{"a", "c"}));  // a alone is still 2%
}

TEST(OverheadBudget, ARestoredProbeThatTripsAgainStaysOffLonger) {
  auto b = budget();
  std::vector<int> off_periods;
  int off = 0;
  for (int i = 0; i < 60; ++i) {
    // A probe whose rate never falls: on for one interval, then off.
    uint64_t calls = b.throttled("hot") ? 0 : 5000;
    auto d = b.update(kSecond, {{"hot", calls}});
    if (b.throttled("hot")) ++off;
    if (!d.restore.empty()) {
      off_periods.push_back(off);
      off = 0;
    }
  }
  ASSERT_GE(off_periods.size(), 3u);
  EXPECT_EQ(off_periods[0], 2);
  EXPECT_EQ(off_periods[1], 4);
  EXPECT_EQ(off_periods[2], 8);
}

TEST(OverheadBudget, NeverOverBudgetTwoIntervalsInARow) {
  auto b = budget();
  bool was_over = false;
  for (int i = 0; i < 200; ++i) {
    std::map<std::string, uint64_t> calls;
    for (const char* probe : {"a", "b", "c"})
      if (!b.throttled(probe)) calls[probe] = 600 + 100 * static_cast<uint64_t>(i % 3);
    auto d = b.update(kSecond, calls);
    bool over = d.estimated_ratio > 0.01;
    EXPECT_FALSE(over && was_over) << "interval " << i;
    was_over = over;
  }
}

TEST(OverheadBudget, ARateThatFallsEarnsAFreshStart) {
  auto b = budget();
  b.update(kSecond, {{"p", 5000}});  // off 2
  b.update(kSecond, {});
  auto d = b.update(kSecond, {});
  ASSERT_EQ(d.restore, std::vector<std::string>{"p"});
  for (int i = 0; i < 4; ++i) b.update(kSecond, {{"p", 100}});  // calm for 2x its off period
  d = b.update(kSecond, {{"p", 5000}});
  ASSERT_EQ(d.throttle, std::vector<std::string>{"p"});
  b.update(kSecond, {});
  d = b.update(kSecond, {});
  EXPECT_EQ(d.restore, std::vector<std::string>{"p"}) << "back after the first period again, not a doubled one";
}

}  // namespace
}  // namespace slowburn
