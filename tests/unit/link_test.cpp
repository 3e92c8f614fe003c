#include "pcie/link.h"

#include <gtest/gtest.h>

#include "support/raw_record.h"

namespace slowburn::link_test {
namespace {

TEST(LinkSpeed, EveryKernelSpelling) {
  EXPECT_EQ(parse_link_speed("16.0 GT/s PCIe"), 16.0);
  EXPECT_EQ(parse_link_speed("2.5 GT/s PCIe\n"), 2.5);
  EXPECT_EQ(parse_link_speed("8 GT/s"), 8.0);  // before ~5.7
  EXPECT_EQ(parse_link_speed("64.0 GT/s PCIe"), 64.0);
  EXPECT_EQ(parse_link_speed("Unknown"), 0.0);
  EXPECT_EQ(parse_link_speed("Unknown speed"), 0.0);
  EXPECT_FALSE(parse_link_speed("fast").has_value());
  EXPECT_FALSE(parse_link_speed("").has_value());
}

TEST(Expectations, RulesAndPrecedence) {
  auto rule = parse_expectation_rule("10de:*=x16@32");
  ASSERT_TRUE(rule.ok());
  EXPECT_EQ(rule->selector, "10de:*");
  EXPECT_EQ(rule->expectation.width, 16u);
  EXPECT_EQ(rule->expectation.speed_gts, 32.0);
  EXPECT_EQ(parse_expectation_rule("0000:3b:00.0=x8")->expectation.speed_gts, std::nullopt);
  EXPECT_EQ(parse_expectation_rule("15b3:101b=@16GT/s")->expectation.speed_gts, 16.0);
  for (const char* bad : {"x16@32", "10de:*=", "10de:*=xx@", "10de:*=x0", "10de:*=@fast"})
    EXPECT_FALSE(parse_expectation_rule(bad).ok()) << bad;

  std::vector<ExpectationRule> rules = {*parse_expectation_rule("10de:*=x16@32"),
                                        *parse_expectation_rule("10de:2330=x8"),
                                        *parse_expectation_rule("0000:03:00.0=@16")};
  EXPECT_EQ(find_expectation(rules, "0000:03:00.0", 0x10de, 0x2330)->speed_gts, 16.0);  // BDF first
  EXPECT_EQ(find_expectation(rules, "0000:05:00.0", 0x10de, 0x2330)->width, 8u);        // then vendor:device
  EXPECT_EQ(find_expectation(rules, "0000:05:00.0", 0x10de, 0x2335)->width, 16u);       // then vendor:*
  EXPECT_FALSE(find_expectation(rules, "0000:05:00.0", 0x15b3, 0x101b).has_value());
}

LinkReading reading(double cur_speed, unsigned cur_width, double max_speed = 32, unsigned max_width = 16) {
  return {cur_speed, max_speed, cur_width, max_width};
}

TEST(LinkMonitor, DowntrainRecoverAndDownAgainstMax) {
  LinkMonitor monitor;
  EXPECT_TRUE(monitor.observe("a", 0x10de, 0x2330, reading(32, 16)).empty());  // healthy first reading: no news
  auto down_speed = monitor.observe("a", 0x10de, 0x2330, reading(16, 16));
  ASSERT_EQ(down_speed.size(), 1u);
  EXPECT_EQ(down_speed[0].type, "link.downtrained");
  EXPECT_EQ(down_speed[0].reason, "speed 16 GT/s < 32 GT/s");
  EXPECT_TRUE(monitor.observe("a", 0x10de, 0x2330, reading(16, 16)).empty());  // still: reported once
  auto narrower = monitor.observe("a", 0x10de, 0x2330, reading(16, 8));
  EXPECT_TRUE(narrower.empty());  // still downtrained, not a new state
  auto recovered = monitor.observe("a", 0x10de, 0x2330, reading(32, 16));
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_EQ(recovered[0].type, "link.recovered");
  auto gone = monitor.observe("a", 0x10de, 0x2330, reading(0, 0));
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].type, "link.down");
  EXPECT_EQ(monitor.status("a"), LinkStatus::down);
}

// Hot-unplug: the device's sysfs directory vanishes (pciehp powered the
// slot off). That is a link down, not a reading that says nothing; its
// return is a recovery, and files missing for a moment are still no news.
TEST(LinkMonitor, DeviceGoneFromSysfsAndBack) {
  LinkMonitor monitor;
  EXPECT_TRUE(monitor.observe("nic", 0x8086, 0x10d3, reading(2.5, 1, 2.5, 1)).empty());
  EXPECT_TRUE(monitor.observe("nic", 0x8086, 0x10d3, LinkReading{}).empty());  // files unreadable: keeps ok
  LinkReading vanished;
  vanished.present = false;
  auto gone = monitor.observe("nic", 0x8086, 0x10d3, vanished);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].type, "link.down");
  EXPECT_EQ(gone[0].reason, "device gone from sysfs (hot-unplugged, removed, or its slot powered off)");
  EXPECT_FALSE(gone[0].reading.present);
  EXPECT_TRUE(monitor.observe("nic", 0x8086, 0x10d3, vanished).empty());  // reported once
  auto back = monitor.observe("nic", 0x8086, 0x10d3, reading(2.5, 1, 2.5, 1));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].type, "link.recovered");
  EXPECT_EQ(back[0].reason, "back in sysfs (replugged or rescanned), link at expectation");
  // A plain link down and up afterwards says so, not "back in sysfs".
  monitor.observe("nic", 0x8086, 0x10d3, reading(0, 0, 2.5, 1));
  EXPECT_EQ(monitor.observe("nic", 0x8086, 0x10d3, reading(2.5, 1, 2.5, 1))[0].reason,
            "back to expectation after down");
  // Never seen present: no expectation, nothing to report.
  EXPECT_TRUE(monitor.observe("never", 0x8086, 0x10d3, vanished).empty());
}

TEST(LinkMonitor, AlreadyDegradedWhenFirstSeen) {
  LinkMonitor monitor;
  auto events = monitor.observe("gpu", 0x10de, 0x2330, reading(16, 16, 32, 16));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "link.downtrained");
}

TEST(LinkMonitor, ConfiguredExpectationOverridesMax) {
  // A reduced-lane cloud shape: x8 by design on an x16-capable slot.
  LinkMonitor monitor({*parse_expectation_rule("10de:*=x8@32")});
  EXPECT_TRUE(monitor.observe("gpu", 0x10de, 0x2330, reading(32, 8, 32, 16)).empty());
  EXPECT_EQ(monitor.observe("gpu", 0x10de, 0x2330, reading(32, 4, 32, 16)).size(), 1u);
}

TEST(LinkMonitor, FirstSeenBaselineWithoutMaxAttributes) {
  LinkMonitor monitor;
  LinkReading first{16.0, std::nullopt, 16u, std::nullopt};
  EXPECT_TRUE(monitor.observe("dev", 1, 2, first).empty());
  EXPECT_EQ(monitor.expectation("dev").width, 16u);
  LinkReading worse{8.0, std::nullopt, 16u, std::nullopt};
  EXPECT_EQ(monitor.observe("dev", 1, 2, worse).at(0).type, "link.downtrained");
  LinkReading none{};
  EXPECT_TRUE(monitor.observe("other", 1, 2, none).empty());  // no link files: unknown, silent
}

TEST(PcieLinkEventFromHandWrittenV7Formats, DecodesLinkAndHotplugRecords) {
  auto format = testing::load_format("pcie_link_event.v7.0.format");
  testing::RawRecord raw(format, 128);
  raw.set_string("port_name", "0000:00:01.0");
  raw.set("type", 4);
  raw.set("reason", 3);
  raw.set("cur_bus_speed", 0x17);
  raw.set("max_bus_speed", 0x18);
  raw.set("width", 8);
  raw.set("link_status", 0x2000 | 0x4000);
  auto t = decode_pcie_link_record(format, raw.bytes());
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->port, "0000:00:01.0");
  EXPECT_EQ(pcie_link_reason_name(t->reason), "BWCTRL_IRQ");
  EXPECT_EQ(t->current_speed_gts, 16.0);
  EXPECT_EQ(t->max_speed_gts, 32.0);
  EXPECT_EQ(t->width, 8u);
  EXPECT_EQ(t->status_bits, (std::vector<std::string>{"DLLLA", "LBMS"}));

  auto hp_format = testing::load_format("pci_hp_event.v7.0.format");
  testing::RawRecord hp(hp_format, 96);
  hp.set_string("port_name", "0000:00:03.0");
  hp.set_string("slot", "7");
  hp.set("event", 1);
  auto h = decode_pci_hp_record(hp_format, hp.bytes());
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->slot, "7");
  EXPECT_EQ(pci_hp_event_name(h->event), "LINK_DOWN");
}

}  // namespace
}  // namespace slowburn::link_test
