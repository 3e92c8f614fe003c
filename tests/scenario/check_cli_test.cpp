// `slowburn check` as a user runs it on this machine: as root, every
// required row passes (what it reports is held to what the test finds
// itself: kprobes, tracepoints, the NVIDIA driver, RDMA devices); with the
// capabilities dropped (setpriv) the required rows fail with their fix and
// the exit is 5; --pid on a stand-in rank and on a process that is not one.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "core/subprocess.h"
#include "loader/features.h"
#include "loader/uprobe_multi.h"
#include "support/test_support.h"
#include "tracefs/tracefs.h"

namespace slowburn::check_cli_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::json_lines;
using testing::Ran;
using testing::run_slowburn;
using testing::TempDir;

constexpr int kExitCheckFailed = 5;  // cli/command.h

std::map<std::string, nlohmann::json> by_check(const std::string& output) {
  std::map<std::string, nlohmann::json> rows;
  for (const nlohmann::json& line : json_lines(output, "check")) {
    std::string check = line.at("check");
    EXPECT_FALSE(rows.contains(check)) << "two rows named " << check;
    rows[check] = line;
  }
  return rows;
}

// The contract of every line: exactly these keys, a detail always, a fix
// exactly when the row is not ok.
void expect_contract(const std::map<std::string, nlohmann::json>& rows) {
  const std::set<std::string> keys = {"kind", "check", "ok", "required", "detail", "fix"};
  for (const auto& [check, line] : rows) {
    SCOPED_TRACE(check);
    std::set<std::string> have;
    for (const auto& [key, value] : line.items()) have.insert(key);
    EXPECT_EQ(have, keys);
    EXPECT_TRUE(line.at("ok").is_boolean());
    EXPECT_TRUE(line.at("required").is_boolean());
    EXPECT_FALSE(line.at("detail").get<std::string>().empty());
    EXPECT_EQ(line.at("fix").get<std::string>().empty(), line.at("ok").get<bool>()) << line;
  }
}

void expect_row(const std::map<std::string, nlohmann::json>& rows, const std::string& check, bool ok, bool required) {
  SCOPED_TRACE(check);
  ASSERT_TRUE(rows.contains(check));
  EXPECT_EQ(rows.at(check).at("ok"), ok) << rows.at(check);
  EXPECT_EQ(rows.at(check).at("required"), required) << rows.at(check);
}

TEST(CheckCli, AsRootWhatIsPresentPassesWhatIsAbsentSaysWhyAndExitsZero) {
  SKIP_UNLESS_ROOT();
  Ran ran = run_slowburn({"check", "--json"}, 60s);
  EXPECT_EQ(ran.status, 0) << ran.output;
  EXPECT_EQ(testing::schema_errors(ran.output, "check"), "");
  auto rows = by_check(ran.output);
  ASSERT_GE(rows.size(), 25u) << ran.output;
  expect_contract(rows);
  for (const char* check : {"btf", "capabilities", "tracefs", "bpf.ringbuf", "bpf.uprobe"})
    expect_row(rows, check, true, true);
  // The real attach: three calls of its own function, three records back with the cookie.
  EXPECT_NE(rows["bpf.uprobe"].at("detail").get<std::string>().find("fired 3x, 3 record(s)"), std::string::npos)
      << rows["bpf.uprobe"];
  expect_row(rows, "bpf.uprobe_multi", kernel_has_uprobe_multi(), false);
  auto tracefs = ensure_tracefs();
  ASSERT_TRUE(tracefs.ok());
  expect_row(rows, "bpf.tracepoint", tracepoint_exists(*tracefs, "task", "task_rename"), false);

  // What this test finds itself, the check must report: present ok, absent ok:false not required.
  expect_row(rows, "kprobes", !kprobes_unavailable_reason().has_value(), false);
  for (auto [system, event] :
       {std::pair{"ras", "aer_event"}, std::pair{"sched", "sched_switch"}, std::pair{"printk", "console"},
        std::pair{"nvidia", "nvidia_dev_xid"}, std::pair{"mce", "mce_record"}})
    expect_row(rows, fmt::format("tracepoint.{}:{}", system, event), tracepoint_exists(*tracefs, system, event), false);
  std::error_code ec;
  bool nvidia = fs::exists("/proc/driver/nvidia", ec) || fs::exists("/sys/module/nvidia", ec);
  expect_row(rows, "nvidia.driver", nvidia, false);
  bool rdma = fs::exists("/sys/class/infiniband", ec) && !fs::is_empty("/sys/class/infiniband", ec);
  expect_row(rows, "rdma", rdma, false);
  if (!tracepoint_exists(*tracefs, "ras", "aer_event")) {
    const auto& aer = rows["tracepoint.ras:aer_event"];
    EXPECT_NE(aer.at("detail").get<std::string>().find("CONFIG_PCIEAER"), std::string::npos) << aer;
  }
  if (!nvidia) {
    EXPECT_NE(rows["nvidia.driver"].at("fix").get<std::string>().find("modprobe nvidia"), std::string::npos);
  }

  // The table for a person: a header, a fix line under each row that is not ok, the summary.
  Ran text = run_slowburn({"check"}, 60s);
  EXPECT_EQ(text.status, 0);
  EXPECT_EQ(text.output.rfind("CHECK", 0), 0u) << text.output;
  EXPECT_NE(text.output.find("fix: "), std::string::npos);
  EXPECT_NE(text.output.find("slowburn can trace here"), std::string::npos) << text.output;
}

// As packaged (dh_strip, install -s): the attach tests find slowburn's own
// target in .dynsym. Seen on a GPU node: a stripped copy reported ring
// buffers and uprobes unusable where trace worked.
TEST(CheckCli, AStrippedBinaryStillTestsItsOwnProbes) {
  SKIP_UNLESS_ROOT();
  if (!find_program("strip")) GTEST_SKIP() << "strip not installed (binutils)";
  TempDir dir;
  fs::path stripped = dir / "slowburn";
  auto strip = Subprocess::spawn({"strip", "-o", stripped.string(), testing::slowburn_binary().string()});
  ASSERT_TRUE(strip && strip->wait_for(30s) == 0) << "strip failed";
  auto child = Subprocess::spawn({stripped.string(), "check", "--json"}, {(dir / "out").string(), {}});
  ASSERT_TRUE(child.ok());
  auto status = child->wait_for(60s);
  std::string output = testing::read_text(dir / "out");
  ASSERT_TRUE(status.has_value()) << output;
  auto rows = by_check(output);
  for (const char* check : {"bpf.ringbuf", "bpf.uprobe"}) expect_row(rows, check, true, true);
}

TEST(CheckCli, WithoutCapabilitiesTheRequiredRowsFailWithTheFixAndExitFive) {
  SKIP_UNLESS_ROOT();
  if (!find_program("setpriv")) GTEST_SKIP() << "setpriv not installed (util-linux)";
  // The load tests attach to slowburn's own binary, which uid 65534 must be
  // able to read: a checkout under a 0700 directory (mktemp -d) makes every
  // row "Permission denied" on the file, not the kernel's refusal tested here.
  auto nobody_reads = Subprocess::spawn({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "test", "-r",
                                         testing::slowburn_binary().string()});
  if (!nobody_reads || nobody_reads->wait_for(10s) != 0)
    GTEST_SKIP() << "uid 65534 cannot read " << testing::slowburn_binary() << " (a directory above it is not o+x)";
  Ran ran = run_slowburn(
      {"check", "--json"}, 60s,
      {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"});
  EXPECT_EQ(ran.status, kExitCheckFailed) << ran.output;
  auto rows = by_check(ran.output);
  ASSERT_GE(rows.size(), 25u) << ran.output;
  expect_contract(rows);
  expect_row(rows, "capabilities", false, true);
  EXPECT_NE(rows["capabilities"].at("detail").get<std::string>().find("CapEff 0000000000000000"), std::string::npos)
      << rows["capabilities"];
  EXPECT_NE(rows["capabilities"].at("fix").get<std::string>().find("setcap cap_bpf,cap_perfmon"), std::string::npos);
  for (const char* check : {"bpf.ringbuf", "bpf.uprobe"}) {
    expect_row(rows, check, false, true);
    EXPECT_NE(rows[check].at("detail").get<std::string>().find("not allowed"), std::string::npos) << rows[check];
    EXPECT_NE(rows[check].at("fix").get<std::string>().find("run as root"), std::string::npos) << rows[check];
  }
  // tracefs is root's (0700): it cannot be listed, and the fix says so.
  expect_row(rows, "tracefs", false, true);
  EXPECT_NE(rows["tracefs"].at("fix").get<std::string>().find("run as root"), std::string::npos) << rows["tracefs"];
  // What does not need a privilege still reads.
  expect_row(rows, "btf", true, true);
  expect_row(rows, "perf_event_paranoid", false, false);
}

TEST(CheckCli, PidOfAStandinRankAndOfAProcessThatIsNotARank) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  auto rank = Subprocess::spawn(
      {testing::target_path("standin_rank").string(), (dir / "go").string(), "0", "0"},
      {"/dev/null", {"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1", "OMPI_MCA_ess_base_jobid=standin"}});
  ASSERT_TRUE(rank.ok());
  auto sleeper = Subprocess::spawn({"sleep", "30"});
  ASSERT_TRUE(sleeper.ok());
  // Its libmpi is mapped once the dynamic loader is done: it then waits for the go file.
  ASSERT_TRUE(testing::wait_until(
      [&] {
        return testing::read_text(fmt::format("/proc/{}/maps", rank->pid())).find("libmpi.so.99") != std::string::npos;
      },
      10s));
  Ran ran = run_slowburn(
      {"check", "--json", "--pid", std::to_string(rank->pid()), "--pid", std::to_string(sleeper->pid())}, 60s);
  testing::touch(dir / "go");
  EXPECT_EQ(ran.status, 0) << ran.output;  // the probe rows are not required
  auto rows = by_check(ran.output);
  std::string rank_row = fmt::format("probes.pid{}", rank->pid());
  std::string sleeper_row = fmt::format("probes.pid{}", sleeper->pid());
  expect_row(rows, rank_row, true, false);
  std::string detail = rows[rank_row].at("detail");
  EXPECT_NE(detail.find("rank 0"), std::string::npos) << detail;
  EXPECT_NE(detail.find("libmpi.so.99"), std::string::npos) << detail;
  EXPECT_NE(detail.find("mpi.allreduce"), std::string::npos) << detail;
  expect_row(rows, sleeper_row, false, false);
  EXPECT_NE(rows[sleeper_row].at("detail").get<std::string>().find("is not a rank"), std::string::npos);
  EXPECT_FALSE(rows.contains("probes"));  // only the named processes
}

}  // namespace
}  // namespace slowburn::check_cli_test
