// slowburn stacks on real jobs that were stuck before it came, as the
// on-call runs it: an Open MPI rank stopped inside a collective, one
// blocked reading a pipe, one calling a different collective than its
// peers, a PyTorch DDP (gloo) rank frozen, and a healthy job. Stacks come
// through Debian's libmpi, libgloo and libtorch_cpu, built without frame
// pointers: the collective frame must still be found. Each test asserts
// exactly who is named, and why.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/subprocess.h"
#include "demo/mpi_job.h"
#include "demo/torch_job.h"
#include "stacks/python_stack.h"
#include "support/test_support.h"
#include "support/traced_jobs.h"

namespace slowburn::stacks_scenario_test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using namespace testing;

struct Snapshot {
  std::map<int, json> stacks;  // by rank
  std::vector<json> findings;
  json summary;
  std::string out;
};

Snapshot snapshot(const std::vector<int32_t>& pids, int samples = 3) {
  std::vector<std::string> args = {"stacks", "--json", "--samples", std::to_string(samples)};
  for (int32_t pid : pids) args.insert(args.end(), {"-p", std::to_string(pid)});
  Ran ran = run_slowburn(args, 60s);
  EXPECT_EQ(ran.status, 0) << ran.output;
  EXPECT_EQ(testing::schema_errors(ran.output, "stack,summary"), "");
  Snapshot s;
  s.out = ran.output;
  for (const json& j : json_lines(ran.output)) {
    std::string kind = j.value("kind", "");
    if (kind == "stack") s.stacks[j["rank"].get<int>()] = j;
    if (kind == "finding") s.findings.push_back(j);
    if (kind == "summary") s.summary = j;
  }
  return s;
}

char state_of(int32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

std::string syscall_of(int32_t pid) { return read_text("/proc/" + std::to_string(pid) + "/syscall"); }

// A 4-rank Open MPI job with one fault (--freeze-inside, --read-pipe or
// --mismatch R:S) at step 50, left to get stuck before the snapshot.
std::optional<MpiJob> stuck_mpi_job(const TempDir& dir, const std::string& fault, const std::string& rank_step) {
  MpiJobOptions options;
  options.program = demo_workload_argv(workload_path("slowburn-mpi-workload"), -1, 1.0, 3000, 60);
  options.program.insert(options.program.end(), {fault, rank_step});
  options.ranks = 4;
  options.log_path = (dir / "mpirun.log").string();
  auto job = MpiJob::launch(options);
  EXPECT_TRUE(job.ok()) << job.error().message;
  if (!job) return std::nullopt;
  return std::move(*job);
}

std::string comm_name(const json& stack) {
  const json& comm = stack["communicator"];
  return comm.is_object() ? comm.value("name", "") : "(not read)";
}

const json& only_finding(const Snapshot& s) {
  static const json none;
  EXPECT_EQ(s.findings.size(), 1u) << s.out;
  return s.findings.empty() ? none : s.findings.front();
}

TEST(Stacks, AnMpiRankStoppedInsideACollectiveBeforeSlowburnCameIsNamed) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  auto job = stuck_mpi_job(dir, "--freeze-inside", "1:50");
  ASSERT_TRUE(job);
  int32_t frozen = pid_of_rank(job->ranks(), 1);
  ASSERT_TRUE(wait_until([&] { return state_of(frozen) == 'T'; }, 30s)) << "rank 1 never stopped";
  std::this_thread::sleep_for(1s);
  Snapshot s = snapshot(job->pids());
  kill(frozen, SIGKILL);
  job->stop();
  const json& f = only_finding(s);
  EXPECT_EQ(f["rank"], 1) << f.dump();
  EXPECT_EQ(f["pid"], frozen);
  EXPECT_EQ(f["evidence"]["why"], "stopped") << f.dump();
  EXPECT_EQ(f["evidence"]["waiting_ranks"], (std::vector<int>{0, 2, 3})) << f.dump();
  EXPECT_NE(f["summary"].get<std::string>().find("is stopped (state T"), std::string::npos) << f.dump();
  // Its stack, unwound through libmpi without frame pointers, reaches the collective and main.
  const json& stack = s.stacks[1];
  EXPECT_EQ(stack["state"], "T");
  EXPECT_EQ(stack["symbol"], "MPI_Allgather") << stack.dump();
  // The communicator each waiting rank called its collective on, read from its stack.
  for (int waiting : {0, 2, 3}) EXPECT_EQ(comm_name(s.stacks[waiting]), "MPI_COMM_WORLD") << s.stacks[waiting].dump();
  bool main_reached = false;
  for (const json& frame : stack["frames"]) main_reached = main_reached || frame["symbol"] == "main";
  EXPECT_TRUE(main_reached) << stack.dump();
}

// `trace` on a job whose rank 2 stopped in its own code, outside any
// collective: no call to see, so its verdict comes from the ranks' stacks,
// not "undetermined".
TEST(Stacks, TraceOnAJobStuckBeforeItCameNamesTheStoppedRank) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  auto job = stuck_mpi_job(dir, "--freeze-outside", "2:50");
  ASSERT_TRUE(job);
  int32_t frozen = pid_of_rank(job->ranks(), 2);
  ASSERT_TRUE(wait_until([&] { return state_of(frozen) == 'T'; }, 30s)) << "rank 2 never stopped";
  // 7 s: the stacks are read 3 s after attaching with no call completed,
  // not only at the end.
  std::vector<std::string> args = {"trace", "--probe", "mpi.*", "-d", "7", "--json", "--no-hardware"};
  for (int32_t pid : job->pids()) args.insert(args.end(), {"--pid", std::to_string(pid)});
  Ran ran = run_slowburn(args, 60s);
  kill(frozen, SIGKILL);
  job->stop();
  EXPECT_EQ(ran.status, 0) << "a verdict, not undetermined\n" << ran.output;
  json verdict, finding, summary;
  int findings = 0;
  for (const json& j : json_lines(ran.output)) {
    if (j.value("kind", "") == "verdict") verdict = j;
    if (j.value("kind", "") == "status" && j.value("event", "") == "summary") summary = j;
    if (j.value("kind", "") == "finding") finding = j, ++findings;
  }
  EXPECT_EQ(findings, 1) << "said once, while the session ran\n" << ran.output;
  ASSERT_FALSE(verdict.is_null()) << ran.output;
  EXPECT_EQ(verdict["judged"], true);
  // Said while the session ran (its finding line), seconds before its end.
  ASSERT_FALSE(finding.is_null()) << ran.output;
  EXPECT_EQ(finding["rank"], 2) << finding.dump();
  EXPECT_EQ(finding["evidence"]["detector"], "stacks") << finding.dump();
  ASSERT_FALSE(summary.is_null()) << ran.output;
  EXPECT_EQ(summary["findings"], 1) << "the summary counts it\n" << summary.dump();
  EXPECT_LT(finding["ts"].get<double>() + 1.0, verdict["ts"].get<double>()) << finding.dump() << "\n" << verdict.dump();
  ASSERT_EQ(verdict["hangs"].size(), 1u) << verdict.dump();
  const json& hang = verdict["hangs"][0];
  EXPECT_EQ(hang["rank"], 2) << hang.dump();
  EXPECT_EQ(hang["evidence"]["detector"], "stacks") << hang.dump();
  EXPECT_EQ(hang["evidence"]["waiting_ranks"], (std::vector<int>{0, 1, 3})) << hang.dump();
  EXPECT_NE(hang["summary"].get<std::string>().find("is stopped (state T"), std::string::npos) << hang.dump();
  // Rank 2's own code, and where the others wait (spinning or not, as the machine's load lets them).
  EXPECT_NE(hang["summary"].get<std::string>().find("outside any collective; ranks 0, 1, 3 "), std::string::npos)
      << hang.dump();
  EXPECT_NE(hang["summary"].get<std::string>().find("inside MPI_Allgather"), std::string::npos) << hang.dump();
}

TEST(Stacks, AnMpiRankBlockedReadingAPipeOutsideAnyCollectiveIsNamedWithTheRead) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  auto job = stuck_mpi_job(dir, "--read-pipe", "2:50");
  ASSERT_TRUE(job);
  int32_t blocked = pid_of_rank(job->ranks(), 2);
  // read(2) is system call 0 on x86-64, 63 on arm64.
  ASSERT_TRUE(wait_until(
      [&] {
        std::string call = syscall_of(blocked);
        return call.starts_with("0 ") || call.starts_with("63 ");
      },
      30s));
  std::this_thread::sleep_for(1s);
  Snapshot s = snapshot(job->pids());
  kill(blocked, SIGKILL);
  job->stop();
  const json& f = only_finding(s);
  EXPECT_EQ(f["rank"], 2) << f.dump();
  EXPECT_EQ(f["evidence"]["why"], "blocked") << f.dump();
  EXPECT_NE(f["summary"].get<std::string>().find("outside any collective in read(pipe:["), std::string::npos)
      << f.dump();
  EXPECT_TRUE(s.stacks[2]["symbol"].is_null()) << s.stacks[2].dump();
}

TEST(Stacks, AnMpiRankInADifferentCollectiveIsAMismatch) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  auto job = stuck_mpi_job(dir, "--mismatch", "1:50");
  ASSERT_TRUE(job);
  int32_t odd = pid_of_rank(job->ranks(), 1);
  // Step 50 comes within a second; the job then stays deadlocked.
  std::this_thread::sleep_for(3s);
  Snapshot s = snapshot(job->pids());
  kill(odd, SIGKILL);
  job->stop();
  const json& f = only_finding(s);
  EXPECT_EQ(f["rank"], 1) << f.dump();
  EXPECT_EQ(f["evidence"]["why"], "mismatch") << f.dump();
  EXPECT_NE(f["summary"].get<std::string>().find("is alone inside MPI_Bcast"), std::string::npos) << f.dump();
  EXPECT_EQ(f["evidence"]["waiting_in"], "MPI_Allgather") << f.dump();
}

// A 2-D job (tensor-parallel pairs {0,1} {2,3}, data-parallel pairs {0,2}
// {1,3}), rank 3 stopped: the others wait in collectives of different
// sub-communicators, each read from the waiting rank's stack.
void stopped_in_2d_job(MpiJob& job) {
  std::this_thread::sleep_for(2s);
  int32_t frozen = pid_of_rank(job.ranks(), 3);
  kill(frozen, SIGSTOP);
  std::this_thread::sleep_for(1500ms);
  Snapshot s = snapshot(job.pids());
  kill(frozen, SIGKILL);
  job.stop();
  const json& f = only_finding(s);
  EXPECT_EQ(f["rank"], 3) << f.dump();
  EXPECT_EQ(f["evidence"]["why"], "stopped") << f.dump();
  for (int waiting : {0, 1, 2}) {
    const json& comm = s.stacks[waiting]["communicator"];
    ASSERT_TRUE(comm.is_object()) << "rank " << waiting << "'s communicator was not read\n" << s.out;
    auto members = comm["members"].get<std::vector<int>>();
    EXPECT_NE(std::find(members.begin(), members.end(), waiting), members.end()) << comm.dump();
    EXPECT_TRUE(members.size() == 2 || members.size() == 4) << comm.dump();
    if (waiting == 2) {
      EXPECT_NE(std::find(members.begin(), members.end(), 3), members.end())
          << "rank 2 waits for rank 3 directly, on a communicator they share: " << comm.dump();
    }
  }
  EXPECT_NE(f["summary"].get<std::string>().find(" on "), std::string::npos) << "where they wait, with the "
                                                                                "communicator: "
                                                                             << f.dump();
}

TEST(Stacks, TheCommunicatorsOfA2dOpenMpiJobAreReadFromTheWaitingRanksStacks) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  auto job = mpi_job(4, 2, -1, dir, 1.0);
  ASSERT_TRUE(job);
  stopped_in_2d_job(*job);
}

TEST(Stacks, TheCommunicatorsOfA2dMpichJobAreReadFromTheWaitingRanksStacks) {
  SKIP_UNLESS_MPICH();
  TempDir dir;
  auto job = mpich_job(4, 2, -1, dir, 1.0);
  ASSERT_TRUE(job);
  stopped_in_2d_job(*job);
}

TEST(Stacks, AHealthyMpiJobIsGroupedAndNobodyIsNamed) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  MpiJobOptions options;
  options.program = demo_workload_argv(workload_path("slowburn-mpi-workload"), -1, 1.0, 3000, 60);
  options.ranks = 4;
  options.log_path = (dir / "mpirun.log").string();
  auto job = MpiJob::launch(options);
  ASSERT_TRUE(job.ok()) << job.error().message;
  std::this_thread::sleep_for(2s);
  Snapshot s = snapshot(job->pids(), 5);
  job->stop();
  EXPECT_TRUE(s.findings.empty()) << s.out;
  EXPECT_EQ(s.stacks.size(), 4u) << s.out;
  EXPECT_GE(s.summary["groups"].get<int>(), 1) << s.out;
}

// Debian's python3.11 (a non-PIE executable, linked at 0x400000): the
// frames of a script sleeping two calls deep, innermost first, with lines.
TEST(Stacks, APythonProcesssFramesAreReadWithoutStoppingIt) {
  const std::string python = "/usr/bin/python3.11";
  if (!std::filesystem::exists(python)) GTEST_SKIP() << python << " is not installed";
  TempDir dir;
  std::string script = (dir / "sleeper.py").string();
  std::ofstream(script) << "import time\n"
                           "def inner():\n"
                           "    time.sleep(60)\n"
                           "def outer():\n"
                           "    inner()\n"
                           "outer()\n";
  auto child = Subprocess::spawn({python, script});
  ASSERT_TRUE(child.ok()) << child.error().message;
  int32_t pid = child->pid();
  PythonStack s;
  ASSERT_TRUE(wait_until(
      [&] {
        s = read_python_stack("/proc", pid, pid);
        return !s.frames.empty() && s.frames[0].function == "inner";  // past the imports of its start
      },
      10s))
      << s.error;
  EXPECT_NE(state_of(pid), 'T') << "read without stopping it";
  child->terminate();
  EXPECT_TRUE(s.python);
  ASSERT_EQ(s.frames.size(), 3u) << s.error;
  EXPECT_EQ(s.frames[0].function, "inner");
  EXPECT_EQ(s.frames[0].line, 3);
  EXPECT_EQ(s.frames[1].function, "outer");
  EXPECT_EQ(s.frames[1].line, 5);
  EXPECT_EQ(s.frames[2].function, "<module>");
  EXPECT_EQ(s.frames[2].line, 6);
  EXPECT_EQ(s.frames[0].file, script);
}

TEST(Stacks, AFrozenDdpRankIsNamedThroughGlooAndLibtorch) {
  SKIP_UNLESS_TORCH();
  TempDir dir;
  TorchJobOptions options;
  options.script = workload_path("slowburn-ddp-workload.py");
  options.args = ddp_workload_args(-1, 0, 0, 60);
  options.ranks = 4;
  options.log_dir = dir.path().string();
  auto job = TorchJob::launch(options);
  ASSERT_TRUE(job.ok()) << job.error().message;
  // Training has begun once a rank is seen inside a gloo collective.
  ASSERT_TRUE(wait_until(
      [&] {
        Snapshot once = snapshot(job->pids(), 1);
        for (const auto& [rank, stack] : once.stacks)
          if (stack["collective"].is_string()) return true;
        return false;
      },
      60s));
  int32_t frozen = pid_of_rank(job->ranks(), 2);
  kill(frozen, SIGSTOP);
  std::this_thread::sleep_for(1s);
  Snapshot s = snapshot(job->pids());
  kill(frozen, SIGKILL);
  job->stop();
  const json& f = only_finding(s);
  EXPECT_EQ(f["rank"], 2) << f.dump();
  EXPECT_EQ(f["evidence"]["why"], "stopped") << f.dump();
  EXPECT_EQ(f["evidence"]["waiting_ranks"], (std::vector<int>{0, 1, 3})) << f.dump();
  for (int peer : {0, 1, 3}) {
    EXPECT_EQ(s.stacks[peer]["collective"], "gloo") << s.stacks[peer].dump();
    // The gloo::Context its work was called on, found in its worker's frames (its vtable checked).
    EXPECT_EQ(s.stacks[peer]["communicator"]["name"], "gloo world") << s.stacks[peer].dump();
    EXPECT_EQ(s.stacks[peer]["communicator"]["members"], (std::vector<int>{0, 1, 2, 3})) << s.stacks[peer].dump();
  }
  // Every rank's Python frames, read without stopping it: the training loop in the workload's main().
  for (int rank : {0, 1, 2, 3}) {
    const json& py = s.stacks[rank]["python"];
    ASSERT_TRUE(py.is_array() && !py.empty()) << s.stacks[rank].dump();
    bool in_main = false;
    for (const json& f : py)
      in_main = in_main || (f["function"] == "main" && f["file"].get<std::string>().ends_with("ddp-workload.py") &&
                            f["line"].get<int>() > 0);
    EXPECT_TRUE(in_main) << py.dump();
  }
}

}  // namespace
}  // namespace slowburn::stacks_scenario_test
