// Hangs and failures on real jobs, traced by the CLI as a user runs it:
// an Open MPI rank that stops inside a collective, one blocked reading a
// pipe nobody writes, one that calls a different collective than its peers;
// a PyTorch DDP (gloo) rank frozen (SIGSTOP), one killed by SIGKILL, and one
// by SIGSEGV. Each test asserts exactly who is named, and how.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/subprocess.h"
#include "demo/mpi_job.h"
#include "demo/torch_job.h"
#include "support/test_support.h"

namespace slowburn::hang_scenario_test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::json_lines;
using testing::read_text;
using testing::TempDir;

struct Session {
  std::string out;
  std::vector<json> findings;
  json verdict;
  std::string tail() const { return out.substr(out.size() > 4000 ? out.size() - 4000 : 0); }
};

Session parse(std::string out) {
  Session s;
  s.out = std::move(out);
  for (const json& j : json_lines(s.out)) {
    if (j.value("kind", "") == "finding") s.findings.push_back(j);
    if (j.value("kind", "") == "verdict") s.verdict = j;
  }
  return s;
}

std::vector<std::string> trace_argv(const std::vector<int32_t>& pids, const std::string& probes, int seconds) {
  std::vector<std::string> argv = {testing::slowburn_binary().string(),
                                   "trace",
                                   "--probe",
                                   probes,
                                   "--hang-s",
                                   "2",
                                   "-d",
                                   std::to_string(seconds),
                                   "--json",
                                   "--no-hardware"};
  for (int32_t pid : pids) argv.insert(argv.end(), {"--pid", std::to_string(pid)});
  return argv;
}

// A 4-rank MPI job with one fault (--freeze-inside, --read-pipe or
// --mismatch R:S) at step 100, counted from when the tracer is attached.
Session trace_mpi_fault(const std::string& fault, const std::string& rank_step, int32_t* faulty_pid) {
  TempDir dir;
  MpiJobOptions options;
  options.program = demo_workload_argv(testing::workload_path("slowburn-mpi-workload"), -1, 1.0, 3000, 60);
  std::string go = (dir / "go").string();
  options.program.insert(options.program.end(), {"--wait-file", go, fault, rank_step});
  options.ranks = 4;
  options.log_path = (dir / "mpirun.log").string();
  auto job = MpiJob::launch(options);
  EXPECT_TRUE(job.ok()) << job.error().message;
  if (!job) return {};
  int faulty_rank = std::stoi(rank_step.substr(0, rank_step.find(':')));
  for (const RankIdentity& r : job->ranks())
    if (r.rank == faulty_rank) *faulty_pid = r.pid;
  auto trace = Subprocess::spawn(trace_argv(job->pids(), "mpi.*", 8), {(dir / "out").string(), {}});
  EXPECT_TRUE(trace.ok());
  if (!trace.ok()) return {};
  // The job steps only once every probe is attached: the tracer sees the
  // positions from the first collective.
  EXPECT_TRUE(testing::wait_until(
      [&] { return read_text(dir / "out").find("\"event\":\"tracing\"") != std::string::npos; }, 30s));
  std::ofstream(go).put('\n');
  auto status = trace->wait_for(60s);
  kill(*faulty_pid, SIGKILL);  // stopped or blocked: it would not leave on SIGTERM
  job->stop();
  EXPECT_TRUE(status.has_value()) << "slowburn did not end after -d 8";
  Session s = parse(read_text(dir / "out"));
  EXPECT_EQ(status.value_or(-1), 0) << s.tail();
  return s;
}

std::set<int> named(const json& list) {
  std::set<int> out;
  for (const json& f : list) out.insert(f["rank"].get<int>());
  return out;
}

TEST(MpiHang, ARankStoppedInsideACollectiveIsNamedAndItsWaitingPeersAreNot) {
  SKIP_UNLESS_MPI();
  int32_t pid = 0;
  Session s = trace_mpi_fault("--freeze-inside", "1:100", &pid);
  ASSERT_FALSE(s.verdict.is_null()) << s.tail();
  ASSERT_EQ(named(s.verdict["hangs"]), std::set<int>{1}) << s.tail();
  const json& hang = s.verdict["hangs"][0];
  EXPECT_EQ(hang["type"], "hang");
  EXPECT_EQ(hang["pid"], pid);
  EXPECT_EQ(hang["evidence"]["process"]["state"], "stopped") << hang.dump();
  EXPECT_EQ(hang["evidence"]["process"]["signal"], "SIGSTOP") << hang.dump();
  EXPECT_LT(hang["evidence"]["process"]["on_cpu_ns"].get<uint64_t>(), 100'000'000u) << hang.dump();
  // Its peers wait for it, or (the case) wait inside the allgather
  // it stopped in, blocked behind it, while those that Open MPI's algorithm
  // let complete that allgather wait in the next allreduce: measured here,
  // ranks 0 and 2 in allreduce at 203, rank 3 blocked in allgather at 202.
  std::set<int> peers;
  for (const char* role : {"waiting_ranks", "blocked_behind"})
    for (const json& r : hang["evidence"][role]) peers.insert(r.get<int>());
  EXPECT_EQ(peers, (std::set<int>{0, 2, 3})) << hang.dump();
  // Step 100's allgather: 100 steps of two collectives, after the
  // calibration's broadcast; the wavefront is there or one further.
  int wavefront = hang["evidence"]["position"]["position"].get<int>();
  EXPECT_TRUE(wavefront == 202 || wavefront == 203) << hang.dump();
  EXPECT_NE(hang["summary"].get<std::string>().find("stopped (SIGSTOP, state T)"), std::string::npos) << hang.dump();
  EXPECT_NE(hang["summary"].get<std::string>().find("while inside mpi.allgather (position 202)"), std::string::npos)
      << hang.dump();
  EXPECT_TRUE(s.verdict["stragglers"].empty()) << "a hang is not a straggler";
}

TEST(MpiHang, ARankBlockedReadingAPipeIsNamedWithTheReadItWaitsIn) {
  SKIP_UNLESS_MPI();
  int32_t pid = 0;
  Session s = trace_mpi_fault("--read-pipe", "2:100", &pid);
  ASSERT_FALSE(s.verdict.is_null()) << s.tail();
  ASSERT_EQ(named(s.verdict["hangs"]), std::set<int>{2}) << s.tail();
  const json& hang = s.verdict["hangs"][0];
  EXPECT_EQ(hang["evidence"]["process"]["state"], "sleeping") << hang.dump();
  EXPECT_EQ(hang["evidence"]["process"]["syscall"], "read") << hang.dump();
  EXPECT_EQ(hang["evidence"]["process"]["waits_on"].get<std::string>().rfind("pipe:[", 0), 0u) << hang.dump();
  EXPECT_NE(hang["summary"].get<std::string>().find("never entered mpi.allgather"), std::string::npos) << hang.dump();
  EXPECT_EQ(hang["evidence"]["waiting_ranks"], (std::vector<int>{0, 1, 3})) << hang.dump();
}

TEST(MpiHang, ARankCallingADifferentCollectiveIsAMismatch) {
  SKIP_UNLESS_MPI();
  int32_t pid = 0;
  Session s = trace_mpi_fault("--mismatch", "3:100", &pid);
  ASSERT_FALSE(s.verdict.is_null()) << s.tail();
  ASSERT_EQ(s.verdict["hangs"].size(), 1u) << s.tail();
  const json& m = s.verdict["hangs"][0];
  EXPECT_EQ(m["type"], "mismatch") << m.dump();
  EXPECT_EQ(m["rank"], 3) << m.dump();
  EXPECT_EQ(m["evidence"]["probe"], "mpi.bcast") << m.dump();
  std::map<int, std::string> calls;
  for (const json& c : m["evidence"]["calls"]) calls[c["rank"].get<int>()] = c["probe"].get<std::string>();
  EXPECT_EQ(calls, (std::map<int, std::string>{
                       {0, "mpi.allgather"}, {1, "mpi.allgather"}, {2, "mpi.allgather"}, {3, "mpi.bcast"}}))
      << m.dump();
  EXPECT_NE(m["summary"].get<std::string>().find("where rank(s) 0, 1, 2 called mpi.allgather"), std::string::npos)
      << m.dump();
}

// A healthy 4-rank DDP job of the bundled workload, its logs in `dir`.
Result<TorchJob> launch_ddp(const TempDir& dir) {
  TorchJobOptions options;
  options.script = testing::workload_path("slowburn-ddp-workload.py");
  options.args = ddp_workload_args(-1, 0, 0, 60);
  options.ranks = 4;
  options.log_dir = dir.path().string();
  return TorchJob::launch(options);
}

// A 4-rank DDP job; once traced, rank 2 gets `signal`.
Session trace_ddp_kill(int signal, int32_t* killed_pid) {
  TempDir dir;
  auto job = launch_ddp(dir);
  EXPECT_TRUE(job.ok()) << job.error().message;
  if (!job) return {};
  for (const RankIdentity& r : job->ranks())
    if (r.rank == 2) *killed_pid = r.pid;
  auto trace = Subprocess::spawn(trace_argv(job->pids(), "gloo.*", 30), {(dir / "out").string(), {}});
  EXPECT_TRUE(trace.ok());
  if (!trace.ok()) return {};
  EXPECT_TRUE(testing::wait_until(
      [&] { return read_text(dir / "out").find("\"kind\":\"window\"") != std::string::npos; }, 30s));
  kill(*killed_pid, signal);
  // The peers' collective fails; they exit, and the session ends with them.
  auto status = trace->wait_for(60s);
  job->stop();
  EXPECT_TRUE(status.has_value());
  return parse(read_text(dir / "out"));
}

void expect_first_failure(const Session& s, int32_t pid, const std::string& signal) {
  ASSERT_FALSE(s.verdict.is_null()) << s.tail();
  ASSERT_FALSE(s.verdict["failures"].empty()) << s.tail();
  const json& first = s.verdict["failures"][0];
  EXPECT_EQ(first["type"], "failure");
  EXPECT_EQ(first["rank"], 2) << first.dump();
  EXPECT_EQ(first["pid"], pid);
  EXPECT_EQ(first["evidence"]["process"]["signal"], signal) << first.dump();
  EXPECT_NE(first["summary"].get<std::string>().find("killed by " + signal), std::string::npos) << first.dump();
  // Who followed: every other rank, ended after it.
  std::set<int> followed;
  for (const json& r : first["evidence"]["followed_by"]) followed.insert(r.get<int>());
  EXPECT_EQ(followed, (std::set<int>{0, 1, 3})) << first.dump();
  for (size_t i = 1; i < s.verdict["failures"].size(); ++i)
    EXPECT_NE(s.verdict["failures"][i]["rank"], 2) << "named once, first";
}

TEST(DdpHang, AFrozenGlooRankIsNamedAndItsPeersAreNot) {
  SKIP_UNLESS_TORCH();
  TempDir dir;
  auto job = launch_ddp(dir);
  ASSERT_TRUE(job.ok()) << job.error().message;
  int32_t frozen = 0;
  for (const RankIdentity& r : job->ranks())
    if (r.rank == 2) frozen = r.pid;
  auto trace = Subprocess::spawn(trace_argv(job->pids(), "gloo.*", 10), {(dir / "out").string(), {}});
  ASSERT_TRUE(trace.ok());
  ASSERT_TRUE(testing::wait_until(
      [&] { return read_text(dir / "out").find("\"kind\":\"window\"") != std::string::npos; }, 30s));
  kill(frozen, SIGSTOP);
  auto status = trace->wait_for(60s);
  kill(frozen, SIGKILL);
  job->stop();
  ASSERT_TRUE(status.has_value());
  Session s = parse(read_text(dir / "out"));
  ASSERT_FALSE(s.verdict.is_null()) << s.tail();
  ASSERT_EQ(named(s.verdict["hangs"]), std::set<int>{2}) << s.tail();
  const json& hang = s.verdict["hangs"][0];
  EXPECT_EQ(hang["evidence"]["process"]["state"], "stopped") << hang.dump();
  EXPECT_EQ(hang["evidence"]["probe"], "gloo.allreduce") << hang.dump();
  std::set<int> peers;
  for (const char* role : {"waiting_ranks", "blocked_behind"})
    for (const json& r : hang["evidence"][role]) peers.insert(r.get<int>());
  EXPECT_EQ(peers, (std::set<int>{0, 1, 3})) << hang.dump();
}

TEST(DdpFailure, ARankKilledBySigkillIsTheFirstFailureAndItsPeersFollowIt) {
  SKIP_UNLESS_TORCH();
  int32_t pid = 0;
  Session s = trace_ddp_kill(SIGKILL, &pid);
  expect_first_failure(s, pid, "SIGKILL");
}

TEST(DdpFailure, ARankThatSegfaultsIsNamedWithItsSignal) {
  SKIP_UNLESS_TORCH();
  int32_t pid = 0;
  Session s = trace_ddp_kill(SIGSEGV, &pid);
  expect_first_failure(s, pid, "SIGSEGV");
}

}  // namespace
}  // namespace slowburn::hang_scenario_test
