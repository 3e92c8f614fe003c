// The slowburn binary as a user runs it: errors, signals, leftovers.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "core/subprocess.h"
#include "probes/resolver.h"
#include "procfs/maps.h"
#include "support/test_support.h"

namespace slowburn::cli_test {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

using testing::json_lines;
using testing::Ran;
using testing::read_text;
using testing::run_slowburn;
using testing::wait_until;

size_t count_lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

// Our BPF programs still loaded, as an SRE would check: `bpftool prog show`.
std::vector<std::string> our_programs() {
  TempDir dir;
  auto bpftool = Subprocess::spawn({"bpftool", "-j", "prog", "show"}, {(dir / "out").string(), {}});
  EXPECT_TRUE(bpftool.ok());
  EXPECT_EQ(bpftool->wait_for(10s), 0);
  std::vector<std::string> names;
  for (const auto& prog : nlohmann::json::parse(read_text(dir / "out"))) {
    std::string name = prog.value("name", "");
    if (name == "call_enter" || name == "call_exit") names.push_back(name);
  }
  return names;
}

// True once slowburn has attached and said so (text or JSON).
bool tracing_started(const std::filesystem::path& output) {
  std::string text = read_text(output);
  return text.find("Hit Ctrl-C to end") != std::string::npos || text.find("\"event\":\"tracing\"") != std::string::npos;
}

// A process that looks like rank 0 and loads the stand-in libmpi.so.99,
// which has MPI_Allreduce and no other MPI symbol.
struct StandinRank {
  TempDir dir;
  std::optional<Subprocess> process;
  explicit StandinRank(long calls, int sleep_s) {
    auto child = Subprocess::spawn(
        {testing::target_path("standin_rank").string(), (dir / "go").string(), std::to_string(calls),
         std::to_string(sleep_s)},
        {"/dev/null", {"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1", "OMPI_MCA_ess_base_jobid=standin"}});
    EXPECT_TRUE(child.ok());
    process.emplace(std::move(*child));
    // Until it has exec'd, the child is a copy of this test with this test's
    // environment (no rank variables): a trace started on it then refused
    // "not a rank" on a loaded machine.
    auto exe = std::filesystem::canonical(testing::target_path("standin_rank"));
    EXPECT_TRUE(wait_until(
        [&] {
          std::error_code ec;
          return std::filesystem::read_symlink(fmt::format("/proc/{}/exe", process->pid()), ec) == exe;
        },
        10s))
        << "the stand-in rank never started";
  }
  std::string pid() const { return std::to_string(process->pid()); }
  void go() { testing::touch(dir / "go"); }
};

TEST(Cli, HelpShowsExamplesForEverySubcommand) {
  for (const char* sub : {"trace", "catalog", "ranks", "funclat", "demo", "xid", "aer", "pcie", "gpuirq", "ib", "qp",
                          "fabric", "analyze", "health", "check"}) {
    Ran ran = run_slowburn({sub, "--help"});
    EXPECT_EQ(ran.status, 0) << sub;
    EXPECT_NE(ran.output.find("Examples:"), std::string::npos) << sub;
  }
}

TEST(Cli, NotRootIsOneClearLine) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop to an unprivileged user";
  Ran ran = run_slowburn({"trace", "-d", "1"}, 30s,
                         {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"});
  EXPECT_NE(ran.status, 0);
  EXPECT_EQ(count_lines(ran.output), 1u) << ran.output;
  EXPECT_NE(ran.output.find("slowburn: tracing needs privileges: missing CAP_BPF"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("run as root"), std::string::npos);
}

TEST(Cli, PidThatHasExitedOrIsNotARank) {
  SKIP_UNLESS_ROOT();
  Ran gone = run_slowburn({"trace", "--pid", "999999999", "-d", "1"});
  EXPECT_EQ(gone.status, 1);
  EXPECT_NE(gone.output.find("pid 999999999 does not exist or has exited"), std::string::npos) << gone.output;

  auto sleeper = Subprocess::spawn({"sleep", "30"});
  ASSERT_TRUE(sleeper.ok());
  Ran not_rank = run_slowburn({"trace", "--pid", std::to_string(sleeper->pid()), "-d", "1"});
  EXPECT_EQ(not_rank.status, 1);
  EXPECT_NE(not_rank.output.find("is not a rank of a training job"), std::string::npos) << not_rank.output;
}

TEST(Cli, UnknownProbePatternNamesTheKnownOnes) {
  SKIP_UNLESS_ROOT();
  StandinRank rank(0, 5);
  Ran ran = run_slowburn({"trace", "--pid", rank.pid(), "--probe", "mpi.allreduse", "-d", "1"});
  EXPECT_EQ(ran.status, 1);
  EXPECT_NE(ran.output.find("no probe matches 'mpi.allreduse'"), std::string::npos) << ran.output;
}

TEST(Cli, MissingSymbolIsUnavailableWhileOthersAttach) {
  SKIP_UNLESS_ROOT();
  StandinRank rank(1000, 1);
  TempDir dir;
  auto trace = Subprocess::spawn(
      {testing::slowburn_binary().string(), "trace", "--pid", rank.pid(), "--probe", "mpi.*", "-d", "20", "--json"},
      {(dir / "out").string(), {}});
  ASSERT_TRUE(trace.ok());
  ASSERT_TRUE(wait_until([&] { return tracing_started(dir / "out"); }, 20s));
  rank.go();  // 1000 calls, then the rank exits and the session ends with it
  auto status = trace->wait_for(30s);
  ASSERT_TRUE(status.has_value());
  // One rank: nothing to align across ranks, so no verdict either way (exit 2, not an all-clear).
  EXPECT_EQ(*status, 2);
  std::map<std::string, nlohmann::json> probes;
  uint64_t allreduce_calls = 0;
  std::istringstream lines(read_text(dir / "out"));
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == "status" && j["event"] == "probe") probes[j["probe"]] = j;
    if (j["kind"] == "hist" && j["probe"] == "mpi.allreduce") allreduce_calls = j["count"];
  }
  EXPECT_EQ(probes["mpi.allreduce"]["state"], "attached");
  EXPECT_EQ(probes["mpi.barrier"]["state"], "unavailable");
  EXPECT_NE(probes["mpi.barrier"]["reason"].get<std::string>().find("symbol missing"), std::string::npos);
  EXPECT_NE(probes["mpi.barrier"]["reason"].get<std::string>().find("libmpi.so.99 has none of MPI_Barrier"),
            std::string::npos);
  EXPECT_EQ(allreduce_calls, 1000u);
}

// `slowburn trace` on a stand-in rank, once it says it is tracing.
struct RunningTrace {
  StandinRank rank{0, 60};
  TempDir dir;
  std::optional<Subprocess> process;
  RunningTrace() {
    auto trace = Subprocess::spawn({testing::slowburn_binary().string(), "trace", "--pid", rank.pid()},
                                   {(dir / "out").string(), {}});
    EXPECT_TRUE(trace.ok());
    process.emplace(std::move(*trace));
    EXPECT_TRUE(wait_until([&] { return tracing_started(dir / "out"); }, 20s));
  }
};

TEST(Cli, SigintPrintsTheSummaryAndAnHonestVerdictAndLeavesNoProgram) {
  SKIP_UNLESS_ROOT();
  RunningTrace trace;
  EXPECT_FALSE(our_programs().empty());
  trace.process->signal(SIGINT);
  auto status = trace.process->wait_for(20s);
  ASSERT_TRUE(status.has_value());
  // Stopped before a single collective: "undetermined" (exit 2), never "no straggler found".
  EXPECT_EQ(*status, 2);
  std::string out = read_text(trace.dir / "out");
  EXPECT_NE(out.find("Verdict: undetermined"), std::string::npos) << out;
  EXPECT_EQ(out.find("no straggler found"), std::string::npos) << out;
  EXPECT_NE(out.find("ring-buffer drops"), std::string::npos);
  EXPECT_TRUE(wait_until([] { return our_programs().empty(); }, 5s)) << "BPF programs left after SIGINT";
}

TEST(Cli, SigkillLeavesNoProgram) {
  SKIP_UNLESS_ROOT();
  RunningTrace trace;
  EXPECT_FALSE(our_programs().empty());
  trace.process->signal(SIGKILL);
  ASSERT_TRUE(trace.process->wait_for(10s).has_value());
  EXPECT_TRUE(wait_until([] { return our_programs().empty(); }, 5s)) << "BPF programs left after SIGKILL";
}

TEST(Cli, RanksFromACapturedProcfs) {
  Ran ran =
      run_slowburn({"ranks", "--json", "--procfs-root", std::string(SLOWBURN_SOURCE_DIR) + "/tests/fixtures/proc"});
  ASSERT_EQ(ran.status, 0);
  std::istringstream lines(ran.output);
  std::vector<int> ranks;
  nlohmann::json summary;
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == "rank")
      ranks.push_back(j["rank"]);
    else
      summary = j;
  }
  EXPECT_EQ(ranks, (std::vector<int>{4, 0, 3, 0, 1, 2, 0, 1, 6, 5}));
  EXPECT_EQ(summary["kind"], "summary") << ran.output;
  EXPECT_EQ(testing::schema_errors(ran.output, "rank,summary"), "");
  EXPECT_EQ(summary["ranks"], 10) << "the closing line counts them";
}

TEST(Cli, TheCatalogInALibraryFileUnderItsNameAndItsOldOne) {
  Ran ran = run_slowburn({"catalog", "--lib", testing::target_path("standin/libmpi.so.99").string(), "--json"});
  ASSERT_EQ(ran.status, 0);
  Ran old = run_slowburn({"probes", "--lib", testing::target_path("standin/libmpi.so.99").string(), "--json"});
  EXPECT_EQ(old.status, 0);
  EXPECT_EQ(old.output, ran.output) << "'probes' stays an alias for a release";
  EXPECT_EQ(testing::schema_errors(ran.output, "probe"), "");
  std::map<std::string, std::string> state;
  std::istringstream lines(ran.output);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line);
    state[j["probe"]] = j["state"];
  }
  EXPECT_EQ(state["mpi.allreduce"], "resolved");
  EXPECT_EQ(state["mpi.barrier"], "unavailable");
  EXPECT_EQ(state["nccl.allreduce"], "unavailable");
}

TEST(Cli, FunclatCountsEveryCallInTheKernel) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  auto target =
      Subprocess::spawn({testing::target_path("call_counter").string(), (dir / "go").string(), "0", "0", "777", "0"});
  ASSERT_TRUE(target.ok());
  auto funclat =
      Subprocess::spawn({testing::slowburn_binary().string(), "funclat", "--json", "-p", std::to_string(target->pid()),
                         testing::target_path("call_counter").string() + ":sb_target_c"},
                        {(dir / "out").string(), {}});
  ASSERT_TRUE(funclat.ok());
  ASSERT_TRUE(wait_until([&] { return tracing_started(dir / "out"); }, 20s));
  testing::touch(dir / "go");
  ASSERT_TRUE(target->wait_for(20s).has_value());
  auto status = funclat->wait_for(20s);  // exits on its own once the pid is gone
  ASSERT_TRUE(status.has_value());
  ASSERT_EQ(*status, 0) << read_text(dir / "out");
  uint64_t count = 0;
  std::istringstream lines(read_text(dir / "out"));
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == "hist") count += j["count"].get<uint64_t>();
  }
  EXPECT_EQ(count, 777u);
}

TEST(GuestKernelLog, XidToolReportsKernelLogXidsAsJsonEvents) {
  SKIP_UNLESS_KERNEL_MATRIX_GUEST();
  TempDir dir;
  auto xid = Subprocess::spawn({testing::slowburn_binary().string(), "xid", "--json", "-d", "20"},
                               {(dir / "out").string(), {}});
  ASSERT_TRUE(xid.ok());
  ASSERT_TRUE(wait_until([&] { return tracing_started(dir / "out"); }, 20s));
  for (const char* line : {"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
                           "an ordinary kernel message", "NVRM: Xid (PCI:0000:3b:00): 9999, a code nobody knows"}) {
    int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_GT(write(fd, line, strlen(line)), 0);
    close(fd);
  }
  std::vector<nlohmann::json> events;
  ASSERT_TRUE(wait_until(
      [&] {
        events.clear();
        std::istringstream lines(read_text(dir / "out"));
        for (std::string line; std::getline(lines, line);) {
          auto j = nlohmann::json::parse(line, nullptr, false);
          if (!j.is_discarded() && j["kind"] == "event") events.push_back(j);
        }
        return events.size() >= 2;
      },
      10s));
  xid->signal(SIGINT);
  ASSERT_EQ(xid->wait_for(10s), 0);
  ASSERT_EQ(events.size(), 2u);
  const nlohmann::json& e = events[0];
  EXPECT_EQ(e["type"], "xid");
  EXPECT_EQ(e["code"], 79);
  EXPECT_EQ(e["pci"], "0000:3b:00");
  EXPECT_EQ(e["pid"], 1234);
  EXPECT_EQ(e["process"], "python3");
  EXPECT_EQ(e["message"], "GPU has fallen off the bus.");
  EXPECT_EQ(e["severity"], "reboot-node");
  EXPECT_EQ(e["action"], "reboot the node; contact support if it recurs");
  EXPECT_EQ(events[1]["code"], 9999);
  EXPECT_EQ(events[1]["severity"], "unknown");  // reported, not dropped
  EXPECT_TRUE(events[1]["pid"].is_null());
}

TEST(Cli, PcieTableFromACapturedTree) {
  std::string fixtures = std::string(SLOWBURN_SOURCE_DIR) + "/tests/fixtures";
  Ran ran =
      run_slowburn({"pcie", "--json", "--sysfs-root", fixtures + "/sys", "--procfs-root", fixtures + "/proc-nvidia"});
  ASSERT_EQ(ran.status, 0) << ran.output;
  EXPECT_EQ(testing::schema_errors(ran.output, "status,event"), "");
  std::map<std::string, nlohmann::json> rows, events;
  std::istringstream lines(ran.output);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == "status" && j["event"] == "link") rows[j["device"]] = j;
    if (j["kind"] == "event") events[j["device"]] = j;
  }
  EXPECT_EQ(rows["0000:03:00.0"]["status"], "downtrained");
  EXPECT_EQ(rows["0000:03:00.0"]["ranks"], nlohmann::json::array({0}));
  EXPECT_EQ(rows["0000:00:01.0"]["ranks"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(rows["0000:02:01.0"]["status"], "ok");  // trained to what its NIC can do
  EXPECT_EQ(rows["0000:06:00.0"]["status"], "down");
  EXPECT_FALSE(rows["0000:00:04.0"]["notes"].empty());
  EXPECT_EQ(events["0000:03:00.0"]["type"], "link.downtrained");
  EXPECT_EQ(events["0000:03:00.0"]["role"], "gpu");
}

TEST(Cli, FunclatTakesDemangledCxxNames) {
  SKIP_UNLESS_ROOT();
  const char* nccl = "/usr/local/cuda/lib64/libnccl.so.2";
  if (access(nccl, R_OK) != 0) GTEST_SKIP() << "NCCL not installed at " << nccl;
  Ran ran = run_slowburn({"funclat", "-d", "0.2", "--json", std::string(nccl) + ":ncclIbTest(void*, int*, int*)"});
  ASSERT_EQ(ran.status, 0) << ran.output;
  auto status = nlohmann::json::parse(ran.output.substr(0, ran.output.find('\n')));
  EXPECT_EQ(status["state"], "attached");
  EXPECT_EQ(status["sites"][0]["symbol"], "_Z10ncclIbTestPvPiS0_");  // hidden C++ symbol, from .symtab
}

TEST(Cli, FabricReplaysACapturedTreeWithScriptedCounters) {
  std::string fixtures = std::string(SLOWBURN_SOURCE_DIR) + "/tests/fixtures";
  TempDir copy;
  std::filesystem::copy(fixtures + "/sys", copy / "sys",
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  std::filesystem::copy(fixtures + "/ethtool", copy / "ethtool", std::filesystem::copy_options::recursive);
  // The NIC starts pausing its peer on priority 3 (half of every 200 ms) and
  // sending CNPs, as a receiver that cannot keep up does.
  std::atomic<bool> done{false};
  std::thread nic([&] {
    for (uint64_t step = 1; !done.load(); ++step) {
      EXPECT_TRUE(testing::replace_text(
          copy / "ethtool/ib0", "NIC statistics:\n     tx_prio3_pause: " + std::to_string(step * 100) +
                                    "\n     tx_prio3_pause_duration: " + std::to_string(step * 100'000) + "\n"));
      EXPECT_TRUE(testing::replace_text(copy / "sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent",
                                        std::to_string(step * 2000) + "\n"));
      std::this_thread::sleep_for(200ms);
    }
  });
  Ran ran = run_slowburn({"fabric", "--json", "-d", "2.2", "-i", "0.5", "--sysfs-root", (copy / "sys").string(),
                          "--procfs-root", fixtures + "/proc-nvidia", "--ethtool-dir", (copy / "ethtool").string()});
  done.store(true);
  nic.join();
  ASSERT_EQ(ran.status, 0) << ran.output;
  EXPECT_EQ(testing::schema_errors(ran.output, "status,rates,event"), "");
  auto rates = json_lines(ran.output, "rates");
  ASSERT_GE(rates.size(), 3u) << ran.output;
  EXPECT_EQ(rates[0]["nic"], "mlx5_0");
  EXPECT_EQ(rates[0]["device"], "0000:04:00.0");
  EXPECT_GT(rates[1]["pause"]["3"]["tx_share"].get<double>(), 0.3);
  EXPECT_GT(rates[1]["cnp_sent_per_s"].get<double>(), 1000);
  std::set<std::string> types;
  for (const auto& e : json_lines(ran.output, "event")) {
    types.insert(e["type"].get<std::string>());
    EXPECT_EQ(e["ranks"], nlohmann::json::array({0, 1})) << e.dump();
  }
  EXPECT_TRUE(types.count("pfc.pause_storm")) << ran.output;
  EXPECT_TRUE(types.count("ecn.cnp_surge")) << ran.output;
  EXPECT_FALSE(types.count("link.downtrained")) << "fabric watches the fabric only";
}

TEST(Cli, FabricWithoutRdmaDevicesSaysSo) {
  TempDir sys;  // a sysfs with no RDMA device (a root that is not there is another error: cli_inputs_test)
  Ran ran = run_slowburn({"fabric", "-d", "1", "--sysfs-root", sys.path().string()});
  EXPECT_EQ(ran.status, 2) << "nothing to watch";
  EXPECT_NE(
      ran.output.find("slowburn: nothing to watch: no RDMA devices under " + sys.path().string() + "/class/infiniband"),
      std::string::npos)
      << ran.output;
}

TEST(Cli, QpToolReportsTransitionsAndAsyncErrorsSystemWide) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  std::string lib = testing::target_path("verbs/libibverbs.so.1").string();
  auto qp = Subprocess::spawn({testing::slowburn_binary().string(), "qp", "--json", "--lib", lib, "-d", "30"},
                              {(dir / "out").string(), {}});
  ASSERT_TRUE(qp.ok());
  ASSERT_TRUE(wait_until([&] { return tracing_started(dir / "out"); }, 20s));
  // Started after slowburn: a system-wide attachment sees it anyway.
  auto driver = Subprocess::spawn({testing::target_path("verbs_driver").string(), (dir / "go").string()});
  ASSERT_TRUE(driver.ok());
  testing::touch(dir / "go");
  ASSERT_EQ(driver->wait_for(10s), 0);
  ASSERT_TRUE(wait_until([&] { return json_lines(read_text(dir / "out"), "event").size() >= 6; }, 10s))
      << read_text(dir / "out");
  qp->signal(SIGINT);
  ASSERT_EQ(qp->wait_for(10s), 0);
  std::string out = read_text(dir / "out");
  auto events = json_lines(out, "event");
  ASSERT_EQ(events.size(), 6u) << out;
  EXPECT_EQ(events[1]["type"], "qp.error");
  EXPECT_EQ(events[1]["from_state"], "RTS");
  EXPECT_EQ(events[1]["to_state"], "ERR");
  EXPECT_EQ(events[1]["qp_num"], 0x101);
  EXPECT_EQ(events[1]["nic"], "mlx5_7");
  EXPECT_EQ(events[1]["pid"], driver->pid());
  EXPECT_EQ(events[3]["event"], "QP_FATAL");
  EXPECT_EQ(events[4]["event"], "PORT_ERR");
  EXPECT_EQ(events[4]["port"], 1);
  auto totals = json_lines(out, "qp_totals");
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0]["created"], 2);
  EXPECT_EQ(totals[0]["destroyed"], 2);
  EXPECT_TRUE(testing::bpf_program_ids_named("modify_qp").empty()) << "probes left behind";
}

TEST(Cli, QpToolTimesEveryQpsSendsThroughItsProvidersDataPath) {
  // A stripped stand-in provider (tests/targets/verbs_provider_standin.c):
  // six QPs, 0x105's sends completing in 12 ms, the others' in 200 us.
  SKIP_UNLESS_ROOT();
  TempDir dir;
  auto driver =
      Subprocess::spawn({testing::target_path("verbs_qp_driver").string(), (dir / "go").string(), "6", "3", "4"});
  ASSERT_TRUE(driver.ok());
  ASSERT_TRUE(wait_until(
      [&] {
        auto maps = read_process_maps("/proc", driver->pid());
        return maps && find_library(*maps, "libibverbs.so");
      },
      10s));
  auto qp = Subprocess::spawn(
      {testing::slowburn_binary().string(), "qp", "--json", "-p", std::to_string(driver->pid()), "-d", "60"},
      {(dir / "out").string(), {}});
  ASSERT_TRUE(qp.ok());
  ASSERT_TRUE(wait_until([&] { return tracing_started(dir / "out"); }, 20s));
  testing::touch(dir / "go");
  ASSERT_EQ(driver->wait_for(30s), 0);
  ASSERT_EQ(qp->wait_for(20s), 0) << "ends when its process has exited";
  std::string out = read_text(dir / "out");
  EXPECT_EQ(testing::schema_errors(out, "qp_latency,qp_totals,event,status"), "");
  std::map<uint64_t, nlohmann::json> by_qp;
  for (const auto& j : json_lines(out, "qp_latency")) by_qp[j["qp_num"].get<uint64_t>()] = j;
  ASSERT_EQ(by_qp.size(), 6u) << out;
  const auto& slow = by_qp.at(0x105);
  EXPECT_TRUE(slow["slow"].get<bool>()) << slow;
  EXPECT_EQ(slow["nic"], "rxe0");
  for (const auto& [num, j] : by_qp) {
    EXPECT_GE(j["sends"].get<uint64_t>(), 100u) << j;
    if (num != 0x105) {
      EXPECT_LT(j["latency_mean_us"].get<double>() * 3, slow["latency_mean_us"].get<double>()) << j;
    }
  }
  EXPECT_EQ(by_qp.at(0x101)["errors"], 1) << "its last request completed in error";
  bool said = false;
  for (const auto& e : json_lines(out, "event")) said |= e["type"] == "rdma.slow_qp" && e["qp_num"] == 0x105;
  EXPECT_TRUE(said) << out;
  bool attached = false;
  for (const auto& p : json_lines(out, "status"))
    attached |= p.value("probe", "") == "verbs.qp_completions" && p.value("state", "") == "attached";
  EXPECT_TRUE(attached) << out;
  EXPECT_TRUE(testing::bpf_program_ids_named("poll_cq_return").empty()) << "probes left behind";
}

TEST(Cli, IbToolPerConnectionRequestsAndLatency) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  // 12 sends on two connections, 6 receives, 2 flushes; each completes
  // after at least 1 ms.
  auto driver = Subprocess::spawn({testing::target_path("ncclib_driver").string(), (dir / "go").string(), "12", "6",
                                   "2", "3", "1000", "4096", "0"});
  ASSERT_TRUE(driver.ok());
  auto ib = Subprocess::spawn(
      {testing::slowburn_binary().string(), "ib", "--json", "-p", std::to_string(driver->pid()), "-d", "30"},
      {(dir / "out").string(), {}});
  ASSERT_TRUE(ib.ok());
  ASSERT_TRUE(wait_until([&] { return tracing_started(dir / "out"); }, 20s)) << read_text(dir / "out");
  testing::touch(dir / "go");
  ASSERT_EQ(driver->wait_for(20s), 0);
  ASSERT_EQ(ib->wait_for(10s), 0) << "ib should stop once its only process exited";
  std::string out = read_text(dir / "out");
  auto rows = json_lines(out, "ib");
  ASSERT_EQ(rows.size(), 4u) << out;
  uint64_t requests = 0;
  for (const auto& r : rows) {
    requests += r["requests"].get<uint64_t>();
    EXPECT_GE(r["latency_mean_us"].get<double>(), 1000.0) << r.dump();
    EXPECT_EQ(r["pid"], driver->pid());
  }
  EXPECT_EQ(requests, 20u);
  // isend i carries 4096 * (i + 1) bytes, even i on one connection, odd on the other.
  std::set<uint64_t> send_bytes;
  for (const auto& r : rows)
    if (r["direction"] == "send") {
      EXPECT_EQ(r["requests"], 6);
      send_bytes.insert(r["bytes"].get<uint64_t>());
    }
  EXPECT_EQ(send_bytes, (std::set<uint64_t>{4096 * (1 + 3 + 5 + 7 + 9 + 11), 4096 * (2 + 4 + 6 + 8 + 10 + 12)}));
  EXPECT_EQ(json_lines(out, "hist").size(), 4u);
}

}  // namespace
}  // namespace slowburn::cli_test
