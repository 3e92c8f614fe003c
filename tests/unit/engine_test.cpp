// The engine's parts without root: the node's sources on a fixture tree (the
// hardware pollers, the topology that joins events to ranks, the host's side
// following the ranks), the periodic schedule, the judges on replayed calls.
#include <gtest/gtest.h>

#include <map>

#include "engine/job_judges.h"
#include "engine/node_sources.h"
#include "engine/periodic.h"
#include "procfs/ranks.h"
#include "support/synthetic_job.h"
#include "sysfs/topology.h"

namespace slowburn::engine_test {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(SLOWBURN_SOURCE_DIR) / "tests/fixtures";

NodeSourcesOptions fixture_sources() {
  NodeSourcesOptions o;
  o.roots.proc_root = kFixtures / "proc-nvidia";
  o.roots.sysfs_root = kFixtures / "sys";
  o.roots.cgroup_root = kFixtures / "proc-nvidia";  // no cgroup tree here: the host says so, it does not fail
  o.kernel = false;
  o.rdma = false;
  return o;
}

TEST(NodeSources, TheHardwarePollersJoinWhatIsDegradedToTheRanksBehindIt) {
  auto sources = NodeSources::start(fixture_sources());
  ASSERT_TRUE(sources) << sources.error().message;
  std::map<std::string, ProbeState> states;
  for (const ProbeStatus& s : (*sources)->take_statuses()) states[s.probe] = s.state;
  EXPECT_EQ(states["pcie.link"], ProbeState::attached);
  EXPECT_EQ(states["pcie.aer"], ProbeState::unavailable) << "kernel sources off";
  ASSERT_NE((*sources)->topology(), nullptr);
  (*sources)->set_ranks(discover_ranks(kFixtures / "proc-nvidia"));
  auto events = (*sources)->poll(0, 1'000'000'000);
  ASSERT_TRUE(events) << events.error().message;
  std::map<std::string, std::vector<int>> ranks_by_device;
  for (const DeviceEvent& e : *events) ranks_by_device[e.type + " " + e.device] = e.ranks;
  EXPECT_EQ(ranks_by_device["link.downtrained 0000:03:00.0"], std::vector<int>{0}) << "GPU 0's link: rank 0's";
  EXPECT_TRUE(ranks_by_device.contains("link.down 0000:06:00.0"));
}

TEST(NodeSources, TheHostsSideFollowsTheRanksAndStopsWithTheLast) {
  NodeSourcesOptions o = fixture_sources();
  o.hardware = false;
  auto sources = NodeSources::start(o);
  ASSERT_TRUE(sources) << sources.error().message;
  EXPECT_TRUE((*sources)->take_statuses().empty()) << "nothing runs before a rank";
  EXPECT_EQ((*sources)->topology(), nullptr);
  std::vector<RankIdentity> ranks = discover_ranks(kFixtures / "proc-nvidia");
  ASSERT_FALSE(ranks.empty());
  (*sources)->set_ranks(ranks);
  std::map<std::string, ProbeState> states;
  for (const ProbeStatus& s : (*sources)->take_statuses()) states[s.probe] = s.state;
  EXPECT_EQ(states["host.sched"], ProbeState::unavailable) << "kernel sources off";
  EXPECT_EQ((*sources)->statuses().size(), states.size());
  (*sources)->set_ranks({});
  EXPECT_TRUE((*sources)->statuses().empty()) << "the host's side went with the last rank";
}

TEST(Periodic, DueOncePerPeriodAndNoBurstWhenLate) {
  Periodic every(100, 1000);
  EXPECT_FALSE(every.due(1099));
  EXPECT_TRUE(every.due(1100));
  EXPECT_FALSE(every.due(1150));
  EXPECT_TRUE(every.due(1200));
  EXPECT_TRUE(every.due(1750)) << "late";
  EXPECT_FALSE(every.due(1800)) << "one, not five to catch up";
  EXPECT_TRUE(every.due(1850));
}

TEST(JobJudges, ReplayedCallsWithTheirCommunicatorsAreJudgedAsLiveOnes) {
  testing::SyntheticJob job;
  job.ranks = 4;
  job.compute_ns = [](int rank, int) { return rank == 2 ? 4.5e6 : 3e6; };
  const ProbeSpec* allreduce = find_probe("mpi.allreduce");
  std::vector<RankIdentity> ranks;
  for (int r = 0; r < 4; ++r) {
    RankIdentity id;
    id.pid = testing::SyntheticJob::pid(r);
    id.rank = r;
    id.job = "77";
    ranks.push_back(id);
  }
  JobJudges judges({}, {allreduce}, ranks);
  for (const RankIdentity& r : ranks) judges.attached(allreduce->id, r.pid);
  auto comm = std::make_shared<CommunicatorInfo>();
  comm->key = "job:77";
  uint64_t last = 0;
  for (CallEvent e : job.run(400)) {
    e.probe_id = allreduce->id;
    judges.on_named_call(e, {comm, std::nullopt, e.seq, false});
    last = e.exit_ns;
  }
  judges.finish(last);
  SessionVerdict verdict = judges.verdict(last);
  ASSERT_EQ(verdict.stragglers.size(), 1u);
  EXPECT_EQ(verdict.stragglers[0].culprit.rank, 2);
  EXPECT_TRUE(judges.communicators().empty()) << "a replay's communicators are its caller's";
  EXPECT_TRUE(judges.take_notes().empty());
}

}  // namespace
}  // namespace slowburn::engine_test
