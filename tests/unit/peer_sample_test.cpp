// PeerSample gives what robust_z_against and median give on a copy of the
// peers' values, whatever the pool: random, tied, mostly identical (the
// mean-AD fallback), one member alone, a member not in the pool.
#include "stats/peer_sample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "stats/robust.h"

namespace slowburn::peer_sample_test {
namespace {

using Pool = std::map<int32_t, std::vector<double>>;

std::vector<double> peers(const Pool& pool, int32_t self) {
  std::vector<double> out;
  for (const auto& [id, v] : pool)
    if (id != self) out.insert(out.end(), v.begin(), v.end());
  return out;
}

void expect_same(const Pool& pool, const std::vector<double>& probes) {
  PeerSample sample(pool);
  for (int32_t self = 0; self <= static_cast<int32_t>(pool.size()); ++self) {  // the last one: not in the pool
    std::vector<double> theirs = peers(pool, self);
    auto m = median(theirs);
    auto fast_m = sample.peer_median(self);
    ASSERT_EQ(m.has_value(), fast_m.has_value()) << "member " << self;
    if (m) {
      EXPECT_DOUBLE_EQ(*m, *fast_m) << "member " << self;
    }
    for (double x : probes) {
      auto z = robust_z_against(x, theirs);
      auto fast = sample.z_against_peers(x, self);
      ASSERT_EQ(z.has_value(), fast.has_value());
      if (z) {
        EXPECT_NEAR(*z, *fast, 1e-9 * std::max(1.0, std::fabs(*z))) << "member " << self << " x " << x;
      }
    }
  }
}

TEST(PeerSample, TheSameAsRobustZAgainstACopyOfThePeers) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 50e3);
  for (int members : {1, 2, 3, 4, 7, 16, 33}) {
    for (int per : {1, 2, 5, 8}) {
      Pool pool;
      for (int r = 0; r < members; ++r)
        for (int i = 0; i < per; ++i) pool[r].push_back(std::round(noise(rng)) + (r == 1 ? 2e6 : 0));
      expect_same(pool, {0, 1e3, -7e4, 2e6, 1e9});
    }
  }
}

TEST(PeerSample, TiesAndMostlyIdenticalValuesFallBackAsRobustScaleDoes) {
  // Most values identical: MAD 0, so the scale is the mean absolute deviation.
  Pool identical{{0, {5, 5, 5}}, {1, {5, 5, 9}}, {2, {5, 5, 5}}, {3, {1, 5, 5}}};
  expect_same(identical, {5, 6, 0});
  // Every value identical: 0 at the median, the cap elsewhere.
  Pool flat{{0, {3, 3}}, {1, {3, 3}}, {2, {3, 3}}};
  expect_same(flat, {3, 4, 2});
  PeerSample sample(flat);
  EXPECT_EQ(*sample.z_against_peers(4, 0), kRobustZCap);
  // Heavy ties around the centre.
  Pool tied{{0, {1, 2, 2, 2}}, {1, {2, 2, 3, 3}}, {2, {2, 3, 4, 2}}, {3, {0, 2, 2, 8}}};
  expect_same(tied, {2, 2.5, 10, -1});
}

TEST(PeerSample, AMemberAloneHasNoPeers) {
  PeerSample alone(Pool{{7, {1, 2, 3}}});
  EXPECT_FALSE(alone.peer_median(7));
  EXPECT_FALSE(alone.z_against_peers(1, 7));
  EXPECT_EQ(*alone.peer_median(8), 2);  // a member not in the pool: every value
}

}  // namespace
}  // namespace slowburn::peer_sample_test
