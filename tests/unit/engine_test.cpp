// The engine's parts without root: the node's sources on a fixture tree (the
// hardware pollers, the topology that joins events to ranks, the host's side
// following the ranks), the periodic schedule, the judges on replayed calls.
#include <gtest/gtest.h>

#include <algorithm>
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

// A job's calls whose collective takes 3 ms after the last arrival, then
// 9 ms from step 1500; its pids from `first_pid`.
std::vector<CallEvent> slowing_job(int32_t first_pid, uint32_t probe_id) {
  std::vector<CallEvent> events = testing::collective_slows().events;
  for (CallEvent& e : events) {
    e.pid = e.tid = static_cast<uint32_t>(first_pid + (static_cast<int32_t>(e.pid) - testing::SyntheticJob::pid(0)));
    e.probe_id = probe_id;
  }
  return events;
}

TEST(JobJudges, ANodesDataPathEventWeighsForItsOwnRankOnlyNotAnotherJobsRankOfTheSameNumber) {
  const ProbeSpec* allreduce = find_probe("mpi.allreduce");
  std::vector<RankIdentity> ranks;
  for (const auto& [job, first_pid] : {std::pair<std::string, int32_t>{"77", 1000}, {"88", 2000}})
    for (int r = 0; r < 4; ++r) {
      RankIdentity id;
      id.pid = first_pid + r;
      id.rank = r;
      id.job = job;
      ranks.push_back(id);
    }
  JobJudges judges({}, {allreduce}, ranks);
  for (const RankIdentity& r : ranks) judges.attached(allreduce->id, r.pid);
  std::vector<CallEvent> a = slowing_job(1000, allreduce->id), b = slowing_job(2000, allreduce->id);
  uint64_t slow_from = a[1500 * 4].entry_ns;
  // Rank 1 of job 77: its sockets; rank 1 of job 88: its CPU, not a data path.
  DeviceEvent tcp;
  tcp.type = "host.tcp_retrans";
  tcp.pid = 1001;
  tcp.ranks = {1};
  tcp.summary = "rank 1 (pid 1001)'s TCP sockets retransmitted 3.0% of the bytes they sent";
  judges.device_event(tcp, slow_from);
  DeviceEvent cpu = tcp;
  cpu.type = "host.cpu_throttled";
  cpu.pid = 2001;
  judges.device_event(cpu, slow_from);
  for (const auto* events : {&a, &b}) {
    auto comm = std::make_shared<CommunicatorInfo>();
    comm->key = events == &a ? "job:77" : "job:88";
    for (const CallEvent& e : *events) judges.on_named_call(e, {comm, std::nullopt, e.seq, false});
  }
  uint64_t last = std::max(a.back().exit_ns, b.back().exit_ns);
  judges.finish(last);
  SessionVerdict verdict = judges.verdict(last);
  ASSERT_EQ(verdict.stragglers.size(), 1u);
  const Finding& f = verdict.stragglers[0];
  EXPECT_EQ(f.culprit.pid, 1001);
  ASSERT_TRUE(f.inside.has_value());
  EXPECT_EQ(f.inside->transport, "its TCP sockets retransmitted 3.0% of the bytes they sent");
}

}  // namespace
}  // namespace slowburn::engine_test
