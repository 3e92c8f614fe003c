// Host signals: the procfs and cgroup parsers (v1 and v2 formats, as the
// kernel writes them, and malformed lines), the reader on fixture trees of
// both hierarchies, and the judge that names a rank's host cause only when
// it sets the rank apart from its peers.
#include <gtest/gtest.h>

#include <fstream>

#include "host/host_causes.h"
#include "host/host_parsers.h"
#include "host/host_reader.h"
#include "host/numa_placement.h"
#include "sources/host_monitor.h"
#include "support/temp_dir.h"

namespace slowburn::host_test {
namespace {

TEST(HostParsers, ProcStatWithSpacesAndParenthesesInTheComm) {
  // proc(5): minflt is field 10, majflt 12, processor 39.
  std::string text =
      "4242 (my (odd) rank) R 1 4242 4242 0 -1 4194560 1500 0 7 0 120 30 0 0 20 0 3 0 12345 100000 200 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  auto stat = parse_proc_stat(text);
  ASSERT_TRUE(stat.ok()) << stat.error().message;
  EXPECT_EQ(stat->comm, "my (odd) rank");
  EXPECT_EQ(stat->minflt, 1500u);
  EXPECT_EQ(stat->majflt, 7u);
  EXPECT_EQ(stat->processor, 1);
  EXPECT_FALSE(parse_proc_stat("4242 (x) R 1 2").ok());
  EXPECT_FALSE(parse_proc_stat("no comm here").ok());
}

TEST(HostParsers, ProcStatus) {
  auto status = parse_proc_status(
      "Name:\tpython3\nCpus_allowed_list:\t0-1\nVmSwap:\t    128 kB\nvoluntary_ctxt_switches:\t150\n"
      "nonvoluntary_ctxt_switches:\t545\n");
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status->voluntary_ctxt_switches, 150u);
  EXPECT_EQ(status->nonvoluntary_ctxt_switches, 545u);
  EXPECT_EQ(status->cpus_allowed, (std::set<int>{0, 1}));
  EXPECT_EQ(status->vm_swap_kb, 128u);
  EXPECT_FALSE(parse_proc_status("Name:\tx\n").ok());
  EXPECT_FALSE(parse_proc_status("voluntary_ctxt_switches:\tmany\n").ok());
}

TEST(HostParsers, CgroupMembershipV1AndV2) {
  auto v1 =
      parse_proc_cgroup("12:cpu,cpuacct:/slowburn/job\n11:memory:/slowburn/job\n1:name=systemd:/user.slice\n0::/\n");
  ASSERT_TRUE(v1.ok()) << v1.error().message;
  EXPECT_EQ(v1->v1.at("cpu"), "/slowburn/job");
  EXPECT_EQ(v1->v1.at("cpuacct"), "/slowburn/job");
  EXPECT_EQ(v1->v1.at("memory"), "/slowburn/job");
  EXPECT_EQ(v1->unified, "/");
  auto v2 = parse_proc_cgroup("0::/kubepods.slice/pod1/rank\n");
  ASSERT_TRUE(v2.ok());
  EXPECT_TRUE(v2->v1.empty());
  EXPECT_EQ(v2->unified, "/kubepods.slice/pod1/rank");
  EXPECT_FALSE(parse_proc_cgroup("garbage\n").ok());
  EXPECT_FALSE(parse_proc_cgroup("0::relative\n").ok());
}

TEST(HostParsers, CpuStatBothVersions) {
  auto v1 = parse_cpu_stat("nr_periods 1578\nnr_throttled 1576\nthrottled_time 131234567890\n");
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(v1->nr_periods, 1578u);
  EXPECT_EQ(v1->nr_throttled, 1576u);
  EXPECT_EQ(v1->throttled_ns, 131234567890u);
  auto v2 = parse_cpu_stat(
      "usage_usec 100\nuser_usec 60\nsystem_usec 40\nnr_periods 10\nnr_throttled 4\nthrottled_usec 2500\n"
      "nr_bursts 0\nburst_usec 0\n");
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->throttled_ns, 2'500'000u);
  // v2 without the cpu controller enabled: usage only.
  EXPECT_FALSE(parse_cpu_stat("usage_usec 100\nuser_usec 60\nsystem_usec 40\n").ok());
  EXPECT_FALSE(parse_cpu_stat("nr_periods ten\n").ok());
}

TEST(HostParsers, QuotaBothVersions) {
  EXPECT_EQ(parse_cpu_max("25000 100000\n")->cpus(), 0.25);
  EXPECT_FALSE(parse_cpu_max("max 100000\n")->cpus());
  EXPECT_FALSE(parse_cpu_max("lots 100000").ok());
  EXPECT_FALSE(parse_cpu_max("1000 0").ok());
  EXPECT_EQ(parse_cfs_quota("15000\n", "100000\n")->cpus(), 0.15);
  EXPECT_FALSE(parse_cfs_quota("-1\n", "100000\n")->cpus());
  EXPECT_FALSE(parse_cfs_quota("-5", "100000").ok());
}

TEST(HostParsers, PressureAndKeyedFiles) {
  auto p = parse_pressure(
      "some avg10=41.50 avg60=12.00 avg300=3.00 total=123456\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=999\n");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_DOUBLE_EQ(p->some_avg10, 41.5);
  EXPECT_EQ(p->some_total_us, 123456u);
  EXPECT_EQ(p->full_total_us, 999u);
  EXPECT_FALSE(parse_pressure("some avg10=1.0\n").ok());
  EXPECT_FALSE(parse_pressure("half avg10=1.0 total=3\n").ok());
  auto events = parse_flat_keyed("low 0\nhigh 12\nmax 3\noom 1\noom_kill 1\n");
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->at("high"), 12u);
  EXPECT_FALSE(parse_flat_keyed("high\n").ok());
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

const char* kStat = "77 (rank) R 1 77 77 0 -1 0 10 0 3 0 1 1 0 0 20 0 1 0 1 1 1 1 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0\n";
const char* kStatus = "voluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t2\nCpus_allowed_list:\t0\n";

TEST(HostReader, CgroupV1Tree) {
  testing::TempDir root;
  write(root / "proc/77/stat", kStat);
  write(root / "proc/77/status", kStatus);
  write(root / "proc/77/cgroup", "5:cpu,cpuacct:/job\n4:memory:/job\n0::/\n");
  write(root / "cg/cpu,cpuacct/tasks", "");
  write(root / "cg/cpu,cpuacct/job/cpu.stat", "nr_periods 100\nnr_throttled 90\nthrottled_time 5000000000\n");
  write(root / "cg/cpu,cpuacct/job/cpu.cfs_quota_us", "25000\n");
  write(root / "cg/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
  write(root / "cg/memory/tasks", "");
  write(root / "cg/memory/job/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  write(root / "cg/memory/job/memory.failcnt", "17\n");
  HostReader reader({root / "proc", root / "cg"});
  HostReading r = reader.read(77, 1000);
  ASSERT_TRUE(r.stat && r.status && r.cgroup);
  EXPECT_EQ(r.stat->majflt, 3u);
  EXPECT_EQ(r.cgroup->version, CgroupVersion::v1);
  EXPECT_EQ(r.cgroup->cpu_path, "/job");
  ASSERT_TRUE(r.cgroup->cpu_stat);
  EXPECT_EQ(r.cgroup->cpu_stat->nr_throttled, 90u);
  EXPECT_EQ(r.cgroup->quota->cpus(), 0.25);
  EXPECT_EQ(r.cgroup->memory_events.at("oom_kill"), 2u);
  EXPECT_EQ(r.cgroup->memory_events.at("failcnt"), 17u);
  EXPECT_FALSE(r.cgroup->cpu_pressure) << "no PSI per cgroup in v1";
  EXPECT_EQ(reader.cpu_source(77), "cgroup v1 (" + (root / "cg/cpu,cpuacct/job").string() + ")");
  EXPECT_TRUE(reader.take_notes().empty());
}

TEST(HostReader, CgroupV2TreeAndAMalformedFile) {
  testing::TempDir root;
  write(root / "proc/77/stat", kStat);
  write(root / "proc/77/status", kStatus);
  write(root / "proc/77/cgroup", "0::/pod/rank\n");
  write(root / "cg/cgroup.controllers", "cpu memory io\n");
  write(root / "cg/pod/rank/cpu.stat", "usage_usec 1\nnr_periods 10\nnr_throttled 1\nthrottled_usec 7\n");
  write(root / "cg/pod/rank/cpu.max", "50000 100000\n");
  write(root / "cg/pod/rank/memory.events", "low 0\nhigh 4\nmax 1\noom 0\noom_kill 0\n");
  write(root / "cg/pod/rank/cpu.pressure", "some avg10=2.00 avg60=1.00 avg300=0.00 total=5000\n");
  write(root / "cg/pod/rank/memory.pressure",
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  write(root / "cg/pod/rank/io.pressure", "this is not PSI\n");
  HostReader reader({root / "proc", root / "cg"});
  HostReading r = reader.read(77, 1000);
  ASSERT_TRUE(r.cgroup);
  EXPECT_EQ(r.cgroup->version, CgroupVersion::v2);
  EXPECT_EQ(r.cgroup->cpu_stat->throttled_ns, 7000u);
  EXPECT_EQ(r.cgroup->quota->cpus(), 0.5);
  EXPECT_EQ(r.cgroup->memory_events.at("high"), 4u);
  EXPECT_EQ(r.cgroup->cpu_pressure->some_total_us, 5000u);
  EXPECT_TRUE(r.cgroup->memory_pressure);
  EXPECT_FALSE(r.cgroup->io_pressure);
  auto notes = reader.take_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("io.pressure"), std::string::npos) << notes[0];
  reader.read(77, 2000);
  EXPECT_TRUE(reader.take_notes().empty()) << "said once";
  EXPECT_EQ(reader.cpu_source(78).find("cannot"), 0u) << reader.cpu_source(78);
}

RankIdentity rank(int r) {
  RankIdentity id;
  id.pid = 100 + r;
  id.rank = r;
  id.job = "j";
  return id;
}

// Four ranks over 10 s with the same ordinary signals.
std::vector<HostInterval> healthy_job() {
  std::vector<HostInterval> job;
  for (int r = 0; r < 4; ++r) {
    HostInterval i;
    i.rank = rank(r);
    i.span_ns = 10'000'000'000;
    SchedSums s;
    s.oncpu_ns = 8'000'000'000;
    s.offcpu_ns[static_cast<size_t>(OffCpuReason::runnable)] = 400'000'000;
    s.offcpu_ns[static_cast<size_t>(OffCpuReason::sleep)] = 1'600'000'000;
    i.sched = s;
    i.major_faults = 2;
    i.throttling = CpuStat{100, 0, 0};
    i.cgroup = "/job";
    job.push_back(i);
  }
  return job;
}

TEST(HostCauses, AHealthyJobHasNone) { EXPECT_TRUE(judge_host(healthy_job()).empty()); }

TEST(HostCauses, AThrottledRankIsNamedWithItsNumbers) {
  auto job = healthy_job();
  job[3].throttling = CpuStat{100, 99, 7'000'000'000};
  job[3].quota = CpuQuota{15000, 100000};
  job[3].cgroup = "/slowburn-test";
  // Throttled, it also waited in the run queue: the quota says why.
  job[3].sched->offcpu_ns[0] = 7'000'000'000;
  auto causes = judge_host(job);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].type, "host.cpu_throttled");
  EXPECT_EQ(causes[0].rank, 3);
  EXPECT_EQ(causes[0].summary,
            "rank 3 (pid 103)'s cgroup /slowburn-test throttled it in 99% of 100 ms periods (99 of 100; quota 15% of a "
            "CPU; 7.00 s throttled in 10.0 s; peers' median 0%)");
}

TEST(HostCauses, ACgroupEveryRankSharesExplainsNoOne) {
  auto job = healthy_job();
  for (HostInterval& i : job) i.throttling = CpuStat{100, 95, 1'000'000'000};
  EXPECT_TRUE(judge_host(job).empty());
}

TEST(HostCauses, ARankSharingItsCpuNamesTheProcess) {
  auto job = healthy_job();
  job[2].sched->oncpu_ns = 4'000'000'000;
  job[2].sched->offcpu_ns[0] = 4'000'000'000;
  job[2].shares = {{102, 812, 1, 3'500'000'000, "python3"},
                   {102, 101, 1, 300'000'000, "rank"},
                   {102, 812, 0, 100'000'000, "python3"}};
  auto causes = judge_host(job);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].type, "host.cpu_contention");
  EXPECT_EQ(causes[0].other_pid, 812);
  EXPECT_EQ(causes[0].label, "CPU 1");
  EXPECT_NE(causes[0].summary.find("runnable but not running 50% of the time it wanted a CPU"), std::string::npos)
      << causes[0].summary;
  EXPECT_NE(causes[0].summary.find("shares CPU 1 with pid 812 (python3), 3.60 s of its waits"), std::string::npos)
      << causes[0].summary;
  // Rank 1 also held the CPU: counted beside the one named.
  EXPECT_NE(causes[0].summary.find("; 1 other process 300.00 ms"), std::string::npos) << causes[0].summary;
}

TEST(HostCauses, ARankPushedToSwapIsNamedAndRanksThatSwapAlikeAreNot) {
  auto job = healthy_job();
  for (HostInterval& i : job) {
    i.swap_kb = 1024;
    i.swapped_out_kb = 0;
  }
  job[1].swap_kb = 512 * 1024;
  job[1].swapped_out_kb = 128 * 1024;
  auto causes = judge_host(job);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].type, "host.swap");
  EXPECT_EQ(causes[0].rank, 1);
  EXPECT_EQ(causes[0].summary,
            "rank 1 (pid 101) had 128 MiB more of its memory pushed to swap in 10.0 s (512 MiB in swap now; "
            "peers' median +0 B)");
  // Every rank swapping as much: the node's condition, no one's cause.
  for (HostInterval& i : job) i.swapped_out_kb = 128 * 1024;
  EXPECT_TRUE(judge_host(job).empty());
  // Below 16 MiB: not said.
  job = healthy_job();
  job[1].swap_kb = 8 * 1024;
  job[1].swapped_out_kb = 8 * 1024;
  EXPECT_TRUE(judge_host(job).empty());
}

TEST(HostCauses, AnotherRankAsTheNeighbourIsNamedByItsRank) {
  auto job = healthy_job();
  job[2].sched->offcpu_ns[0] = 8'000'000'000;
  job[2].shares = {{102, 101, 0, 2'000'000'000, "rank"}};
  auto causes = judge_host(job);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_NE(causes[0].summary.find("with rank 1 (pid 101)"), std::string::npos) << causes[0].summary;
}

TEST(HostCauses, EveryRankWaitingForACpuIsNoOnesCause) {
  auto job = healthy_job();
  for (HostInterval& i : job) i.sched->offcpu_ns[0] = 6'000'000'000;
  EXPECT_TRUE(judge_host(job).empty());
}

// A loaded node where every rank waits most of the time (ranks that spin in
// their collectives stay runnable): 96% against the peers' 90% has the odds
// (24 against 9) but only 6% more of the span, no one's cause.
TEST(HostCauses, WaitingALittleMoreThanPeersThatAllWaitIsNoOnesCause) {
  auto job = healthy_job();
  for (HostInterval& i : job) {
    i.sched->oncpu_ns = 1'000'000'000;
    i.sched->offcpu_ns[0] = 9'000'000'000;
    i.sched->offcpu_ns[static_cast<size_t>(OffCpuReason::sleep)] = 0;
  }
  job[1].sched->oncpu_ns = 400'000'000;
  job[1].sched->offcpu_ns[0] = 9'600'000'000;
  EXPECT_TRUE(judge_host(job).empty());
  // Waiting 40% more of the span than they do is.
  job[1].sched->offcpu_ns[0] = 9'600'000'000;
  for (size_t r : {0u, 2u, 3u}) {
    job[r].sched->oncpu_ns = 5'000'000'000;
    job[r].sched->offcpu_ns[0] = 5'000'000'000;
  }
  auto causes = judge_host(job);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].type, "host.cpu_contention");
  EXPECT_EQ(causes[0].rank, 1);
}

TEST(HostCauses, IoFaultsAndMemory) {
  auto job = healthy_job();
  job[1].sched->offcpu_ns[static_cast<size_t>(OffCpuReason::io)] = 2'000'000'000;
  job[2].major_faults = 5000;
  job[3].memory_events = {{"oom_kill", 1}, {"max", 40}};
  auto causes = judge_host(job);
  std::map<int, std::vector<std::string>> by_rank;
  for (const HostCause& c : causes) by_rank[c.rank].push_back(c.type);
  EXPECT_EQ(by_rank[1], std::vector<std::string>{"host.blocked_io"});
  EXPECT_EQ(by_rank[2], std::vector<std::string>{"host.page_faults"});
  EXPECT_EQ(by_rank[3], (std::vector<std::string>{"host.oom_kill", "host.memory_limit"}));
  EXPECT_EQ(by_rank.count(0), 0u);
}

TEST(HostCauses, OneRankOnTheNodeIsJudgedOnThresholdsAlone) {
  auto job = healthy_job();
  job.resize(1);
  job[0].throttling = CpuStat{100, 50, 1};
  auto causes = judge_host(job);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_NE(causes[0].summary.find("no peer on this node to compare"), std::string::npos);
}

TEST(HostInterval, DifferencesOfTwoReadings) {
  HostReading a, b;
  a.ts_ns = 1'000'000'000;
  b.ts_ns = 6'000'000'000;
  a.stat = ProcStat{"r", 0, 10, 0};
  b.stat = ProcStat{"r", 0, 25, 0};
  CgroupReading ca, cb;
  ca.cpu_path = cb.cpu_path = "/job";
  ca.cpu_stat = CpuStat{10, 2, 100};
  cb.cpu_stat = CpuStat{60, 52, 900};
  ca.memory_events = {{"high", 3}};
  cb.memory_events = {{"high", 3}, {"max", 2}};
  ca.cpu_pressure = Pressure{0, 1000, std::nullopt};
  cb.cpu_pressure = Pressure{0, 2'501'000, std::nullopt};
  a.cgroup = ca;
  b.cgroup = cb;
  HostInterval i = host_interval(rank(0), a, b, {});
  EXPECT_EQ(i.span_ns, 5'000'000'000u);
  EXPECT_EQ(i.major_faults, 15u);
  EXPECT_EQ(i.throttling->nr_periods, 50u);
  EXPECT_EQ(i.throttling->nr_throttled, 50u);
  EXPECT_EQ(i.memory_events, (std::map<std::string, uint64_t>{{"max", 2}}));
  EXPECT_DOUBLE_EQ(*i.cpu_pressure, 0.5);
  // Moved to another cgroup: no difference across two groups.
  cb.cpu_path = "/other";
  b.cgroup = cb;
  EXPECT_FALSE(host_interval(rank(0), a, b, {}).throttling);
}

TEST(HostInterval, TcpRetransmissionsPerSocket) {
  // Socket 1 sent 100 kB more and retransmitted 3 segments (4 kB) of it,
  // socket 2 closed (its counts leave), socket 3 opened: 50 kB, 4 segments
  // (5 kB) again. Socket 4's counts went back (reset by tcp_disconnect): 0.
  HostReading a, b;
  a.ts_ns = 1'000'000'000;
  b.ts_ns = 6'000'000'000;
  a.tcp = TcpReading{{{1, {5, 1'000'000, 9'000}}, {2, {10, 900'000, 15'000}}, {4, {0xFFFFFFFF, 10, 0}}}, 300};
  b.tcp = TcpReading{{{1, {8, 1'100'000, 13'000}}, {3, {4, 50'000, 5'000}}, {4, {1, 10, 0}}}, 2500};
  HostInterval i = host_interval(rank(0), a, b, {});
  EXPECT_EQ(i.tcp_retrans, 7u);
  EXPECT_EQ(i.tcp_bytes_sent, 150'000u);
  EXPECT_EQ(i.tcp_bytes_retrans, 9'000u);
  EXPECT_EQ(i.tcp_sockets, 3u);
  EXPECT_EQ(i.tcp_max_rtt_us, 2500u);
  // A reading that could not read them starts no span: the sockets'
  // whole lives would count as the span's.
  a.tcp.reset();
  EXPECT_FALSE(host_interval(rank(0), a, b, {}).tcp_retrans);
  b.tcp.reset();
  EXPECT_FALSE(host_interval(rank(0), a, b, {}).tcp_retrans);
  // Read, and none: zero, not unknown.
  a.tcp = b.tcp = TcpReading{};
  EXPECT_EQ(host_interval(rank(0), a, b, {}).tcp_retrans, 0u);
}

TEST(HostCauses, ARankWhoseSocketsLoseSegmentsIsNamedAndRanksThatLoseAlikeAreNot) {
  auto job = healthy_job();
  for (HostInterval& i : job) {
    i.tcp_retrans = 1;
    i.tcp_bytes_sent = 100'000'000;
    i.tcp_bytes_retrans = 1'448;
    i.tcp_sockets = 6;
    i.tcp_max_rtt_us = 80;
  }
  job[2].tcp_retrans = 340;
  job[2].tcp_bytes_retrans = 3'400'000;
  job[2].tcp_max_rtt_us = 12'300;
  auto causes = judge_host(job);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].type, "host.tcp_retrans");
  EXPECT_EQ(causes[0].rank, 2);
  EXPECT_DOUBLE_EQ(causes[0].value, 0.034);
  EXPECT_EQ(causes[0].summary,
            "rank 2 (pid 102)'s TCP sockets retransmitted 340 segments in 10.0 s, 3.4% of the 95.4 MiB they sent "
            "(peers' median 0.0%), over 6 socket(s), smoothed RTT up to 12.30 ms");
  // Many, but a sliver of what it sent (a long session, or the rank whose
  // ring traffic crosses nodes): no cause.
  job[2].tcp_bytes_sent = 100'000'000'000;
  EXPECT_TRUE(judge_host(job).empty());
  // Nothing sent counted (a kernel before 4.19): no share to judge.
  job[2].tcp_bytes_sent = 0;
  EXPECT_TRUE(judge_host(job).empty());
  // Nor is a peer that sent nothing counted one to compare with: beside two
  // such peers and one losing 1%, the median is that 1%, not 0.
  job[2].tcp_bytes_sent = 100'000'000;
  job[0].tcp_bytes_sent = job[1].tcp_bytes_sent = 0;
  job[3].tcp_bytes_retrans = 1'000'000;
  causes = judge_host(job);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].rank, 2);
  ASSERT_TRUE(causes[0].peers_value);
  EXPECT_DOUBLE_EQ(*causes[0].peers_value, 0.01) << "rank 3's share alone";
  job[0].tcp_bytes_sent = job[1].tcp_bytes_sent = 100'000'000;
  job[3].tcp_bytes_retrans = 1'448;
  // Few; or every rank losing as much (the whole fabric): no one's.
  job[2].tcp_bytes_sent = 100'000'000;
  job[2].tcp_retrans = 15;
  EXPECT_TRUE(judge_host(job).empty());
  for (HostInterval& i : job) {
    i.tcp_retrans = 340;
    i.tcp_bytes_retrans = 3'400'000;
  }
  EXPECT_TRUE(judge_host(job).empty());
}

// A two-socket node: CPUs 0-3 on node 0, 4-7 on node 1.
std::map<int, int> two_nodes() {
  std::map<int, int> nodes;
  for (int cpu = 0; cpu < 8; ++cpu) nodes[cpu] = cpu < 4 ? 0 : 1;
  return nodes;
}

TEST(NumaPlacement, ARankPinnedAwayFromItsGpuIsNamedWithBothNodes) {
  std::vector<PlacedDevice> devices = {{"GPU", "GPU 0 NVIDIA H100", "0000:3b:00.0", 0},
                                       {"NIC", "mlx5_0", "0000:5e:00.0", 1}};
  auto causes = judge_numa_placement(rank(2), {4, 5, 6, 7}, two_nodes(), devices);
  ASSERT_EQ(causes.size(), 1u);  // the NIC is on its node
  EXPECT_EQ(causes[0].type, "host.numa_placement");
  EXPECT_EQ(causes[0].rank, 2);
  EXPECT_EQ(causes[0].label, "GPU 0 NVIDIA H100");
  EXPECT_EQ(causes[0].summary,
            "rank 2 (pid 102) may run only on NUMA node 1 (CPUs 4-7), but its GPU GPU 0 NVIDIA H100 (0000:3b:00.0) "
            "is on node 0 (CPUs 0-3): every copy to it crosses the socket interconnect");
}

TEST(NumaPlacement, ARankThatMayRunOnItsDevicesNodeOrOnOneNodeOrUnknownIsNotNamed) {
  std::vector<PlacedDevice> gpu = {{"GPU", "GPU 0", "0000:3b:00.0", 0}};
  // Unpinned: some of its CPUs are on the GPU's node.
  EXPECT_TRUE(judge_numa_placement(rank(0), {0, 1, 2, 3, 4, 5, 6, 7}, two_nodes(), gpu).empty());
  EXPECT_TRUE(judge_numa_placement(rank(0), {3, 4}, two_nodes(), gpu).empty());
  // One node: nothing to be wrong about.
  std::map<int, int> one;
  for (int cpu = 0; cpu < 8; ++cpu) one[cpu] = 0;
  EXPECT_TRUE(judge_numa_placement(rank(0), {4}, one, gpu).empty());
  // The firmware gives no node for the device.
  EXPECT_TRUE(judge_numa_placement(rank(0), {4}, two_nodes(), {{"GPU", "GPU 0", "0000:3b:00.0", -1}}).empty());
}

TEST(NumaPlacement, TheCpusNodesAreReadFromSysfs) {
  testing::TempDir root;
  for (auto [node, list] : {std::pair{"node0", "0-1,4\n"}, std::pair{"node1", "2-3,5\n"}}) {
    std::filesystem::create_directories(root / "devices/system/node" / node);
    std::ofstream(root / "devices/system/node" / node / "cpulist") << list;
  }
  std::filesystem::create_directories(root / "devices/system/node/has_cpu");  // not a node directory
  EXPECT_EQ(read_cpu_nodes(root.path()), (std::map<int, int>{{0, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 0}, {5, 1}}));
  testing::TempDir empty;
  EXPECT_TRUE(read_cpu_nodes(empty.path()).empty());
  EXPECT_EQ(cpu_list_words({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
}

}  // namespace
}  // namespace slowburn::host_test
