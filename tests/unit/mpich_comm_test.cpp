// Reading MPICH-family communicators from a rank's memory, on a memory image
// laid out as MPICH 4.0.2 lays it (Debian 12, ch4: offsets in
// comm/mpich_comm.h): the builtin, direct and indirect objects a handle
// names, the members from each mode of ch4's rank map, and the refusals
// when something does not check out.
#include "comm/mpich_comm.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/fake_memory.h"

namespace slowburn::mpich_comm_test {
namespace {

using testing::FakeMemory;

constexpr uint32_t kSize = 0x368;  // sizeof(MPIR_Comm)
constexpr uint32_t kMap = 0x310;   // dev.ch4.map
constexpr uint64_t kData = 0x10000, kDataEnd = 0x16000;
constexpr uint64_t kBuiltin = 0x10100, kAllocator = 0x11f00, kDirect = 0x12000;
constexpr uint64_t kTable = 0x900000, kBlock = 0xa00000;
constexpr int kWorldSize = 6;

struct Map {
  int32_t mode = 1, avtid = 0, size = 0, offset = 0, stride = 0, block = 0;
  uint64_t lpid = 0;
};

// One MPIR_Comm at `at`: handle, the (send, receive) context id pair, size,
// rank, local size, name, rank map.
void build_comm(FakeMemory& m, uint64_t at, uint32_t handle, uint16_t cid, int size, int rank, const Map& map,
                const char* name = "") {
  m.zero(at, kSize);
  m.put<uint32_t>(at, handle);
  m.put<int32_t>(at + 4, 1);
  m.put<uint32_t>(at + 0x40, uint32_t{cid} | uint32_t{cid} << 16);
  m.put<int32_t>(at + 0x44, size);
  m.put<int32_t>(at + 0x48, rank);
  m.put<int32_t>(at + 0x58, size);
  m.write(at + 0x74, name, std::strlen(name) + 1);
  m.put<int32_t>(at + kMap, map.mode);
  m.put<int32_t>(at + kMap + 4, map.avtid);
  m.put<int32_t>(at + kMap + 8, map.size ? map.size : size);
  m.put<int32_t>(at + kMap + 12, map.offset);
  m.put<int32_t>(at + kMap + 16, map.stride);
  m.put<int32_t>(at + kMap + 20, map.block);
  m.put<uint64_t>(at + kMap + 32, map.lpid);
}

// World rank 3 of 6: MPI_COMM_WORLD and SELF builtin, 8 direct slots (a
// pair {2,3} in slot 2), the allocator pointing at one indirect block (a
// stride triple {1,3,5} at index 0, a table-mapped {5,0,3} at index 1).
struct Rank3 {
  FakeMemory m;
  explicit Rank3(bool world_map = true) {
    m.zero(kData, kDataEnd - kData);
    build_comm(m, kBuiltin, kMpichCommWorld, 0, kWorldSize, 3, world_map ? Map{} : Map{11}, "MPI_COMM_WORLD");
    build_comm(m, kBuiltin + kSize, kMpichCommSelf, 4, 1, 0, {}, "MPI_COMM_SELF");
    for (uint32_t i = 0; i < 8; ++i) m.put<uint32_t>(kDirect + i * kSize, 0x84000000 | i);
    build_comm(m, kDirect + 2 * kSize, 0x84000002, 0x1f0, 2, 1, {3, 0, 2, 2});
    // MPIR_Comm_mem (MPICH 4): avail, initialized, indirect, indirect_size,
    // num_allocated, num_avail, kind, size, direct, direct_size.
    m.put<uint64_t>(kAllocator + 16, kTable);
    m.put<int32_t>(kAllocator + 24, 1);
    m.put<int32_t>(kAllocator + 36, 1);
    m.put<int32_t>(kAllocator + 40, kSize);
    m.put<uint64_t>(kAllocator + 48, kDirect);
    m.put<int32_t>(kAllocator + 56, 8);
    m.put<uint64_t>(kTable, kBlock);
    build_comm(m, kBlock, 0xc4000000, 0x1e0, 3, 1, {5, 0, 3, 1, 2});
    uint64_t lut = 0xb00000;
    for (int i = 0; i < 3; ++i) m.put<int32_t>(lut + 4 * i, std::vector<int>{5, 0, 3}[i]);
    build_comm(m, kBlock + kSize, 0xc4000001, 0x1d0, 3, 2, {9, 0, 0, 0, 0, 0, lut});
  }
  Result<MpichCommLayout> layout(int world_rank = 3) const {
    return discover_mpich_layout(m, {{kData, kDataEnd}}, world_rank, kWorldSize);
  }
};

TEST(MpichComm, TheLayoutIsFoundOnTheWorld) {
  Rank3 r;
  auto layout = r.layout();
  ASSERT_TRUE(layout.ok()) << layout.error().message;
  EXPECT_EQ(layout->builtin, kBuiltin);
  EXPECT_EQ(layout->direct, kDirect);
  EXPECT_EQ(layout->object_size, kSize);
  EXPECT_EQ(layout->cid_offset, 0x40u);
  EXPECT_EQ(layout->rank_offset, 0x48u);
  EXPECT_EQ(layout->map_offset, kMap);
  auto world = read_mpich_comm(r.m, *layout, kMpichCommWorld, 3, kWorldSize);
  ASSERT_TRUE(world.ok()) << world.error().message;
  EXPECT_EQ(world->cid, 0u);
  EXPECT_EQ(world->my_rank, 3);
  EXPECT_EQ(world->members, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(MpichComm, DirectAndIndirectHandlesReadTheirMembersFromEachMapMode) {
  Rank3 r;
  auto layout = r.layout();
  ASSERT_TRUE(layout.ok()) << layout.error().message;
  auto pair = read_mpich_comm(r.m, *layout, 0x84000002, 3, kWorldSize);  // offset mode
  ASSERT_TRUE(pair.ok()) << pair.error().message;
  EXPECT_EQ(pair->cid, 0x1f0u) << "the 16-bit (send, receive) pair reads as one context id";
  EXPECT_EQ(pair->members, (std::vector<int>{2, 3}));
  EXPECT_EQ(pair->my_rank, 1);
  auto triple = read_mpich_comm(r.m, *layout, 0xc4000000, 3, kWorldSize);  // stride mode, indirect block 0
  ASSERT_TRUE(triple.ok()) << triple.error().message;
  EXPECT_EQ(triple->members, (std::vector<int>{1, 3, 5}));
  auto table = read_mpich_comm(r.m, *layout, 0xc4000001, 3, kWorldSize);  // lookup table
  ASSERT_TRUE(table.ok()) << table.error().message;
  EXPECT_EQ(table->members, (std::vector<int>{5, 0, 3}));
  EXPECT_EQ(table->cid, 0x1d0u);
}

TEST(MpichComm, AHandlesObjectIsWhereItLives) {
  // What a stuck rank's stack word must point at to be read as a pointer
  // to its communicator (comm/comm_registry.h read_mpi_value): the object
  // its own handle names, not any struct that begins with that handle.
  Rank3 r;
  auto layout = r.layout();
  ASSERT_TRUE(layout.ok()) << layout.error().message;
  auto pair = mpich_comm_object(r.m, *layout, 0x84000002);
  ASSERT_TRUE(pair.ok()) << pair.error().message;
  EXPECT_EQ(*pair, kDirect + 2 * kSize);
  auto world = mpich_comm_object(r.m, *layout, kMpichCommWorld);
  ASSERT_TRUE(world.ok()) << world.error().message;
  EXPECT_EQ(*world, kBuiltin);
  auto indirect = mpich_comm_object(r.m, *layout, 0xc4000001);
  ASSERT_TRUE(indirect.ok()) << indirect.error().message;
  EXPECT_EQ(*indirect, kBlock + kSize);
  // A heap pointer's low half that reads as a direct handle past the array names nothing.
  EXPECT_FALSE(mpich_comm_object(r.m, *layout, 0x843a3e88).ok());
  EXPECT_FALSE(mpich_comm_object(r.m, *layout, 0xac000000).ok()) << "a request handle";
}

TEST(MpichComm, AWorldThatDoesNotCheckOutIsRefusedWithTheReason) {
  Rank3 r;
  auto wrong_rank = r.layout(4);
  ASSERT_FALSE(wrong_rank.ok());
  EXPECT_NE(wrong_rank.error().message.find("no size 6 and rank 4"), std::string::npos) << wrong_rank.error().message;
  FakeMemory empty;
  empty.zero(kData, 0x1000);
  auto none = discover_mpich_layout(empty, {{kData, kData + 0x1000}}, 0, 2);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("not MPICH, or before MPI_Init"), std::string::npos) << none.error().message;
}

TEST(MpichComm, AHandleWhoseObjectCarriesAnotherIsRefused) {
  Rank3 r;
  auto layout = r.layout();
  ASSERT_TRUE(layout.ok());
  r.m.put<uint32_t>(kDirect + 5 * kSize, 0x84000007);  // slot 5 freed and reused elsewhere
  auto freed = read_mpich_comm(r.m, *layout, 0x84000005, 3, kWorldSize);
  ASSERT_FALSE(freed.ok());
  EXPECT_NE(freed.error().message.find("no object carrying that handle"), std::string::npos) << freed.error().message;
  EXPECT_FALSE(read_mpich_comm(r.m, *layout, 0xc4000005, 3, kWorldSize).ok()) << "past the block's objects";
  auto null = read_mpich_comm(r.m, *layout, 0x04000000, 3, kWorldSize);  // MPI_COMM_NULL
  ASSERT_FALSE(null.ok());
  EXPECT_NE(null.error().message.find("not an MPICH communicator handle"), std::string::npos);
}

TEST(MpichComm, MembersThatDoNotHoldThisRankAreRefused) {
  Rank3 r;
  auto layout = r.layout();
  ASSERT_TRUE(layout.ok());
  // The pair's map now says {4, 5}: this rank (world 3) is not in it.
  r.m.put<int32_t>(kDirect + 2 * kSize + kMap + 12, 4);
  auto wrong = read_mpich_comm(r.m, *layout, 0x84000002, 3, kWorldSize);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("does not check out"), std::string::npos) << wrong.error().message;
}

TEST(MpichComm, ARankMapThatOverflowsIsRefused) {
  Rank3 r;
  auto layout = r.layout();
  ASSERT_TRUE(layout.ok());
  // Stride mode with offset 1 and a stride near INT_MAX: member 1 is past any int (found by the fuzzer).
  uint64_t triple = kBlock;
  r.m.put<int32_t>(triple + kMap + 16, 0x7fffffff);
  auto wrong = read_mpich_comm(r.m, *layout, 0xc4000000, 3, kWorldSize);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("does not check out"), std::string::npos) << wrong.error().message;
}

TEST(MpichComm, WithoutARankMapTheMembersAreUnknownAndSaidSo) {
  Rank3 r(false);  // ch3: no ch4 rank map on the world
  auto layout = r.layout();
  ASSERT_TRUE(layout.ok()) << layout.error().message;
  EXPECT_EQ(layout->map_offset, 0u);
  auto pair = read_mpich_comm(r.m, *layout, 0x84000002, 3, kWorldSize);
  ASSERT_FALSE(pair.ok());
  EXPECT_NE(pair.error().message.find("members are not known"), std::string::npos) << pair.error().message;
}

TEST(MpichComm, OnlyCommunicatorHandlesAreCommunicators) {
  EXPECT_TRUE(is_mpich_comm_handle(kMpichCommWorld));
  EXPECT_TRUE(is_mpich_comm_handle(0x84000003));
  EXPECT_TRUE(is_mpich_comm_handle(0xc4001002));
  EXPECT_FALSE(is_mpich_comm_handle(0x04000000)) << "MPI_COMM_NULL";
  EXPECT_FALSE(is_mpich_comm_handle(0x4c000405)) << "MPI_INT, a datatype";
  EXPECT_FALSE(is_mpich_comm_handle(0x58000000)) << "MPI_OP_NULL";
}

}  // namespace
}  // namespace slowburn::mpich_comm_test
