// A gloo::Context found among a stuck rank's stack words (comm/gloo_context.h)
// and what the registry names from it (comm/comm_registry.h read_gloo_value).
#include "comm/gloo_context.h"

#include <gtest/gtest.h>

#include "comm/comm_registry.h"
#include "support/fake_memory.h"

namespace slowburn::gloo_context_test {
namespace {

using testing::FakeMemory;

constexpr uint64_t kVtable = 0x7f00'0000'8000;  // an address point in libgloo
constexpr uint64_t kContext = 0x5600'0000'1000;

FakeMemory context_at(uint64_t address, uint64_t vptr, int32_t rank, int32_t size) {
  FakeMemory m;
  m.put<uint64_t>(address, vptr);
  m.put<int32_t>(address + 8, rank);
  m.put<int32_t>(address + 12, size);
  return m;
}

TEST(GlooContext, ReadsRankAndSizeOnlyBehindAContextVtable) {
  FakeMemory m = context_at(kContext, kVtable, 2, 4);
  auto c = read_gloo_context_checked(m, kContext, {kVtable});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->rank, 2);
  EXPECT_EQ(c->size, 4);
  // Any heap object with two small ints after its first word would pass without the vtable.
  EXPECT_FALSE(read_gloo_context_checked(m, kContext, {kVtable + 8}));
  EXPECT_FALSE(read_gloo_context_checked(m, kContext, {}));
  EXPECT_FALSE(read_gloo_context_checked(m, kContext + 0x100, {kVtable}));  // unreadable
}

TEST(GlooContext, ARankOutsideItsSizeIsNotAContext) {
  for (auto [rank, size] : {std::pair{4, 4}, {-1, 4}, {0, 0}, {0, kGlooMaxSize + 1}}) {
    FakeMemory m = context_at(kContext, kVtable, rank, size);
    EXPECT_FALSE(read_gloo_context_checked(m, kContext, {kVtable})) << rank << " of " << size;
  }
}

struct Job {
  std::map<int32_t, FakeMemory> memory;
  CommRegistry registry{
      [this](int32_t pid) { return std::make_unique<FakeMemory>(memory.at(pid)); },
      [](int32_t) { return MpiLibrary{}; },
      [](int32_t pid) { return pid == 99 ? std::vector<uint64_t>{} : std::vector<uint64_t>{kVtable}; }};

  void add(int32_t pid, int rank, int world, int context_rank, int context_size) {
    memory[pid] = context_at(kContext, kVtable, context_rank, context_size);
    RankIdentity id;
    id.pid = pid;
    id.rank = rank;
    id.world_size = world;
    id.job = "j";
    registry.add_rank(id);
  }
};

TEST(GlooContext, TheJobsSizedGroupIsTheWorldWithEveryRank) {
  Job job;
  job.add(10, 1, 4, 1, 4);
  job.add(11, 3, 4, 3, 4);
  auto a = job.registry.read_gloo_value(10, kContext);
  auto b = job.registry.read_gloo_value(11, kContext);
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ((*a)->label, "gloo world");
  EXPECT_EQ((*a)->members, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ((*a)->key, (*b)->key);
}

TEST(GlooContext, ASmallerGroupIsItsSizeClassWithoutMembers) {
  // Ranks 1 and 3 in groups of 2: one group or two, a snapshot cannot say.
  Job job;
  job.add(10, 1, 4, 1, 2);
  job.add(11, 3, 4, 1, 2);
  auto a = job.registry.read_gloo_value(10, kContext);
  auto b = job.registry.read_gloo_value(11, kContext);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->label, "a gloo group of 2 (members not known from a snapshot)");
  EXPECT_TRUE((*a)->members.empty());
  EXPECT_EQ((*a)->key, (*b)->key);
  // A group of the job's size where this rank sits elsewhere is not the world as PyTorch orders it.
  job.add(12, 0, 4, 2, 4);
  auto c = job.registry.read_gloo_value(12, kContext);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE((*c)->members.empty());
}

TEST(GlooContext, NoVtableToCheckAgainstReadsNothing) {
  Job job;
  job.add(99, 0, 2, 0, 2);
  auto c = job.registry.read_gloo_value(99, kContext);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("no gloo library"), std::string::npos) << c.error().message;
  EXPECT_FALSE(job.registry.read_gloo_value(12345, kContext).ok());  // not a rank
}

}  // namespace
}  // namespace slowburn::gloo_context_test
