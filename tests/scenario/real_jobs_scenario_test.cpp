// The jobs users run, traced as they run them: MPI jobs with tensor- and
// data-parallel sub-communicators (MPI_Comm_split), PyTorch DDP on gloo
// with and without dist.new_group sub-groups, a rank throttled by its
// cgroup's CPU quota, a rank pinned beside a busy process, and a healthy job
// beside a CPU hog. Each asserts the
// session's verdict (the stragglers that held), not a deadline: on a loaded
// machine the windows have fewer calls, and the verdict must still be right.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/subprocess.h"
#include "demo/mpi_job.h"
#include "demo/torch_job.h"
#include "detect/verdict.h"
#include "sinks/json_sink.h"
#include "support/cpu_quota.h"
#include "support/test_support.h"
#include "support/traced_jobs.h"
#include "trace/trace_session.h"

namespace slowburn::real_jobs_scenario_test {
namespace {

using testing::TempDir;
using namespace testing;

// `rank`'s run-queue wait over the trace as a share of its span (0 when unknown).
double runq_share_of(const Traced& t, int rank) {
  for (const RankIdentity& r : t.result.ranks)
    if (r.rank == rank) {
      auto it = t.runq_share.find(r.pid);
      return it == t.runq_share.end() ? 0.0 : it->second;
    }
  return 0.0;
}

// How much longer than the median of the job's other ranks `rank` waited.
double runq_excess_over_median(const Traced& t, int rank) {
  std::vector<double> others;
  for (const RankIdentity& r : t.result.ranks)
    if (r.rank != rank) others.push_back(runq_share_of(t, r.rank));
  if (others.empty()) return 0.0;
  std::sort(others.begin(), others.end());
  return runq_share_of(t, rank) - others[others.size() / 2];
}

// How much longer than its communicator's other members `f`'s culprit
// waited in run queues, as a share of the trace's span; a finding without
// known members is held to the job's median rank instead (never to 0: with
// 6 ranks on 2 cores every rank waits a few percent).
double runq_excess(const Traced& t, const Finding& f) {
  std::vector<double> peers;
  if (f.comm)
    for (int m : f.comm->members)
      if (m != f.culprit.rank) peers.push_back(runq_share_of(t, m));
  if (peers.empty()) return runq_excess_over_median(t, f.culprit.rank);
  return runq_share_of(t, f.culprit.rank) - *std::max_element(peers.begin(), peers.end());
}

std::string runq_shares(const Traced& t) {
  std::string out = "run-queue wait, share of the trace:";
  for (const RankIdentity& r : t.result.ranks) {
    auto it = t.runq_share.find(r.pid);
    if (it != t.runq_share.end()) out += fmt::format(" rank {} {:.1f}%", r.rank, it->second * 100);
  }
  return out + "\n";
}

// Ranks the verdict names besides the injected one must show slowness of
// their own: a compute gap far beyond their peers', a blame owed mostly to
// leaving their previous collective late, or a run-queue wait (the kernel's
// schedstat) clearly beyond every peer's of its communicator. Six ranks and
// the tracer on 2 cores, with or without busy processes beside them: the
// scheduler starves a rank now and then (seen: compute gap z 30 and 57, last
// in 62% and 100% of its group's calls; in CI, a rank of the other
// tensor-parallel group last in 60% of its calls with a compute gap like its
// peers', late on leaving; and one last in 88%, 1.24 ms after the median,
// with neither), a real straggler of that run, not a victim named. A minor
// cost is the rank's own too where its extra wait for a CPU, beyond every
// peer's, is at least that cost (CI: rank 0 of the healthy triple named at
// 2.3%, 274 ms, having waited ~330 ms longer than either peer, 2.8% of the
// span). The whole trace's wait understates it: busy-polling ranks wait for
// a CPU inside their calls too, and the rank that comes last spends the
// least time there, so its wait outside them, which made it late, exceeds
// its peers' by more.
constexpr double kStarvedShare = 0.03;  // 3% of the span: ~30 ms a second

void expect_others_slow_by_themselves(const Traced& t, int slow) {
  for (const Finding& f : t.result.verdict.stragglers) {
    if (f.culprit.rank == slow) continue;
    bool computes_longer = f.z_gap.value_or(0) >= DetectorConfig{}.z_threshold;
    bool left_late = f.blame_leaving_share >= kMostlyLeaving;
    double excess_ns = runq_excess(t, f) * t.span_ns;
    bool starved = runq_excess(t, f) >= kStarvedShare || (f.cost_ns > 0 && excess_ns >= static_cast<double>(f.cost_ns));
    EXPECT_TRUE(computes_longer || left_late || starved)
        << "rank " << f.culprit.rank << " named without slowness of its own (compute gap z " << f.z_gap.value_or(0)
        << ", leaving share " << f.blame_leaving_share << ", run-queue wait beyond its peers' "
        << runq_excess(t, f) * 100 << "% of the span, " << excess_ns / 1e6 << " ms against a cost of "
        << f.cost_ns / 1e6 << " ms)\n"
        << runq_shares(t) << t.summaries;
  }
}

// The verdict names `slow` and none of its `partners` (the ranks it holds
// back); its finding.
const Finding* expect_named(const Traced& t, int slow, const std::vector<int>& partners) {
  EXPECT_TRUE(t.named.contains(slow)) << t.summaries;
  for (int p : partners) EXPECT_FALSE(t.named.contains(p)) << "partner rank " << p << "\n" << t.summaries;
  expect_others_slow_by_themselves(t, slow);
  for (const Finding& f : t.result.verdict.stragglers)
    if (f.culprit.rank == slow) return &f;
  return nullptr;
}

// Healthy ranks get no host cause: every host event is about `rank`, but
// for CPU contention of another rank that the kernel's schedstat confirms
// (it waited in run queues clearly longer than the job's median rank: seen
// with two busy loops beside the job, one sharing rank 0's CPU, "runnable
// but not running 96% ... peers' median 83%"), a true event, not a cause
// given to a healthy rank.
void expect_host_causes_only_on(const Traced& t, int rank) {
  for (const DeviceEvent& e : t.result.device_events) {
    if (!e.type.starts_with("host.") || e.ranks == std::vector<int>{rank}) continue;
    bool confirmed = e.type == "host.cpu_contention" && e.ranks.size() == 1 &&
                     runq_excess_over_median(t, e.ranks.front()) >= kStarvedShare;
    EXPECT_TRUE(confirmed) << "a host event on a rank other than " << rank << ": " << e.summary << "\n"
                           << runq_shares(t);
  }
}

double discarded_share(const SessionSummary& s) {
  return s.detector.calls ? static_cast<double>(s.detector.discarded_calls) / static_cast<double>(s.detector.calls)
                          : 1.0;
}

// Sub-communicators of an MPI job: each call on its own communicator, read
// from the ranks' memory, so almost nothing is thrown away.
void expect_communicators_told_apart(const Traced& t, int tp) {
  int groups = 0;
  for (const CommunicatorRef& c : t.result.communicators)
    if (c->source == CommSource::memory && c->size == tp) ++groups;
  EXPECT_EQ(groups, 6 / tp) << "one communicator per tensor-parallel group of " << tp;
  EXPECT_LE(discarded_share(t.result.summary), 0.05)
      << t.result.summary.detector.discarded_calls << " of " << t.result.summary.detector.calls << " calls discarded";
}

TEST(MpiSubCommunicators, TheSlowRankOfATensorParallelPairIsNamed) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  auto job = mpi_job(6, 2, 3, dir);
  ASSERT_TRUE(job);
  Traced t = trace(job->pids(), {"mpi.*"}, 12);
  job->stop();
  const Finding* f = expect_named(t, 3, {2});
  expect_communicators_told_apart(t, 2);
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->comm);
  EXPECT_EQ(f->comm->members, (std::vector<int>{2, 3})) << "named on its tensor-parallel communicator";
  EXPECT_EQ(f->comm_rank, 1);
}

TEST(MpiSubCommunicators, TheSlowRankOfATripleIsNamedAndItsPartnersAreNot) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  auto job = mpi_job(6, 3, 4, dir);
  ASSERT_TRUE(job);
  Traced t = trace(job->pids(), {"mpi.*"}, 12);
  job->stop();
  expect_named(t, 4, {3, 5});
  expect_communicators_told_apart(t, 3);
}

TEST(MpiSubCommunicators, AHealthyTwoDimensionalJobNamesNobody) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  auto job = mpi_job(6, 2, -1, dir);
  ASSERT_TRUE(job);
  Traced t = trace(job->pids(), {"mpi.*"}, 12);
  job->stop();
  EXPECT_TRUE(t.result.verdict.judged) << t.summaries;
  EXPECT_TRUE(t.named.empty()) << "a healthy job: nobody is the straggler\n" << runq_shares(t) << t.summaries;
  expect_communicators_told_apart(t, 2);
}

TEST(MpiRamp, ARankSlowingGraduallyIsNamedBeforeItsRampEnds) {
  // The seed's Operation Slowburn on a 2-D job, gentler (issue 30 asks for
  // 1.4x): rank 1's extra work grows from nothing to +40% over 24 s of the
  // job, then stays. On 2 CPUs every rank waits for one most of its time
  // inside; the ramping rank is named, not withheld as the scheduler's
  // choice, because its typical step is longer (its compute-gap CUSUM
  // alarms). Over 20 s, 6 runs by hand named it 8-12 s after the launch
  // (at 1.16-1.23x), and 15 of 16 test runs before the ramp ended (one
  // after 20 s): 24 s keeps that margin. The trace goes on past the ramp,
  // so the verdict judges the rank at its full 1.4x.
  SKIP_UNLESS_MPI();
  TempDir dir;
  MpiJobOptions options;
  options.program = demo_workload_argv(*workload("slowburn-mpi-workload"), 1, 1.4, 3000, 90);
  options.program.insert(options.program.end(), {"--tp", "3", "--ramp-s", "24"});
  options.ranks = 6;
  options.log_path = (dir / "mpirun.log").string();
  auto job = MpiJob::launch(options);
  ASSERT_TRUE(job) << job.error().message;
  auto launched = std::chrono::steady_clock::now();
  Traced t = trace(job->pids(), {"mpi.*"}, 30);
  double trace_began_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - launched).count() -
                         t.result.summary.traced_seconds;
  job->stop();
  expect_named(t, 1, {0, 2});
  ASSERT_TRUE(t.result.first_finding_after_s.has_value()) << t.summaries;
  EXPECT_EQ(t.result.summary.findings.front().culprit.rank, 1) << "the first finding names the ramping rank\n"
                                                               << t.summaries;
  // Measured on one clock: the trace began after the launch, so the ramp
  // (which began at the job's first step) ends at most 24 s after launch.
  RecordProperty("first_finding_after_s", std::to_string(*t.result.first_finding_after_s));
  RecordProperty("named_after_launch_s", std::to_string(trace_began_s + *t.result.first_finding_after_s));
  // The deadline is an idle node's. Where something beside the job takes
  // the CPUs (other processes, or the hypervisor's steal), the steps
  // stretch, and a ramping rank's lateness passes the windows' 5% floor at
  // a higher slowdown: named at 1.3-1.4x (docs/detector.md). Measured:
  // the node idle (0.5% of its CPU to others), 11.4-22.5 s after the
  // launch in 11 runs;
  // one busy loop beside the job (25%), 25.0 s and 21.7 s; two (45%),
  // 22.4 s, and 20.5-25.7 s in 6 runs by hand with two or three. Only the
  // verdict is asserted then (above), and the test skips with the share.
  // CI's one failure on the deadline
  // (26.0 s, and a verdict that named nobody: fixed since) came before this
  // share was read. Unknown (a rank ended in the trace): asserted.
  if (node_was_busy(t))
    GTEST_SKIP() << fmt::format(
        "other load on the node: {:.0f}% of its CPU went to other processes or steal; the ramp's deadline is an idle "
        "node's (checked: the verdict)",
        *t.others_cpu_share * 100);
  EXPECT_LT(trace_began_s + *t.result.first_finding_after_s, 24.0)
      << "named only after the ramp was complete (" << t.others_cpu_share.value_or(0) * 100
      << "% of the node's CPU to other processes or steal)\n"
      << t.summaries;
}

TEST(MpiMinor, ARankTenPercentSlowerIsNamedMinorWithItsCost) {
  // Issue 30's minor straggler on a real job: rank 1 of a 4-rank job in
  // pairs does 10% more work (compute, not sleep) every step. On 2 CPUs
  // every rank waits for one most of its time inside its calls, so a minor
  // cost there is withheld as the scheduler's choice unless the rank's
  // typical step is longer than its partner's: it is (its compute-gap
  // CUSUM alarms). By hand, 6 runs named it minor at 4.2-7.8%; before the
  // slow burn took the CUSUM's word, 2 of 3 were withheld at 4.4-5.7%.
  // Beside other processes the steps stretch and who is last is more the
  // scheduler's: one busy loop (28% of the CPU to others), named at 3.1%
  // and 3.4%; two (51-54%), not named in 5 of 5 runs (one withheld as the
  // scheduler's choice); two processes each taking a quarter of a CPU in
  // short bursts, named major at 12.8% (its cost is the job's wait, which
  // the bursts stretch). There only a wrong name fails. CI failed once this
  // way before the share was read (no finding at all; every rank 50% in run
  // queues, as on an idle node here: the hypervisor's steal is not a run
  // queue wait).
  SKIP_UNLESS_MPI();
  TempDir dir;
  auto job = mpi_job(4, 2, 1, dir, 1.1);
  ASSERT_TRUE(job);
  Traced t = trace(job->pids(), {"mpi.*"}, 15);
  job->stop();
  if (node_was_busy(t)) {
    // The idle node's checks but the naming: rank 0 (the partner it holds
    // back) not named, nobody named without slowness of their own.
    EXPECT_FALSE(t.named.contains(0)) << "partner rank 0\n" << t.summaries;
    expect_others_slow_by_themselves(t, 1);
    if (const Finding* named = named_finding(t, 1)) {
      EXPECT_GE(named->cost_share, 0.01) << named->summary;
      ASSERT_TRUE(named->comm);
      EXPECT_EQ(named->comm->members, (std::vector<int>{0, 1})) << "named on its pair's communicator";
    }
    GTEST_SKIP() << fmt::format(
        "other load on the node: {:.0f}% of its CPU went to other processes or steal; a 10% slower rank named "
        "minor is an idle node's claim (checked: nobody else named without slowness of their own)",
        *t.others_cpu_share * 100);
  }
  const Finding* f = expect_named(t, 1, {0});
  ASSERT_NE(f, nullptr) << runq_shares(t) << t.summaries;
  RecordProperty("cost_share", std::to_string(f->cost_share));
  RecordProperty("detector", f->detector);
  EXPECT_EQ(f->severity, "minor") << f->summary;
  EXPECT_GE(f->cost_share, 0.01) << f->summary;
  EXPECT_LT(f->cost_share, 0.10) << f->summary;
  ASSERT_TRUE(f->comm);
  EXPECT_EQ(f->comm->members, (std::vector<int>{0, 1})) << "named on its pair's communicator";
}

// PyTorch DDP on gloo, 4 ranks launched with the torchrun environment.
std::optional<TorchJob> ddp_job(int slow_rank, int group_size, const TempDir& dir) {
  auto script = workload("slowburn-ddp-workload.py");
  EXPECT_TRUE(script.has_value());
  TorchJobOptions options;
  options.script = script.value_or("");
  options.args = ddp_workload_args(slow_rank, 8, group_size, 90);
  options.ranks = 4;
  options.log_dir = dir.path().string();
  auto job = TorchJob::launch(options);
  EXPECT_TRUE(job.ok()) << job.error().message;
  if (!job) return std::nullopt;
  return std::move(*job);
}

TEST(PytorchDdp, ARankStallingInItsDataPathIsNamed) {
  SKIP_UNLESS_TORCH();
  TempDir dir;
  auto job = ddp_job(2, 0, dir);
  ASSERT_TRUE(job);
  Traced t = trace(job->pids(), {"gloo.*"}, 12);
  job->stop();
  EXPECT_EQ(t.named, std::set<int>{2}) << t.summaries;
  ASSERT_FALSE(t.result.verdict.stragglers.empty());
  const Finding& f = t.result.verdict.stragglers.front();
  EXPECT_EQ(f.probe, "gloo.allreduce");
  ASSERT_TRUE(f.comm);
  EXPECT_EQ(f.comm->backend, CommBackend::gloo);
  EXPECT_GT(t.result.summary.detector.aligned_by_sequence, 100u) << "instances found by (process group, tag)";
}

TEST(PytorchDdp, WithSubGroupsTheSlowRankIsNamedAndTheGroupsToldApart) {
  SKIP_UNLESS_TORCH();
  TempDir dir;
  auto job = ddp_job(1, 2, dir);
  ASSERT_TRUE(job);
  Traced t = trace(job->pids(), {"gloo.*"}, 12);
  job->stop();
  EXPECT_EQ(t.named, std::set<int>{1}) << t.summaries;
  // dist.new_group([0,1]) and ([2,3]): two process groups of 2, each with its members.
  std::set<std::vector<int>> pairs;
  for (const CommunicatorRef& c : t.result.communicators)
    if (c->backend == CommBackend::gloo && c->size == 2 && c->local_pids) {
      std::vector<int> ranks;
      for (int32_t pid : *c->local_pids)
        for (const RankIdentity& r : t.result.ranks)
          if (r.pid == pid) ranks.push_back(r.rank);
      std::sort(ranks.begin(), ranks.end());
      pairs.insert(ranks);
    }
  EXPECT_EQ(pairs, (std::set<std::vector<int>>{{0, 1}, {2, 3}})) << t.summaries;
}

TEST(PytorchDdp, AHealthyJobNamesNobody) {
  SKIP_UNLESS_TORCH();
  TempDir dir;
  auto job = ddp_job(-1, 2, dir);
  ASSERT_TRUE(job);
  Traced t = trace(job->pids(), {"gloo.*"}, 12);
  job->stop();
  EXPECT_TRUE(t.result.verdict.judged) << t.summaries;
  EXPECT_TRUE(t.named.empty()) << t.summaries;
}

TEST(CpuQuota, ARankThrottledByItsCgroupIsNamed) {
  SKIP_UNLESS_MPI();
  std::string why;
  // 15% of a CPU: below a rank's share of the 2 cores whether the node is
  // idle (5 ranks: 40%) or has two busy processes too (~28%, where 25% barely
  // bit and the rank was rightly not a straggler). Beside two full busy
  // loops (72% of the CPU to others) the rank was withheld as the
  // scheduler's choice: its lateness came from leaving its previous call
  // late, and every rank waited for a CPU 83-92% of its time inside; the
  // detector sees run-queue waits, not the cgroup's throttling. There only
  // a wrong name fails.
  auto group = testing::CpuQuotaGroup::create(0.15, why);
  if (!group) GTEST_SKIP() << why;
  TempDir dir;
  auto job = mpi_job(5, 0, -1, dir);
  ASSERT_TRUE(job);
  const RankIdentity* throttled = nullptr;
  for (const RankIdentity& r : job->ranks())
    if (r.rank == 3) throttled = &r;
  ASSERT_NE(throttled, nullptr);
  ASSERT_TRUE(group->add(throttled->pid)) << "cannot move rank 3 into " << group->path();
  Traced t = trace(job->pids(), {"mpi.*"}, 15);
  EXPECT_GT(group->throttled_periods(), 0) << "the quota never bit";
  job->stop();
  expect_host_causes_only_on(t, 3);  // on any node: a host cause on a healthy rank is a wrong name
  if (node_was_busy(t)) {
    EXPECT_TRUE(t.named.empty() || t.named == std::set<int>{3}) << "nobody but rank 3 named\n" << t.summaries;
    GTEST_SKIP() << fmt::format(
        "other load on the node: {:.0f}% of its CPU went to other processes or steal; the throttled rank named with "
        "its cgroup is an idle node's claim (checked: nobody else named)",
        *t.others_cpu_share * 100);
  }
  EXPECT_EQ(t.named, std::set<int>{3}) << t.summaries;
  // The cause, with its numbers: the cgroup, the share of periods, the quota.
  const Finding* f = named_finding(t, 3);
  ASSERT_NE(f, nullptr) << t.summaries;
  EXPECT_EQ(f->likely_cause_type, "host.cpu_throttled") << t.summaries << host_events(t);
  ASSERT_FALSE(f->likely_causes.empty()) << host_events(t);
  EXPECT_NE(f->likely_causes[0].find("cgroup " + group->cgroup_path() + " throttled it in"), std::string::npos)
      << f->likely_causes[0];
  EXPECT_NE(f->likely_causes[0].find("quota 15% of a CPU"), std::string::npos) << f->likely_causes[0];
}

TEST(CpuSharing, ARankBesideABusyProcessIsNamedWithThatProcess) {
  SKIP_UNLESS_MPI();
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs 2 CPUs: the rank's and its peers'";
  TempDir dir;
  // Rank 1 alone on CPU 1 with a busy process at nice -5 (it gets ~25% of
  // the CPU), ranks 0 and 2 on CPU 0 (~50% each). A step's compute (20 ms)
  // outlasts a scheduler slice, so the rank is preempted while computing and
  // arrives last; with 3 ms it computed within one slice and lost its CPU
  // inside the collective instead, an episode rather than a straggler.
  auto job = mpi_job(3, 0, -1, dir, 1.0, 20000);
  ASSERT_TRUE(job);
  int32_t beside = 0;
  for (const RankIdentity& r : job->ranks()) {
    ASSERT_TRUE(pin(r.pid, r.rank == 1 ? 1 : 0)) << "cannot pin rank " << r.rank;
    if (r.rank == 1) beside = r.pid;
  }
  ASSERT_NE(beside, 0);
  auto busy = Subprocess::spawn({"taskset", "-c", "1", "nice", "-n", "-5", "sh", "-c", "while :; do :; done"});
  ASSERT_TRUE(busy) << busy.error().message;
  int32_t busy_pid = busy->pid();
  // 1 s windows: each collective also waits for rank 1's next slice, so a
  // step takes 50-150 ms, and a 500 ms window of a loaded machine held fewer
  // than the 5 instances a window needs to be judged. (With 10 ms steps on
  // a machine loaded by two compilers every rank's step took ~70 ms and no
  // one was named: the sharing set no rank apart.)
  Traced t = trace(job->pids(), {"mpi.*"}, 15, 1'000'000'000);
  std::map<int, double> waited_share;
  for (const RankIdentity& r : job->ranks()) waited_share[r.rank] = t.runq_share[r.pid];
  busy->terminate();
  job->stop();
  // The premise: rank 1 waited for its CPU clearly longer than its peers
  // did. Other load on the node (unpinned, it goes where it can) can starve
  // every rank alike, and then no rank is set apart by its CPU: measured
  // from the kernel's own schedstat, not from slowburn.
  double peers_waited = std::max(waited_share[0], waited_share[2]);
  if (waited_share[1] < peers_waited + 0.1)
    GTEST_SKIP() << fmt::format(
        "other load on the node starved every rank alike (run-queue wait: rank 1 {:.0f}% of the span, its peers up to "
        "{:.0f}%): the test needs rank 1 alone set apart by its CPU",
        waited_share[1] * 100, peers_waited * 100);
  EXPECT_EQ(t.named, std::set<int>{1}) << t.summaries;
  const Finding* f = named_finding(t, 1);
  ASSERT_NE(f, nullptr) << t.summaries;
  EXPECT_EQ(f->likely_cause_type, "host.cpu_contention") << t.summaries << host_events(t);
  ASSERT_FALSE(f->likely_causes.empty()) << host_events(t);
  // The process by its pid and name, and the CPU they share.
  EXPECT_NE(f->likely_causes[0].find(fmt::format("shares CPU 1 with pid {} (sh)", busy_pid)), std::string::npos)
      << f->likely_causes[0];
  expect_host_causes_only_on(t, 1);
}

TEST(CpuHog, AHogOutsideTheJobNamesNobody) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  auto job = mpi_job(5, 0, -1, dir);
  ASSERT_TRUE(job);
  // Busy loops on each core in turn while the job runs: every rank is
  // slowed by turns, none is the job's straggler.
  std::atomic<bool> done{false};
  std::thread hogs([&] {
    for (int core = 0; !done.load(); core = 1 - core) {
      auto hog =
          Subprocess::spawn({"taskset", "-c", std::to_string(core), "timeout", "3", "sh", "-c", "while :; do :; done"});
      if (!hog) return;
      for (int i = 0; i < 30 && !done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      hog->terminate();
    }
  });
  Traced t = trace(job->pids(), {"mpi.*"}, 15);
  done.store(true);
  hogs.join();
  job->stop();
  EXPECT_TRUE(t.named.empty()) << t.summaries;
}

}  // namespace
}  // namespace slowburn::real_jobs_scenario_test
