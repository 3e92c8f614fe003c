// The straggler that arrives on time, in real jobs: a communication-bound
// Open MPI job (a little compute, then a 2 MiB all-reduce that dominates
// the step) where one rank's CPU is taken from it while it drives its part
// of the collective, by its cgroup's quota or by a busy process on its core.
// It is not late; every rank waits longer inside. The verdict names it
// inside (or late only by leaving its previous collective late, when that
// test holds first), with the host cause; the healthy job names nobody.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "core/subprocess.h"
#include "demo/mpi_job.h"
#include "demo/torch_job.h"
#include "detect/verdict.h"
#include "support/cpu_quota.h"
#include "support/rank_network.h"
#include "support/test_support.h"
#include "support/traced_jobs.h"

namespace slowburn::inside_scenario_test {
namespace {

using namespace testing;

// 0.5 ms of compute, then 2 MiB of gradients all-reduced across the world.
const std::vector<std::string> kCommBound = {"--gradient-bytes", std::to_string(2 << 20)};
constexpr double kComputeUs = 500;

// The rank that loses its CPU inside the collective is named inside, or
// (whichever test holds first) as late only by leaving its previous
// collective late: descheduled there, not computing longer. Seen in CI:
// "arrives last in 56% ... 13.34 us after the median rank ... (100% of it
// from leaving its previous collective later than usual: descheduled
// there?)", the inside test not yet at 3 of 5 windows.
void expect_cpu_starved(const Finding& f) {
  if (f.where == "inside") {
    EXPECT_EQ(f.detector, "inside") << f.summary;
    ASSERT_TRUE(f.inside.has_value()) << f.summary;
    // Its thread waited for a CPU most of its time inside; its peers far less.
    EXPECT_GT(f.inside->runq_share, f.inside->peers_runq_share.value_or(1) + 0.1) << f.summary;
    EXPECT_NE(f.summary.find("is the straggler inside mpi.allreduce"), std::string::npos) << f.summary;
    EXPECT_GT(f.cost_share, 0.05) << f.summary;
  } else {
    // Its cost then is its late arrivals' alone, a part of what its waits
    // inside cost: 2.2% in 2 of 8 runs of the busy-process test (stop 60),
    // where the inside finding's is 5%+. Named, it is at least minor.
    EXPECT_EQ(f.where, "arrival") << f.summary;
    EXPECT_GE(f.blame_leaving_share, kMostlyLeaving) << f.summary;
    EXPECT_GE(f.cost_share, 0.01) << f.summary;
  }
}

// Rank 1 of `job` into `group`, the job traced for 10 s, then stopped.
Traced trace_with_rank_1_throttled(MpiJob& job, const CpuQuotaGroup& group) {
  int32_t throttled = pid_of_rank(job.ranks(), 1);
  if (throttled == 0) {  // never group.add(0): that moves the writer, this test
    ADD_FAILURE() << "the job has no rank 1";
    job.stop();
    return {};
  }
  EXPECT_TRUE(group.add(throttled)) << "cannot move rank 1 into " << group.path();
  Traced t = trace(job.pids(), {"mpi.*"}, 10);
  EXPECT_GT(group.throttled_periods(), 0) << "the quota never bit";
  job.stop();
  return t;
}

// Each rank's share of the trace spent waiting for a CPU (the kernel's schedstat).
std::string runq(const Traced& t) {
  std::string out = "schedstat run-queue wait, share of the trace:";
  for (const RankIdentity& r : t.result.ranks)
    out += fmt::format(" rank {} {:.0f}%", r.rank, t.runq_share.at(r.pid) * 100);
  return out + "\n";
}

TEST(InsideCollective, ARankThrottledInACommunicationBoundJobIsNamedForItsCpu) {
  SKIP_UNLESS_MPI();
  std::string why;
  // A quarter of a CPU, as the user had: the rank's fair share of
  // this 2-core node with 4 spinning ranks is half of one.
  auto group = CpuQuotaGroup::create(0.25, why);
  if (!group) GTEST_SKIP() << why;
  TempDir dir;
  auto job = mpi_job(4, 0, -1, dir, 1.0, kComputeUs, kCommBound);
  ASSERT_TRUE(job);
  Traced t = trace_with_rank_1_throttled(*job, *group);
  // Beside other processes the quota bites less apart from what they take:
  // with two at a quarter of a CPU each in short bursts (real-time
  // priority, as a hypervisor's steal takes it), rank 1 waited for a CPU
  // 74% of the trace against its peers' 58-61%, and nobody was named.
  // There only a wrong name fails.
  if (node_was_busy(t)) {
    EXPECT_TRUE(t.named.empty() || t.named == std::set<int>{1}) << "nobody but rank 1 named\n" << t.summaries;
    GTEST_SKIP() << fmt::format(
        "other load on the node: {:.0f}% of its CPU went to other processes or steal; the throttled rank named "
        "inside for its CPU is an idle node's claim (checked: nobody else named)",
        *t.others_cpu_share * 100);
  }
  EXPECT_EQ(t.named, std::set<int>{1}) << t.summaries << runq(t);
  const Finding* f = named_finding(t, 1);
  ASSERT_NE(f, nullptr) << t.summaries;
  expect_cpu_starved(*f);
  EXPECT_EQ(f->likely_cause_type, "host.cpu_throttled") << f->summary << host_events(t);
}

TEST(InsideCollective, AHealthyCommunicationBoundJobNamesNobody) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  auto job = mpi_job(4, 0, -1, dir, 1.0, kComputeUs, kCommBound);
  ASSERT_TRUE(job);
  Traced t = trace(job->pids(), {"mpi.*"}, 8);
  job->stop();
  EXPECT_TRUE(t.result.verdict.judged) << t.summaries;
  // Beside other processes that take whole CPUs, the rank that shares its
  // CPU with one waits for it more than its peers (CI's busy run, stop 61:
  // rank 2 97% of its time inside against 69%, beside a busy loop on CPU 1)
  // and the inside rule names it with that contention: a noisy neighbour,
  // not a wrong name. There a name with any other cause fails.
  if (node_was_busy(t)) {
    for (const Finding& f : t.result.verdict.stragglers)
      EXPECT_EQ(f.likely_cause_type, "host.cpu_contention") << "named with what took its CPU: " << f.summary;
    GTEST_SKIP() << fmt::format(
        "other load on the node: {:.0f}% of its CPU went to other processes or steal; a healthy job naming "
        "nobody is an idle node's claim (checked: a rank named only with the contention for its CPU)",
        *t.others_cpu_share * 100);
  }
  EXPECT_TRUE(t.named.empty()) << t.summaries << runq(t);
}

TEST(InsideCollective, ARankBesideABusyProcessIsNamedForItsCpuWithThatProcess) {
  SKIP_UNLESS_MPI();
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs 2 CPUs: the rank's and its peers'";
  TempDir dir;
  // Rank 1 alone on CPU 1 with a busy process at nice -5, ranks 0 and 2 on
  // CPU 0. Its compute is short (0.5 ms, within a slice): it arrives on
  // time, and loses its CPU inside the all-reduce.
  auto job = mpi_job(3, 0, -1, dir, 1.0, kComputeUs, kCommBound);
  ASSERT_TRUE(job);
  for (const RankIdentity& r : job->ranks())
    ASSERT_TRUE(pin(r.pid, r.rank == 1 ? 1 : 0)) << "cannot pin rank " << r.rank;
  int32_t beside = pid_of_rank(job->ranks(), 1);
  auto busy = Subprocess::spawn({"taskset", "-c", "1", "nice", "-n", "-5", "sh", "-c", "while :; do :; done"});
  ASSERT_TRUE(busy) << busy.error().message;
  int32_t busy_pid = busy->pid();
  Traced t = trace(job->pids(), {"mpi.*"}, 10);
  busy->terminate();
  job->stop();
  // The premise, from the kernel's schedstat: rank 1 waited for its CPU
  // clearly longer than its peers (other load on the node can starve all).
  double peers = 0;
  for (const RankIdentity& r : job->ranks())
    if (r.rank != 1) peers = std::max(peers, t.runq_share[r.pid]);
  if (t.runq_share[beside] < peers + 0.1)
    GTEST_SKIP() << "other load on the node starved every rank alike: " << runq(t);
  EXPECT_EQ(t.named, std::set<int>{1}) << t.summaries << runq(t);
  const Finding* f = named_finding(t, 1);
  ASSERT_NE(f, nullptr) << t.summaries;
  expect_cpu_starved(*f);
  EXPECT_EQ(f->likely_cause_type, "host.cpu_contention") << f->summary << host_events(t);
  ASSERT_FALSE(f->likely_causes.empty());
  EXPECT_NE(f->likely_causes[0].find(fmt::format("shares CPU 1 with pid {} (sh)", busy_pid)), std::string::npos)
      << f->likely_causes[0];
}

TEST(InsideCollective, AThrottledRankOfAPythonMpiJobIsNamed) {
  SKIP_UNLESS_MPI();
  if (access("/usr/lib/python3/dist-packages/mpi4py/__init__.py", R_OK) != 0)
    GTEST_SKIP() << "Debian's python3-mpi4py is not installed (apt-get install python3-mpi4py, or make deps)";
  auto script = workload("slowburn-mpi4py-workload.py");
  ASSERT_TRUE(script) << "build/libexec/slowburn-mpi4py-workload.py is not built (make all)";
  std::string why;
  auto group = CpuQuotaGroup::create(0.25, why);
  if (!group) GTEST_SKIP() << why;
  TempDir dir;
  MpiJobOptions options;
  // 4 Python ranks, each step 0.5 ms of compute, then comm.Allreduce of 4096 doubles.
  options.program = {"/usr/bin/python3", *script, "--seconds", "90", "--doubles", "4096"};
  options.ranks = 4;
  options.log_path = (dir / "mpirun.log").string();
  auto job = MpiJob::launch(options);
  ASSERT_TRUE(job.ok()) << job.error().message;
  Traced t = trace_with_rank_1_throttled(*job, *group);
  // Late or held up inside, whichever it is on this node: named, with its cgroup as the cause.
  EXPECT_EQ(t.named, std::set<int>{1}) << t.summaries << runq(t);
  const Finding* f = named_finding(t, 1);
  ASSERT_NE(f, nullptr) << t.summaries;
  EXPECT_EQ(f->likely_cause_type, "host.cpu_throttled") << f->summary << host_events(t);
}

TEST(InsideCollective, ARankWhoseLinkLosesFramesIsNamedByItsSocketsRetransmissions) {
  // PyTorch DDP on gloo (TCP), 4 ranks, each in a network namespace of its
  // own with a link to a bridge, as nodes with a NIC to a switch. 3 s after
  // the first traced call (the collective's usual pace known), rank 1's
  // link starts losing 1 in 10 of the TCP data frames it sends (a BPF
  // dropper on the bridge's side): no rank computes longer or waits for a
  // CPU; every rank waits longer inside the all-reduce.
  SKIP_UNLESS_TORCH();
  std::string why;
  auto net = RankNetwork::create(4, why);
  if (!net) GTEST_SKIP() << why;
  auto script = workload("slowburn-ddp-workload.py");
  ASSERT_TRUE(script);
  ASSERT_EQ(access(target_path("lossy_link").c_str(), X_OK), 0)
      << target_path("lossy_link").string() << " is not built (make tests)";
  TempDir dir;
  TorchJobOptions options;
  options.script = *script;
  options.args = {"--seconds", "90"};
  options.ranks = 4;
  options.log_dir = dir.path().string();
  options.master_addr = RankNetwork::address(0);
  options.extra_env = {fmt::format("GLOO_SOCKET_IFNAME={}", RankNetwork::kDevice)};
  options.prefix = [&](int rank) { return std::vector<std::string>{"nsenter", "--net=" + net->netns(rank)}; };
  auto job = TorchJob::launch(options);
  ASSERT_TRUE(job.ok()) << job.error().message;
  // Timed from the trace's first call, not the job's launch: after another
  // test the probes took longer to attach, and a fault timed from the
  // launch left the collective no healthy past to be slower than.
  std::optional<Subprocess> fault;
  std::string fault_error;
  uint64_t first_call_ns = 0;
  uint64_t fault_at_ns = 0;  // on the trace's clock, as the window lines
  auto start_fault = [&](const CallEvent& call, const CallComm&) {
    if (!first_call_ns) first_call_ns = call.entry_ns;
    if (fault || !fault_error.empty() || call.exit_ns < first_call_ns + 3'000'000'000) return;
    auto spawned =
        Subprocess::spawn({target_path("lossy_link").string(), net->hub_netns(), RankNetwork::bridge_port(1), "10"},
                          {(dir / "lossy.out").string(), {}});
    if (spawned) {
      fault.emplace(std::move(*spawned));
      fault_at_ns = call.exit_ns;
    } else {
      fault_error = spawned.error().message;
    }
  };
  // 20 s: the node says the retransmissions some 6 s into the loss (its
  // 5 s window), and the rule weighs them in 3 of the 5 windows after.
  Traced t = trace(job->pids(), {"gloo.*"}, 20, DetectorConfig{}, start_fault);
  ASSERT_TRUE(fault.has_value()) << "the fault never started: " << fault_error;
  fault->terminate();
  job->stop();
  std::string dropped = read_text(dir / "lossy.out");
  ASSERT_NE(dropped.find("dropped "), std::string::npos) << "the fault: " << dropped;
  EXPECT_EQ(t.named, std::set<int>{1}) << t.summaries << host_events(t) << dropped
                                       << fmt::format("\nthe fault began at {:.1f}",
                                                      static_cast<double>(fault_at_ns) / 1e9)
                                       << window_rows(t, 1);
  const Finding* f = named_finding(t, 1);
  ASSERT_NE(f, nullptr) << t.summaries;
  EXPECT_EQ(f->where, "inside") << f->summary;
  ASSERT_TRUE(f->inside.has_value()) << f->summary;
  EXPECT_NE(f->inside->transport.find("TCP sockets retransmitted"), std::string::npos) << f->summary;
  EXPECT_EQ(f->likely_cause_type, "host.tcp_retrans") << f->summary << host_events(t);
  // Found live, and only once its link lost frames.
  auto found = std::find_if(t.result.summary.findings.begin(), t.result.summary.findings.end(),
                            [](const Finding& g) { return g.culprit.rank == 1 && g.where == "inside"; });
  ASSERT_NE(found, t.result.summary.findings.end()) << t.summaries;
  EXPECT_GT(found->detected_ns, fault_at_ns) << "named before the fault began: " << found->summary;
}

}  // namespace
}  // namespace slowburn::inside_scenario_test
