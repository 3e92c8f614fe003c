#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "procfs/environ.h"
#include "procfs/maps.h"
#include "procfs/ranks.h"

namespace slowburn::procfs_test {
namespace {

const std::filesystem::path kProc = std::filesystem::path(SLOWBURN_SOURCE_DIR) / "tests/fixtures/proc";

TEST(Environ, ParsesNulSeparatedPairs) {
  using namespace std::string_literals;
  auto env = parse_environ("A=1\0B=x=y\0\0noequals\0=v\0C=\0"s);
  EXPECT_EQ(env.size(), 3u);
  EXPECT_EQ(env["A"], "1");
  EXPECT_EQ(env["B"], "x=y");
  EXPECT_EQ(env["C"], "");
  EXPECT_EQ(parse_cmdline("python\0train.py\0--lr\0"s), "python train.py --lr");
}

TEST(Maps, ParsesLinesAndSkipsMalformed) {
  std::istringstream in(
      "7f1c2a068000-7f1c2a0f0000 r-xp 00068000 fe:01 4242 /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4\n"
      "7f1c2d000000-7f1c2d021000 rw-p 00000000 00:00 0 \n"
      "garbage\n"
      "7f1c2c000000-7f1c2c100000 r-xp 00000000 fe:01 5555 /opt/with space/libnccl.so.2 (deleted)\n");
  auto maps = parse_maps(in);
  ASSERT_EQ(maps.size(), 3u);
  EXPECT_EQ(maps[0].start, 0x7f1c2a068000u);
  EXPECT_EQ(maps[0].offset, 0x68000u);
  EXPECT_EQ(maps[0].dev_major, 0xfeu);
  EXPECT_EQ(maps[0].inode, 4242u);
  EXPECT_EQ(maps[0].path, "/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4");
  EXPECT_TRUE(maps[1].path.empty());
  EXPECT_EQ(maps[2].path, "/opt/with space/libnccl.so.2");
  EXPECT_TRUE(maps[2].deleted);
}

TEST(Maps, LibraryNameMatching) {
  EXPECT_TRUE(library_name_matches("/usr/lib/libmpi.so.40.30.4", "libmpi.so"));
  EXPECT_TRUE(library_name_matches("/usr/lib/libmpi.so", "libmpi.so"));
  EXPECT_FALSE(library_name_matches("/usr/lib/libmpi_cxx.so.40", "libmpi.so"));
  EXPECT_FALSE(library_name_matches("/usr/lib/libmpi.sox", "libmpi.so"));
  EXPECT_TRUE(library_name_matches("libcudart.so.13", "libcudart.so"));
}

TEST(Maps, FindLibraryInFixture) {
  std::ifstream in(kProc / "101/maps");
  auto maps = parse_maps(in);
  auto mpi = find_library(maps, "libmpi.so");
  ASSERT_TRUE(mpi.has_value());
  EXPECT_EQ(mpi->inode, 4242u);
  auto nccl = find_library(maps, "libnccl.so");
  ASSERT_TRUE(nccl.has_value());
  EXPECT_TRUE(nccl->deleted);
  EXPECT_FALSE(find_library(maps, "libcudart.so").has_value());
}

TEST(Maps, TheMappingHoldingAnAddress) {
  std::ifstream in(kProc / "101/maps");
  auto maps = parse_maps(in);
  ASSERT_FALSE(maps.empty());
  const MapEntry& first = maps.front();
  auto at = mapping_at(maps, first.start);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->start, first.start);
  EXPECT_EQ(mapping_at(maps, first.end - 1)->start, first.start);
  EXPECT_FALSE(mapping_at(maps, 0).has_value());
  auto after = mapping_at(maps, maps.back().end);  // the end is exclusive
  EXPECT_TRUE(!after || after->start == maps.back().end);
}

TEST(Ranks, IdentifyPrecedence) {
  Environment both{{"OMPI_COMM_WORLD_RANK", "3"}, {"SLURM_PROCID", "7"}, {"SLURM_LOCALID", "1"}};
  auto id = identify_rank(both);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->rank, 3);
  EXPECT_EQ(id->launcher, "openmpi");
  EXPECT_EQ(id->local_rank, 1);                                         // taken from the first variable that has one
  EXPECT_FALSE(identify_rank(Environment{{"RANK", "1"}}).has_value());  // RANK alone is too common
  EXPECT_FALSE(identify_rank(Environment{{"PMI_RANK", "-1"}}).has_value());
  EXPECT_FALSE(identify_rank(Environment{{"PMI_RANK", "1x"}}).has_value());
}

TEST(Ranks, DiscoverFixtureTree) {
  auto ranks = discover_ranks(kProc);
  std::vector<std::pair<int32_t, int>> found;
  for (const RankIdentity& r : ranks) found.push_back({r.pid, r.rank});
  // Sorted by (job, rank): "" < "7001.3" < "7002.1" < "777" < "9001.0" < "hydra:node-a:40123" < "ns1" < "run-abc"
  std::vector<std::pair<int32_t, int>> expected{{302, 4}, {610, 0}, {611, 3}, {101, 0}, {102, 1},
                                                {301, 2}, {601, 0}, {602, 1}, {303, 6}, {201, 5}};
  EXPECT_EQ(found, expected);

  const RankIdentity& r0 = ranks[3];
  EXPECT_EQ(r0.launcher, "openmpi");
  EXPECT_EQ(r0.job, "777");
  EXPECT_EQ(r0.local_rank, 0);
  EXPECT_EQ(r0.world_size, 4);
  EXPECT_EQ(r0.host, "gpu-node-07");
  EXPECT_EQ(r0.command, "python train.py --lr");
  EXPECT_EQ(r0.cuda_visible_devices, "0");
  EXPECT_EQ(r0.nccl_ib_hca, "mlx5_0");

  const RankIdentity& slurm = ranks[5];
  EXPECT_EQ(slurm.launcher, "slurm");
  EXPECT_EQ(slurm.job, "9001.0");
  EXPECT_EQ(slurm.world_size, 8);

  const RankIdentity& torch = ranks[9];
  EXPECT_EQ(torch.launcher, "torchrun");
  EXPECT_EQ(torch.local_rank, 1);
  EXPECT_EQ(torch.world_size, 16);
}

TEST(Ranks, MpichJobsAreNamedByTheirLauncher) {
  // Hydra sets no job id: its proxy's control port names the mpiexec on every node.
  auto hydra = read_rank(kProc, 602);
  ASSERT_TRUE(hydra.ok()) << hydra.error().message;
  EXPECT_EQ(hydra->launcher, "pmi");
  EXPECT_EQ(hydra->job, "hydra:node-a:40123");
  EXPECT_EQ(hydra->rank, 1);
  EXPECT_EQ(hydra->local_rank, 1);
  EXPECT_EQ(hydra->world_size, 2);
  // A PMI rank whose parent is not a hydra proxy: no job to name.
  auto orphan = read_rank(kProc, 302);
  ASSERT_TRUE(orphan.ok());
  EXPECT_EQ(orphan->job, "");
  // srun --mpi=pmi2 sets PMI_JOBID; a PMI library that sets none falls back to Slurm's job and step.
  EXPECT_EQ(read_rank(kProc, 610)->job, "7001.3");
  auto slurm = read_rank(kProc, 611);
  EXPECT_EQ(slurm->launcher, "pmi");
  EXPECT_EQ(slurm->job, "7002.1");
  EXPECT_EQ(slurm->rank, 3);
  EXPECT_EQ(slurm->local_rank, 0);
}

TEST(Ranks, ExcludesTheCaller) {
  auto ranks = discover_ranks(kProc, 101);
  for (const RankIdentity& r : ranks) EXPECT_NE(r.pid, 101);
}

TEST(Ranks, ReadRankErrorsSayWhy) {
  auto ok = read_rank(kProc, 201);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->rank, 5);

  auto missing = read_rank(kProc, 4242);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("does not exist or has exited"), std::string::npos);

  auto zombie = read_rank(kProc, 401);
  ASSERT_FALSE(zombie.ok());
  EXPECT_NE(zombie.error().message.find("has exited"), std::string::npos);

  auto not_rank = read_rank(kProc, 202);
  ASSERT_FALSE(not_rank.ok());
  EXPECT_NE(not_rank.error().message.find("pid 202 (bash) is not a rank"), std::string::npos);
  EXPECT_NE(not_rank.error().message.find("OMPI_COMM_WORLD_RANK"), std::string::npos);
}

TEST(Ranks, ProcessAliveReadsState) {
  EXPECT_TRUE(process_alive(kProc, 301));  // comm with parentheses
  EXPECT_FALSE(process_alive(kProc, 401));
  EXPECT_FALSE(process_alive(kProc, 12345));
}

}  // namespace
}  // namespace slowburn::procfs_test
