// Whole sessions of the slowburn binary as a user runs them: the demo's
// verdict check and exit codes, a hang with a stuck rank, SIGTERM in the
// middle of a real job, and a job with nothing slowburn can trace.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "core/subprocess.h"
#include "demo/mpi_job.h"
#include "support/test_support.h"

namespace slowburn::cli_sessions_test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::TempDir;

using testing::json_lines;
using testing::Ran;
using testing::read_text;

Ran run(const std::vector<std::string>& args) { return testing::run_slowburn(args, 120s); }

TEST(Demo, AMatchExitsZeroAndSaysWhatItNamed) {
  SKIP_UNLESS_MPI();
  Ran ran = run({"demo", "--slow-rank", "1", "-d", "8", "--json"});
  EXPECT_EQ(ran.status, 0) << ran.output.substr(ran.output.size() > 3000 ? ran.output.size() - 3000 : 0);
  json demo, verdict;
  for (const json& j : json_lines(ran.output)) {
    if (j.value("event", "") == "demo") demo = j;
    if (j.value("kind", "") == "verdict") verdict = j;
  }
  EXPECT_EQ(testing::schema_errors(ran.output, "status,window,finding,hist,verdict"), "")
      << "every line of a real session against docs/schemas";
  ASSERT_FALSE(demo.is_null());
  EXPECT_EQ(demo["injected_rank"], 1);
  EXPECT_EQ(demo["named"], "rank 1");
  EXPECT_EQ(demo["match"], true);
  ASSERT_FALSE(verdict.is_null()) << "the closing verdict line";
  EXPECT_EQ(verdict["judged"], true);
  ASSERT_EQ(verdict["stragglers"].size(), 1u);
  EXPECT_EQ(verdict["stragglers"][0]["rank"], 1);
}

TEST(Demo, AMismatchExitsThree) {
  SKIP_UNLESS_MPI();
  // Rank 2 "slowed" 1.0x: nothing to find, so the verdict cannot match.
  Ran ran = run({"demo", "--slow-rank", "2", "--slowdown", "1.0", "-d", "8"});
  EXPECT_EQ(ran.status, 3) << ran.output.substr(ran.output.size() > 2000 ? ran.output.size() - 2000 : 0);
  EXPECT_NE(ran.output.find("MISMATCH"), std::string::npos);
}

TEST(Trace, AStuckRankIsNamedAsTheHang) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  MpiJobOptions options;
  options.program = demo_workload_argv(testing::workload_path("slowburn-mpi-workload"), -1, 1.0, 3000, 60);
  options.ranks = 4;
  options.log_path = (dir / "mpirun.log").string();
  auto job = MpiJob::launch(options);
  ASSERT_TRUE(job) << job.error().message;
  pid_t stuck = 0;
  std::vector<std::string> argv = {testing::slowburn_binary().string(),
                                   "trace",
                                   "--probe",
                                   "mpi.*",
                                   "--hang-s",
                                   "3",
                                   "-d",
                                   "10",
                                   "--json",
                                   "--no-hardware"};
  for (const RankIdentity& r : job->ranks()) {
    if (r.rank == 2) stuck = r.pid;
    argv.insert(argv.end(), {"--pid", std::to_string(r.pid)});
  }
  auto trace = Subprocess::spawn(argv, {(dir / "out").string(), {}});
  ASSERT_TRUE(trace.ok());
  // Once calls are traced, rank 2 stalls between two steps (the workload's
  // SIGUSR1): the others enter the next collective and wait there. A rank
  // stuck before slowburn attached is not seen: the waits began unobserved.
  ASSERT_TRUE(testing::wait_until(
      [&] { return read_text(dir / "out").find("\"kind\":\"window\"") != std::string::npos; }, 30s));
  ASSERT_EQ(kill(stuck, SIGUSR1), 0);
  auto status = trace->wait_for(60s);
  job->stop();
  ASSERT_TRUE(status.has_value()) << "slowburn did not end after -d 10";
  std::string out = read_text(dir / "out");
  EXPECT_EQ(*status, 0) << out.substr(out.size() > 2000 ? out.size() - 2000 : 0);
  json hang, verdict;
  for (const json& j : json_lines(out)) {
    if (j.value("kind", "") == "finding" && j.value("type", "") == "hang") hang = j;
    if (j.value("kind", "") == "verdict") verdict = j;
  }
  ASSERT_FALSE(hang.is_null()) << out.substr(out.size() > 3000 ? out.size() - 3000 : 0);
  EXPECT_EQ(hang["rank"], 2);
  EXPECT_NE(hang["summary"].get<std::string>().find("never entered"), std::string::npos) << hang.dump();
  EXPECT_EQ(hang["evidence"]["waiting_ranks"], (std::vector<int>{0, 1, 3}));
  ASSERT_FALSE(verdict.is_null());
  ASSERT_EQ(verdict["hangs"].size(), 1u);
  EXPECT_EQ(verdict["hangs"][0]["rank"], 2);
  EXPECT_TRUE(verdict["stragglers"].empty()) << "a hang is not a straggler";
}

TEST(Trace, SigtermEndsTheSessionWithItsVerdictAndLeavesNoProgram) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  MpiJobOptions options;
  options.program =
      demo_workload_argv(testing::workload_path("slowburn-mpi-workload"), 3, testing::kClearSlowdown, 3000, 120);
  options.ranks = 4;
  options.log_path = (dir / "mpirun.log").string();
  auto job = MpiJob::launch(options);
  ASSERT_TRUE(job) << job.error().message;
  std::vector<std::string> argv = {testing::slowburn_binary().string(), "trace", "--probe", "mpi.*", "--no-hardware"};
  for (int32_t pid : job->pids()) argv.insert(argv.end(), {"--pid", std::to_string(pid)});
  auto trace = Subprocess::spawn(argv, {(dir / "out").string(), {}});
  ASSERT_TRUE(trace.ok());
  // The claim is the end on SIGTERM, so the rank is twice as slow (clear on
  // a loaded machine too), and the wait is for its finding, however long.
  testing::wait_until([&] { return read_text(dir / "out").find("FINDING") != std::string::npos; }, 90s);
  trace->signal(SIGTERM);
  auto status = trace->wait_for(30s);
  job->stop();
  ASSERT_TRUE(status.has_value()) << "slowburn did not end on SIGTERM";
  EXPECT_EQ(*status, 0);
  std::string out = read_text(dir / "out");
  EXPECT_NE(out.find("Lost:"), std::string::npos) << "the loss accounting";
  // In the closing verdict, printed after SIGTERM (not the live FINDING line).
  size_t verdict = out.find("\nVerdict:");
  ASSERT_NE(verdict, std::string::npos) << out.substr(out.size() > 3000 ? out.size() - 3000 : 0);
  EXPECT_NE(out.find("\n  straggler: rank 3", verdict), std::string::npos) << out.substr(verdict);
  EXPECT_TRUE(testing::bpf_program_ids_named("call_enter").empty()) << "a program left loaded after SIGTERM";
}

TEST(Trace, NothingTracedIsNothingToWatchAndSaysWhatTheRanksLoad) {
  SKIP_UNLESS_ROOT();
  if (access("/usr/lib/python3/dist-packages/torch/__init__.py", R_OK) != 0)
    GTEST_SKIP() << "Debian's python3-torch is not installed (apt-get install python3-torch, or make deps)";
  // A PyTorch rank, traced with the MPI probes only: nothing can attach.
  TempDir dir;
  auto rank = Subprocess::spawn(
      {"/usr/bin/python3", "-c", "import torch, time; open('" + (dir / "ready").string() + "', 'w'); time.sleep(60)"},
      {"/dev/null", {"RANK=0", "WORLD_SIZE=1", "TORCHELASTIC_RUN_ID=nothing-traced"}});
  ASSERT_TRUE(rank.ok());
  ASSERT_TRUE(testing::wait_until([&] { return std::filesystem::exists(dir / "ready"); }, 30s));
  Ran ran = run({"trace", "--pid", std::to_string(rank->pid()), "--probe", "mpi.*", "-d", "2", "--no-hardware"});
  rank->terminate();
  EXPECT_EQ(ran.status, 2) << "nothing to watch (docs/cli.md)";
  // libgloo brings libibverbs, whose control-path probes do attach: still nothing traced.
  EXPECT_TRUE(std::regex_search(ran.output, std::regex(R"(\nverbs\.\S+ +attached )"))) << ran.output;
  EXPECT_NE(ran.output.find("nothing traced: rank 0 loads"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("libgloo.so.0"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("libtorch_cpu.so"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("slowburn catalog --pid"), std::string::npos) << ran.output;
  EXPECT_EQ(ran.output.find("no straggler found"), std::string::npos) << "never an all-clear";
}

// Seen on a GPU node: PyTorch 2.11 loads libnccl.so.2 at init_process_group,
// not at import; a trace started before that found "no communication
// library" and gave up. Now it waits, and attaches when the rank loads one.
TEST(Trace, ARankThatLoadsNcclLaterIsWaitedForAndAttached) {
  SKIP_UNLESS_ROOT();
  const char* nccl = "/usr/local/cuda/lib64/libnccl.so.2";
  if (access(nccl, R_OK) != 0) GTEST_SKIP() << nccl << " is not installed (NCCL under /usr/local/cuda)";
  TempDir dir;
  auto rank = Subprocess::spawn({"/usr/bin/python3", "-c",
                                 "import ctypes, time; open('" + (dir / "ready").string() +
                                     "', 'w'); time.sleep(2); ctypes.CDLL('" + nccl + "'); time.sleep(30)"},
                                {"/dev/null", {"RANK=0", "WORLD_SIZE=1", "TORCHELASTIC_RUN_ID=late-nccl"}});
  ASSERT_TRUE(rank.ok());
  ASSERT_TRUE(testing::wait_until([&] { return std::filesystem::exists(dir / "ready"); }, 30s));
  Ran ran = run({"trace", "--pid", std::to_string(rank->pid()), "--probe", "nccl.*", "-d", "5", "--no-hardware"});
  rank->terminate();
  EXPECT_EQ(ran.status, 2) << "traced, no collective to judge\n" << ran.output;
  EXPECT_NE(ran.output.find("no rank has loaded a collective library yet"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("a collective library was loaded after"), std::string::npos) << ran.output;
  EXPECT_TRUE(std::regex_search(ran.output, std::regex(R"(\nnccl\.allreduce +attached +ranks 0: \S*libnccl)")))
      << ran.output;
}

}  // namespace
}  // namespace slowburn::cli_sessions_test
