#include "detect/aligner.h"

#include <gtest/gtest.h>

namespace slowburn::aligner_test {
namespace {

RankCall rank_call(int32_t pid, uint64_t entry_ns, uint64_t exit_ns, uint64_t seq = 0) {
  RankCall c;
  c.pid = pid;
  c.entry_ns = entry_ns;
  c.exit_ns = exit_ns;
  c.seq = seq;
  return c;
}

CollectiveAligner three_ranks() {
  CollectiveAligner a;
  for (int32_t pid : {1, 2, 3}) a.add_participant(pid);
  return a;
}

TEST(CollectiveAligner, FormsInstancesOnceEveryRankReported) {
  CollectiveAligner a = three_ranks();
  a.add(rank_call(1, 100, 500));
  a.add(rank_call(2, 200, 510));
  EXPECT_TRUE(a.take_ready().empty());  // rank 3 missing
  a.add(rank_call(3, 450, 505));
  auto ready = a.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].calls.size(), 3u);
  EXPECT_EQ(ready[0].release_ns, 500u);
  EXPECT_EQ(a.discarded_calls(), 0u);
}

TEST(CollectiveAligner, AttachedMidRunCountersDiffer) {
  // Rank 1's first recorded call is an instance ranks 2 and 3 were inside
  // of when the tracer attached: it ended before they entered their next.
  CollectiveAligner a = three_ranks();
  a.add(rank_call(1, 0, 50));     // instance k (others not recorded)
  a.add(rank_call(1, 100, 500));  // instance k+1
  a.add(rank_call(2, 200, 505));
  a.add(rank_call(3, 450, 502));
  auto ready = a.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].calls[0].entry_ns, 100u);
  EXPECT_EQ(a.discarded_calls(), 1u);
}

TEST(CollectiveAligner, LostRecordCostsOneInstance) {
  CollectiveAligner a = three_ranks();
  // Instance 1 complete, instance 2 lost rank 3's record, instance 3 complete.
  for (int32_t pid : {1, 2, 3}) a.add(rank_call(pid, 100u + pid, 200u + pid));
  for (int32_t pid : {1, 2}) a.add(rank_call(pid, 300u + pid, 400u + pid));
  for (int32_t pid : {1, 2, 3}) a.add(rank_call(pid, 500u + pid, 600u + pid));
  auto ready = a.take_ready();
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].release_ns, 201u);
  EXPECT_EQ(ready[1].release_ns, 601u);
  EXPECT_EQ(a.discarded_calls(), 2u);
}

TEST(CollectiveAligner, IdleParticipantsAreThoseOthersWentOnWithout) {
  CollectiveAligner a = three_ranks();
  a.add(rank_call(1, 100, 200));
  a.add(rank_call(2, 110, 210));
  EXPECT_TRUE(a.idle_participants(150).empty());  // oldest waiting call exited at 200: not yet
  auto idle = a.idle_participants(1000);
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0], 3);
  a.remove_participant(3);
  EXPECT_EQ(a.take_ready().size(), 1u);
}

TEST(CollectiveAligner, QueueIsBounded) {
  CollectiveAligner a(AlignBy::exit_time, true, 4);
  a.add_participant(1);
  a.add_participant(2);
  for (uint64_t i = 0; i < 10; ++i) a.add(rank_call(1, i * 10, i * 10 + 5));
  EXPECT_EQ(a.discarded_calls(), 6u);
}

}  // namespace
}  // namespace slowburn::aligner_test
