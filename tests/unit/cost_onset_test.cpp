// When a slow burn began (detect/cost_onset.h): a step, a ramp and a cost
// present from the start, sampled every 10 s as the detector samples a
// rank's cumulative cost, with noise.
#include "detect/cost_onset.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

namespace slowburn::cost_onset_test {
namespace {

constexpr uint64_t kEveryNs = 10'000'000'000;
constexpr uint64_t kStartNs = 5'000'000'000;  // the session's clock at its start

// share_at(t_s): the rank's cost share in the stretch ending t_s into the
// session; noise: a relative spread per stretch.
std::vector<CumulativeCost> sampled(int stretches, const std::function<double(double)>& share_at, double noise = 0,
                                    unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> jitter(0, noise);
  std::vector<CumulativeCost> out{{kStartNs, 0, 0}};
  for (int i = 1; i <= stretches; ++i) {
    CumulativeCost c = out.back();
    double t_s = static_cast<double>(i) * 10;
    double share = std::max(0.0, share_at(t_s) * (1 + jitter(rng)));
    c.at_ns += kEveryNs;
    c.traced_ns += kEveryNs;
    c.own_ns += static_cast<uint64_t>(share * static_cast<double>(kEveryNs));
    out.push_back(c);
  }
  return out;
}

TEST(CostOnset, ACostFromTheStartIsSaidSo) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    auto onset = cost_onset(sampled(
        60, [](double) { return 0.025; }, 0.3, seed));
    ASSERT_TRUE(onset);
    EXPECT_TRUE(onset->from_start) << "seed " << seed << ": change at " << onset->into_ns / 1e9 << " s";
    EXPECT_NEAR(onset->since_share, 0.025, 0.005);
  }
}

TEST(CostOnset, AStepIsFoundWithinAStretchOfItsTime) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    // A healthy rank's small cost (0.1%), then 3% from 7 minutes on.
    auto onset = cost_onset(sampled(
        60, [](double t) { return t <= 420 ? 0.001 : 0.03; }, 0.3, seed));
    ASSERT_TRUE(onset);
    ASSERT_FALSE(onset->from_start) << "seed " << seed;
    EXPECT_NEAR(static_cast<double>(onset->into_ns) / 1e9, 420, 10) << "seed " << seed;
    EXPECT_EQ(onset->at_ns, kStartNs + onset->into_ns);
    EXPECT_LT(onset->before_share, 0.005);
    EXPECT_NEAR(onset->since_share, 0.03, 0.008);
  }
}

TEST(CostOnset, ARampBeginsWhereItsCostPassesHalfTheFloor) {
  // 0 at 2 minutes, rising to 5% at 10 minutes: 0.5% at 2m48s.
  auto onset = cost_onset(sampled(60, [](double t) { return t <= 120 ? 0.0 : 0.05 * (t - 120) / 480; }));
  ASSERT_TRUE(onset);
  ASSERT_FALSE(onset->from_start);
  EXPECT_GE(onset->into_ns, 120'000'000'000u);
  EXPECT_LE(onset->into_ns, 170'000'000'000u);
}

TEST(CostOnset, AChangeNeedsTimeBeforeItAndACostAfterIt) {
  // 10 s of nothing, then the cost: from the start, as far as can be told.
  auto early = cost_onset(sampled(30, [](double t) { return t <= 10 ? 0.0 : 0.03; }));
  ASSERT_TRUE(early);
  EXPECT_TRUE(early->from_start);
  // Under the floor after the low point: not a change to date, nor a cost
  // from the start.
  EXPECT_FALSE(cost_onset(sampled(30, [](double t) { return t <= 150 ? 0.0 : 0.008; })));
  // A cost in the latest stretch alone is dated; no cost at all is not.
  auto latest = cost_onset(sampled(30, [](double t) { return t <= 290 ? 0.0 : 0.5; }));
  ASSERT_TRUE(latest);
  EXPECT_FALSE(latest->from_start);
  EXPECT_EQ(latest->into_ns, 290'000'000'000u);
  EXPECT_FALSE(cost_onset(sampled(30, [](double) { return 0.0; })));
  EXPECT_FALSE(cost_onset(sampled(1, [](double) { return 0.05; }))) << "one stretch";
  std::vector<CumulativeCost> backwards{{0, 0, 0}, {10, 10, 5}, {20, 20, 3}};
  EXPECT_FALSE(cost_onset(backwards)) << "not cumulative";
}

}  // namespace
}  // namespace slowburn::cost_onset_test
