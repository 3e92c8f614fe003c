// Telling gloo process groups apart from what their calls show.
#include "comm/gloo_groups.h"

#include <gtest/gtest.h>

#include <set>

namespace slowburn::gloo_groups_test {
namespace {

std::set<int32_t> pids_of(const GlooGroups& g, const std::vector<size_t>& members) {
  std::set<int32_t> pids;
  for (size_t m : members) pids.insert(g.stream(m).pid);
  return pids;
}

TEST(GlooGroups, TheWorldGroupIsKnownAtOnce) {
  GlooGroups g;
  std::vector<size_t> s;
  for (int r = 0; r < 4; ++r) s.push_back(g.add_stream({100 + r, 0x1000u + r, r, 4}));
  auto group = g.group_of(s[2]);
  ASSERT_TRUE(group);
  EXPECT_EQ(pids_of(g, *group), (std::set<int32_t>{100, 101, 102, 103}));
}

TEST(GlooGroups, TwoGroupsOfTwoStayUnknownUntilTheirCallsTellThemApart) {
  // Ranks {0,1} and {2,3} in groups of 2: rank 0 and rank 2 are both rank 0
  // of their group, so {0,1}{2,3} and {0,3}{2,1} fit until timing rules one out.
  GlooGroups g;
  size_t a0 = g.add_stream({100, 0xa, 0, 2}), a1 = g.add_stream({101, 0xb, 1, 2});
  size_t b0 = g.add_stream({102, 0xc, 0, 2}), b1 = g.add_stream({103, 0xd, 1, 2});
  EXPECT_FALSE(g.group_of(a0));
  EXPECT_FALSE(g.compatible(a0, b0)) << "same rank in the group: never together";
  // Tag 7 on both groups at the same time: nothing learnt.
  g.observe(a0, 7, 1000, 2000);
  g.observe(a1, 7, 1100, 2000);
  g.observe(b0, 7, 1050, 2010);
  g.observe(b1, 7, 1200, 2010);
  EXPECT_FALSE(g.group_of(a0));
  // Tag 8: group {2,3} waits for a slow rank 2; rank 1's call ended before rank 2's began.
  g.observe(a0, 8, 3000, 4000);
  g.observe(a1, 8, 3100, 4000);
  g.observe(b1, 8, 3050, 9000);
  EXPECT_TRUE(g.observe(b0, 8, 8000, 9000));
  EXPECT_FALSE(g.compatible(a1, b0));
  auto group = g.group_of(a0);
  ASSERT_TRUE(group) << "only {0,1}{2,3} fits now";
  EXPECT_EQ(pids_of(g, *group), (std::set<int32_t>{100, 101}));
  EXPECT_EQ(pids_of(g, *g.group_of(b1)), (std::set<int32_t>{102, 103}));
}

TEST(GlooGroups, TwoContextsOfOneProcessAreNeverOneGroup) {
  GlooGroups g;
  size_t x = g.add_stream({100, 0x1, 0, 2});
  size_t y = g.add_stream({100, 0x2, 1, 2});
  EXPECT_FALSE(g.compatible(x, y));
  size_t z = g.add_stream({101, 0x3, 1, 2});
  auto group = g.group_of(x);
  ASSERT_TRUE(group) << "x can only pair with z; y stays alone";
  EXPECT_EQ(pids_of(g, *group), (std::set<int32_t>{100, 101}));
  EXPECT_EQ(g.group_of(y)->size(), 1u);
  (void)z;
}

TEST(GlooGroups, AGroupWithMembersOnOtherNodesIsWhatIsHere) {
  // A world of 8 with 2 ranks on this node: one local group of 2.
  GlooGroups g;
  size_t a = g.add_stream({100, 0x1, 4, 8});
  size_t b = g.add_stream({101, 0x2, 5, 8});
  auto group = g.group_of(a);
  ASSERT_TRUE(group);
  EXPECT_EQ(group->size(), 2u);
  g.remove_pid(101);
  EXPECT_EQ(g.group_of(a)->size(), 1u);
  (void)b;
}

}  // namespace
}  // namespace slowburn::gloo_groups_test
