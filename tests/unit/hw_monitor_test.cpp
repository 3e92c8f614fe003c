// The sysfs side of the hardware monitor on a copy of the fixture tree,
// changed between polls as the hardware would: links downtrain, recover and
// go down; AER counters grow; a device's files turn malformed or vanish.
#include "sources/hw_monitor.h"

#include <gtest/gtest.h>

#include <fstream>

#include "procfs/ranks.h"
#include "support/temp_dir.h"

namespace slowburn::hw_monitor_test {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(SLOWBURN_SOURCE_DIR) / "tests/fixtures";

class HwMonitorSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::copy(kFixtures / "sys", dir_.path() / "sys",
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    sys_ = dir_.path() / "sys";
    topology_ = std::make_shared<Topology>(Topology::read(sys_, kFixtures / "proc-nvidia"));
    topology_->assign_ranks(discover_ranks(kFixtures / "proc-nvidia"));
  }
  void write(const std::string& bdf, const std::string& file, const std::string& text) {
    std::ofstream(sys_ / "bus/pci/devices" / bdf / file) << text;
  }
  std::unique_ptr<HwMonitor> start() {
    HwMonitorOptions options;
    options.sysfs_root = sys_;
    options.proc_root = kFixtures / "proc-nvidia";
    options.kernel_sources = false;
    auto monitor = HwMonitor::start(options, topology_);
    EXPECT_TRUE(monitor.ok());
    return std::move(*monitor);
  }
  std::vector<DeviceEvent> poll(HwMonitor& m) {
    now_ += 2'000'000'000;
    return *m.poll(0, now_);
  }
  testing::TempDir dir_;
  std::filesystem::path sys_;
  std::shared_ptr<Topology> topology_;
  uint64_t now_ = 0;
};

std::vector<std::string> types(const std::vector<DeviceEvent>& events) {
  std::vector<std::string> out;
  for (const DeviceEvent& e : events) out.push_back(e.type + " " + e.device);
  return out;
}

TEST_F(HwMonitorSysfs, StatusesSayWhatRunsAndWhy) {
  auto monitor = start();
  std::map<std::string, ProbeStatus> by_name;
  for (const ProbeStatus& s : monitor->statuses()) by_name[s.probe] = s;
  EXPECT_EQ(by_name["pcie.link"].state, ProbeState::attached);
  EXPECT_EQ(by_name["pcie.aer.sysfs"].state, ProbeState::attached);
  EXPECT_EQ(by_name["pcie.aer"].state, ProbeState::unavailable);
  EXPECT_EQ(by_name["pcie.aer"].detail, "replaying a captured tree");
}

TEST_F(HwMonitorSysfs, ScriptedLinkChanges) {
  auto monitor = start();
  // First poll: what is already degraded, once per link (GPU 0's link, from
  // its lower end; the NIC's link is down). The VF's "Unknown" is not a link.
  auto first = poll(*monitor);
  EXPECT_EQ(types(first), (std::vector<std::string>{"link.downtrained 0000:03:00.0", "link.down 0000:06:00.0"}));
  EXPECT_NE(first[0].summary.find("link to 0000:02:00.0"), std::string::npos) << first[0].summary;
  EXPECT_TRUE(poll(*monitor).empty());  // nothing changed: nothing said
  // GPU 1's link narrows to x8: its ranks are named, root port included.
  write("0000:05:00.0", "current_link_width", "8\n");
  auto narrowed = poll(*monitor);
  ASSERT_EQ(narrowed.size(), 1u);
  EXPECT_EQ(narrowed[0].type, "link.downtrained");
  EXPECT_EQ(narrowed[0].role, "gpu");
  EXPECT_EQ(narrowed[0].ranks, (std::vector<int>{1}));
  EXPECT_NE(narrowed[0].summary.find("width x8 < x16"), std::string::npos) << narrowed[0].summary;
  // It comes back; the other one goes down.
  write("0000:05:00.0", "current_link_width", "16\n");
  write("0000:04:00.0", "current_link_speed", "Unknown\n");
  EXPECT_EQ(types(poll(*monitor)), (std::vector<std::string>{"link.down 0000:04:00.0", "link.recovered 0000:05:00.0"}));
}

TEST_F(HwMonitorSysfs, DowntrainedLinkAboveASwitchNamesEveryRankBelow) {
  auto monitor = start();
  poll(*monitor);
  // The link from the root port to the switch narrows: both ends say so.
  write("0000:00:01.0", "current_link_width", "4\n");
  write("0000:01:00.0", "current_link_width", "4\n");
  auto events = poll(*monitor);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].device, "0000:01:00.0");  // the switch's upstream port, below the link
  EXPECT_NE(events[0].summary.find("link to 0000:00:01.0"), std::string::npos) << events[0].summary;
  EXPECT_EQ(events[0].ranks, (std::vector<int>{0, 1}));  // GPU 0 (rank 0) and the NIC both ranks use
}

TEST_F(HwMonitorSysfs, AerCounterDeltas) {
  auto monitor = start();
  poll(*monitor);  // baseline
  write("0000:03:00.0", "aer_dev_correctable", "RxErr 0\nBadTLP 10\nBadDLLP 1\nTOTAL_ERR_COR 11\n");
  write("0000:04:00.0", "aer_dev_correctable", "Receiver Error 6\nReplay Timer Timeout 2\nTOTAL_ERR_COR 8\n");
  auto events = poll(*monitor);
  ASSERT_EQ(events.size(), 2u);
  const nlohmann::json& gpu = events[0].fields;
  EXPECT_EQ(events[0].device, "0000:03:00.0");
  EXPECT_EQ(gpu["bits"], nlohmann::json::array({"BadTLP"}));
  EXPECT_EQ(gpu["count"], 7u);
  EXPECT_EQ(events[0].ranks, (std::vector<int>{0}));
  EXPECT_EQ(events[1].fields["bits"], nlohmann::json::array({"RxErr"}));
}

TEST_F(HwMonitorSysfs, MalformedOrVanishingFilesDoNotStopIt) {
  auto monitor = start();
  poll(*monitor);
  write("0000:03:00.0", "current_link_speed", "garbage\n");
  write("0000:03:00.0", "aer_dev_correctable", "this is not a counter file\n");
  std::filesystem::remove(sys_ / "bus/pci/devices/0000:05:00.0/current_link_width");
  std::filesystem::remove_all(sys_ / "devices/pci0000:00/0000:00:03.0/0000:06:00.0");  // the NIC disappeared
  now_ += 2'000'000'000;
  auto damaged = monitor->poll(0, now_);
  ASSERT_TRUE(damaged.ok()) << "a bad file must not stop the session: " << damaged.error().message;
  for (const DeviceEvent& e : *damaged)
    EXPECT_NE(e.type, "link.downtrained") << "garbage is not a reading: " << e.summary;
  EXPECT_FALSE(monitor->link_table().empty());
  // It still sees what changes next: the root port's link to GPU 1's switch narrows.
  write("0000:04:00.0", "current_link_speed", "Unknown\n");
  EXPECT_EQ(types(poll(*monitor)), (std::vector<std::string>{"link.down 0000:04:00.0"}));
}

}  // namespace
}  // namespace slowburn::hw_monitor_test
