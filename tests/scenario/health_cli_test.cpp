// `slowburn health` as a user runs it, on a copy of the fixture tree
// (tests/fixtures/health): the JSON lines, a counter rewritten between the
// two readings, the exit codes. No root, no BPF; a few seconds.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "core/subprocess.h"
#include "support/test_support.h"

namespace slowburn::health_cli_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::json_lines;
using testing::Ran;
using testing::run_slowburn;
using testing::TempDir;

const fs::path kHealth = fs::path(SLOWBURN_SOURCE_DIR) / "tests/fixtures/health";

struct Tree {
  TempDir dir;
  Tree() {
    for (const char* tree : {"sys", "proc"})
      fs::copy(kHealth / tree, dir / tree, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  std::string sys() const { return (dir / "sys").string(); }
  std::string proc() const { return (dir / "proc").string(); }
};

// (check, device) -> the line.
std::map<std::pair<std::string, std::string>, nlohmann::json> by_row(const std::string& output) {
  std::map<std::pair<std::string, std::string>, nlohmann::json> rows;
  for (const nlohmann::json& line : json_lines(output, "health"))
    rows[{line.at("check").get<std::string>(), line.at("device").get<std::string>()}] = line;
  return rows;
}

TEST(HealthCli, JsonLinesAndACounterRisingDuringTheInterval) {
  Tree tree;
  TempDir out;
  auto health = Subprocess::spawn({testing::slowburn_binary().string(), "health", "--json", "--sysfs-root", tree.sys(),
                                   "--procfs-root", tree.proc(), "--kmsg", (kHealth / "kmsg").string(), "-i", "2"},
                                  {(out / "out").string(), {}});
  ASSERT_TRUE(health.ok());
  // The first reading is done once it sleeps through the interval (nanosleep 35, clock_nanosleep 230 on
  // x86-64): the rewrite lands between the two readings however slow this machine is today.
  auto asleep = [&] {
    std::istringstream syscall(testing::read_text("/proc/" + std::to_string(health->pid()) + "/syscall"));
    long number = -1;
    syscall >> number;
    return number == 35 || number == 230;
  };
  ASSERT_TRUE(testing::wait_until(asleep, 10s));
  ASSERT_TRUE(testing::replace_text(tree.dir / "sys/devices/system/edac/mc/mc0/ue_count", "2\n"));
  auto status = health->wait_for(30s);
  ASSERT_TRUE(status.has_value());
  std::string output = testing::read_text(out / "out");
  EXPECT_EQ(*status, 4) << output;  // a check failed

  std::vector<nlohmann::json> lines = json_lines(output);
  ASSERT_GE(lines.size(), 30u) << output;
  EXPECT_EQ(testing::schema_errors(output, "health"), "");
  for (const nlohmann::json& line : lines) {
    EXPECT_EQ(line.at("kind"), "health") << line;
    for (const char* key : {"check", "state", "value", "threshold", "device", "ranks", "detail", "ts", "host"})
      EXPECT_TRUE(line.contains(key)) << key << " in " << line;
    std::string state = line.at("state");
    EXPECT_TRUE(state == "ok" || state == "warn" || state == "fail" || state == "unavailable") << line;
    EXPECT_TRUE(line.at("ranks").is_array());
    if (state == "unavailable") {
      EXPECT_FALSE(line.at("detail").get<std::string>().empty()) << line;
    }
  }
  auto rows = by_row(output);
  const nlohmann::json& ue = rows[{"memory.edac_ue", "mc0"}];
  EXPECT_EQ(ue.value("state", ""), "fail") << ue;
  EXPECT_EQ(ue.value("value", -1), 2);
  EXPECT_NE(ue.value("detail", "").find("+2 in 2."), std::string::npos) << ue;
  EXPECT_EQ(ue.at("ranks"), (nlohmann::json::array({0, 1})));
  const nlohmann::json& xid = rows[{"gpu.xid_ecc", "0000:03:00.0"}];
  EXPECT_EQ(xid.value("state", ""), "fail") << xid;
  EXPECT_EQ(xid.at("ranks"), (nlohmann::json::array({0})));
  const nlohmann::json& link = rows[{"pcie.link", "0000:03:00.0"}];
  EXPECT_EQ(link.value("value", ""), "x16 16 GT/s");
  EXPECT_EQ(link.value("threshold", ""), "x16 32 GT/s");
  EXPECT_EQ((rows[{"clock.sync", ""}].value("state", "")), "unavailable");
}

TEST(HealthCli, WarnAloneExitsZeroAndTextHasTheSummary) {
  Tree tree;
  // Without --kmsg the replay has no kernel log: no Xid fails. GPU 0's
  // uncorrectable AER history is cleared (it fails, by the one rule); the
  // rest warns at most.
  std::ofstream(fs::path(tree.sys()) / "devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0" /
                "aer_dev_nonfatal")
      << "CmpltTO 0\nTOTAL_ERR_NONFATAL 0\n";
  Ran ran = run_slowburn({"health", "--sysfs-root", tree.sys(), "--procfs-root", tree.proc(), "-i", "0"}, 30s);
  EXPECT_EQ(ran.status, 0) << ran.output;
  EXPECT_NE(ran.output.find("CHECK "), std::string::npos);
  EXPECT_NE(ran.output.find(" warn "), std::string::npos);
  EXPECT_EQ(ran.output.find(" fail "), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("pass --kmsg FILE"), std::string::npos);
  EXPECT_NE(ran.output.find(" checks: "), std::string::npos);
}

TEST(HealthCli, ErrorsAreOneLineAndExitOne) {
  Ran root = run_slowburn({"health", "--sysfs-root", "/nonexistent/sys", "-i", "0"}, 30s);
  EXPECT_EQ(root.status, 1);
  EXPECT_EQ(root.output,
            "slowburn: --sysfs-root: /nonexistent/sys does not exist (this machine's trees are /sys and /proc; or give "
            "the directory a captured /sys or /proc was saved to) (see slowburn health --help)\n");
  // The root of this machine is not its sysfs: following a wrong hint must not read as a node with no devices.
  Ran slash = run_slowburn({"health", "--sysfs-root", "/", "-i", "0"}, 30s);
  EXPECT_EQ(slash.status, 1) << slash.output;
  EXPECT_NE(slash.output.find("--sysfs-root / has no bus/pci/devices: not a sysfs tree"), std::string::npos)
      << slash.output;
  Tree tree;
  Ran log = run_slowburn(
      {"health", "--sysfs-root", tree.sys(), "--procfs-root", tree.proc(), "--kmsg", "/nonexistent/kmsg", "-i", "0"},
      30s);
  EXPECT_EQ(log.status, 1);
  EXPECT_EQ(log.output,
            "slowburn: --kmsg: /nonexistent/kmsg does not exist: give a captured kernel log (e.g. dmesg > kmsg.txt) "
            "(see slowburn health --help)\n");
}

}  // namespace
}  // namespace slowburn::health_cli_test
