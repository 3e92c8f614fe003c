// Clock-free blame: the rank that waits least is the last to arrive, on no
// clock; it checks the clocks that merged the nodes.
#include "detect/clock_check.h"

#include <gtest/gtest.h>

namespace slowburn::clock_check_test {
namespace {

RankIdentity rank_on(int rank, const std::string& host) {
  RankIdentity id;
  id.pid = 100 + rank;
  id.rank = rank;
  id.host = host;
  return id;
}

// Ranks 0, 1 on node-a and 2, 3 on node-b; rank `late` arrives 2 ms after the
// others, and all leave together at release. `skew_ns` is added to node-b's
// entries and exits: a wrong offset that the merge did not remove.
CollectiveInstance instance(uint64_t release_ns, int late, int64_t skew_ns) {
  CollectiveInstance in;
  in.release_ns = release_ns;
  for (int r = 0; r < 4; ++r) {
    RankCall c;
    c.pid = 100 + r;
    c.entry_ns = release_ns - (r == late ? 100'000 : 2'100'000 + 10'000 * static_cast<uint64_t>(r));
    c.exit_ns = release_ns;
    if (r >= 2) {
      c.entry_ns = static_cast<uint64_t>(static_cast<int64_t>(c.entry_ns) + skew_ns);
      c.exit_ns = static_cast<uint64_t>(static_cast<int64_t>(c.exit_ns) + skew_ns);
    }
    in.calls.push_back(c);
  }
  return in;
}

RankCall call(int32_t pid, uint64_t entry_ns, uint64_t exit_ns) {
  RankCall c;
  c.pid = pid;
  c.entry_ns = entry_ns;
  c.exit_ns = exit_ns;
  return c;
}

ClockCheckBuilder builder() {
  ClockCheckBuilder b(0.10);
  for (int r = 0; r < 4; ++r) b.add_rank(rank_on(r, r < 2 ? "node-a" : "node-b"));
  return b;
}

TEST(ClockCheck, TheWaitsNameTheLateRankAndAgreeWithRightClocks) {
  ClockCheckBuilder b = builder();
  for (uint64_t i = 0; i < 100; ++i) b.add(instance(10'000'000 * (i + 1), 3, 0));
  // 100 steps of 10 ms; rank 3 waited 2 ms less than the runner-up each time.
  ClockCheck c = b.finish(1e9);
  EXPECT_EQ(c.instances, 100u);
  EXPECT_EQ(c.agreed, 100u);
  EXPECT_DOUBLE_EQ(c.agreed_blame_share, 1.0);
  ASSERT_TRUE(c.culprit.has_value());
  EXPECT_EQ(c.culprit->rank, 3);
  EXPECT_NEAR(c.culprit_blame_share, 0.2, 1e-9);
  EXPECT_FALSE(c.disagrees) << c.summary;
  ASSERT_FALSE(c.ranks.empty());
  EXPECT_EQ(c.ranks.front().identity.rank, 3);
  EXPECT_EQ(c.ranks.front().least_waits, 100u);
  EXPECT_NE(c.summary.find("rank 3 (pid 103 on node-b)"), std::string::npos) << c.summary;
}

TEST(ClockCheck, AWrongOffsetIsCaughtByTheWaits) {
  // node-b's clock left 3 ms behind: on the merged clocks rank 0 (node-a)
  // looks last, by 10 us, but rank 3's waits are still the least.
  ClockCheckBuilder b = builder();
  for (uint64_t i = 0; i < 100; ++i) b.add(instance(10'000'000 * (i + 1), 3, -3'000'000));
  ClockCheck c = b.finish(1e9);
  ASSERT_TRUE(c.culprit.has_value());
  EXPECT_EQ(c.culprit->rank, 3);
  EXPECT_EQ(c.agreed, 0u);
  EXPECT_TRUE(c.disagrees);
  EXPECT_NE(c.summary.find("disagree"), std::string::npos) << c.summary;
  EXPECT_NE(
      c.summary.find("the waits charge rank 3 (pid 103 on node-b) with 20% of the time, the merged clocks with 0.0%"),
      std::string::npos)
      << c.summary;
}

TEST(ClockCheck, ARankTheAlgorithmLetsOutFirstIsNotTakenForTheLast) {
  // All four arrive together; rank 0 leaves 1 ms before the others (its
  // part of the all-reduce done first): its own wait is the least, but
  // counted to its node's release it is not late.
  ClockCheckBuilder b = builder();
  for (uint64_t i = 0; i < 100; ++i) {
    uint64_t release = 10'000'000 * (i + 1);
    CollectiveInstance in;
    for (int r = 0; r < 4; ++r)
      in.calls.push_back(
          call(100 + r, release - 2'000'000 + static_cast<uint64_t>(r) * 1'000, release + (r == 0 ? 0 : 1'000'000)));
    b.add(in);
  }
  ClockCheck c = b.finish(1e9);
  EXPECT_FALSE(c.culprit) << c.summary;
  EXPECT_FALSE(c.disagrees) << c.summary;
}

TEST(ClockCheck, OneNodesInstancesTestNothingAndNearTiesNameNobody) {
  ClockCheckBuilder b = builder();
  CollectiveInstance local;
  for (int r = 0; r < 2; ++r) local.calls.push_back(call(100 + r, 1000u + static_cast<uint64_t>(r), 5000));
  b.add(local);  // node-a only
  ClockCheck none = b.finish(1e9);
  EXPECT_EQ(none.instances, 0u);
  EXPECT_FALSE(none.culprit);
  EXPECT_FALSE(none.disagrees);
  EXPECT_NE(none.summary.find("no collective instance spanned two nodes"), std::string::npos);

  // Healthy: arrivals within 20 us of each other, the last one at random.
  ClockCheckBuilder h = builder();
  for (uint64_t i = 0; i < 100; ++i) {
    CollectiveInstance in;
    uint64_t release = 10'000'000 * (i + 1);
    for (int r = 0; r < 4; ++r)
      in.calls.push_back(
          call(100 + r, release - 1'000'000 + ((i * 7 + static_cast<uint64_t>(r) * 3) % 4) * 5'000, release));
    h.add(in);
  }
  ClockCheck healthy = h.finish(1e9);
  EXPECT_FALSE(healthy.culprit) << healthy.summary;
  EXPECT_FALSE(healthy.disagrees) << healthy.summary;
}

}  // namespace
}  // namespace slowburn::clock_check_test
