// Reading Open MPI communicators from a rank's memory, on a memory image
// laid out as Open MPI 4.1.4 lays it (offsets seen on Debian 12, see
// comm/ompi_comm.h), and on shifted layouts the discovery must also find.
#include "comm/ompi_comm.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "support/fake_memory.h"

namespace slowburn::ompi_comm_test {
namespace {

using testing::FakeMemory;

struct Layout {
  uint32_t name = 0xa0, group = 0xf8;
};

// A communicator object at `at`: its name, cid, this rank's position and a
// group of `members` (world ranks); member i's proc at procs_at + 0x100 * i,
// or a sentinel for the ones in `sentinels`.
void build_comm(FakeMemory& m, uint64_t at, const Layout& l, const char* name, uint32_t cid, int my_rank,
                const std::vector<int>& members, uint64_t group_at, std::set<int> sentinels = {}) {
  m.zero(at, 512);
  m.write(at + l.name, name, std::strlen(name) + 1);
  m.put<uint32_t>(at + l.name + 64, cid);
  m.put<int32_t>(at + l.name + 68, my_rank);
  m.put<uint64_t>(at + l.group, group_at);
  m.zero(group_at, 64);
  m.put<int32_t>(group_at + 16, static_cast<int32_t>(members.size()));
  m.put<int32_t>(group_at + 20, my_rank);
  uint64_t procs = group_at + 0x1000;
  m.put<uint64_t>(group_at + 32, procs);
  for (size_t i = 0; i < members.size(); ++i) {
    uint64_t proc = 0x900000 + 0x100 * static_cast<uint64_t>(members[i]);
    if (sentinels.contains(members[i])) {
      m.put<uint64_t>(procs + 8 * i, (uint64_t{static_cast<uint32_t>(members[i])} << 32) | 0x2a2a | 1);
      continue;
    }
    m.put<uint64_t>(procs + 8 * i, proc);
    m.zero(proc, 64);
    m.put<uint32_t>(proc + 44, static_cast<uint32_t>(members[i]));
  }
}

TEST(OmpiComm, TheLayoutIsFoundOnTheWorldAndReadsASplit) {
  FakeMemory m;
  Layout l;
  build_comm(m, 0x10000, l, "MPI_COMM_WORLD", 0, 2, {0, 1, 2, 3}, 0x20000);
  auto layout = discover_ompi_layout(m, 0x10000, 2, 4);
  ASSERT_TRUE(layout) << layout.error().message;
  EXPECT_EQ(layout->name_offset, 0xa0u);
  EXPECT_EQ(layout->cid_offset, 0xe0u);
  EXPECT_EQ(layout->group_offset, 0xf8u);
  // The tensor-parallel half {2,3} of a split: cid 3, this rank second.
  build_comm(m, 0x30000, l, "MPI COMMUNICATOR 3 SPLIT FROM 0", 3, 0, {2, 3}, 0x40000);
  auto tp = read_ompi_comm(m, *layout, 0x30000);
  ASSERT_TRUE(tp) << tp.error().message;
  EXPECT_EQ(tp->cid, 3u);
  EXPECT_EQ(tp->my_rank, 0);
  EXPECT_EQ(tp->members, (std::vector<int>{2, 3}));
}

TEST(OmpiComm, MembersOnOtherNodesComeFromSentinels) {
  FakeMemory m;
  Layout l;
  build_comm(m, 0x10000, l, "MPI_COMM_WORLD", 0, 0, {0, 1, 2, 3}, 0x20000, {2, 3});
  auto layout = discover_ompi_layout(m, 0x10000, 0, 4);
  ASSERT_TRUE(layout) << layout.error().message;
  auto world = read_ompi_comm(m, *layout, 0x10000);
  ASSERT_TRUE(world);
  EXPECT_EQ(world->members, (std::vector<int>{0, 1, 2, 3}));
}

TEST(OmpiComm, AnotherBuildsOffsetsAreFoundToo) {
  // A debug build or another version: the name and the group elsewhere.
  FakeMemory m;
  Layout l{0xc8, 0x128};
  build_comm(m, 0x10000, l, "MPI_COMM_WORLD", 0, 1, {0, 1}, 0x20000);
  auto layout = discover_ompi_layout(m, 0x10000, 1, 2);
  ASSERT_TRUE(layout) << layout.error().message;
  EXPECT_EQ(layout->name_offset, 0xc8u);
  EXPECT_EQ(layout->group_offset, 0x128u);
}

TEST(OmpiComm, ALayoutThatDoesNotCheckOutIsRefusedWithTheReason) {
  FakeMemory m;
  Layout l;
  build_comm(m, 0x10000, l, "MPI_COMM_WORLD", 0, 2, {0, 1, 2, 3}, 0x20000);
  // The environment says rank 1: the object says 2.
  auto wrong_rank = discover_ompi_layout(m, 0x10000, 1, 4);
  ASSERT_FALSE(wrong_rank);
  EXPECT_NE(wrong_rank.error().message.find("unknown layout"), std::string::npos);
  // A size the group does not have.
  EXPECT_FALSE(discover_ompi_layout(m, 0x10000, 2, 8));
  // Not an Open MPI object at all.
  FakeMemory empty;
  empty.zero(0x10000, 512);
  auto none = discover_ompi_layout(empty, 0x10000, 0, 1);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("MPI_COMM_WORLD"), std::string::npos);
  // Unreadable memory.
  EXPECT_FALSE(discover_ompi_layout(empty, 0x90000, 0, 1));
}

TEST(OmpiComm, AFreedOrCorruptCommunicatorIsAnErrorNotAHugeRead) {
  FakeMemory m;
  Layout l;
  build_comm(m, 0x10000, l, "MPI_COMM_WORLD", 0, 0, {0, 1}, 0x20000);
  auto layout = discover_ompi_layout(m, 0x10000, 0, 2);
  ASSERT_TRUE(layout);
  build_comm(m, 0x30000, l, "", 9, 0, {0, 1}, 0x40000);
  m.put<int32_t>(0x40000 + 16, 1 << 30);  // member count garbage
  EXPECT_FALSE(read_ompi_comm(m, *layout, 0x30000));
  m.put<int32_t>(0x40000 + 16, 2);
  m.put<int32_t>(0x40000 + 20, 1);  // the group disagrees with the communicator on this rank's position
  EXPECT_FALSE(read_ompi_comm(m, *layout, 0x30000));
  EXPECT_FALSE(read_ompi_comm(m, *layout, 0xdead0000));
}

}  // namespace
}  // namespace slowburn::ompi_comm_test
