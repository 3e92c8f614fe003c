#include "pcie/aer.h"

#include <gtest/gtest.h>

#include <sstream>

#include "support/raw_record.h"

namespace slowburn::aer_test {
namespace {

using testing::load_format;
using testing::RawRecord;

TEST(AerBits, DecodedBySeverityFromTables) {
  EXPECT_EQ(aer_status_bits(AerSeverity::correctable, 0x41), (std::vector<std::string>{"RxErr", "BadTLP"}));
  EXPECT_EQ(aer_status_bits(AerSeverity::fatal, (1u << 5) | (1u << 18)), (std::vector<std::string>{"SDES", "MalfTLP"}));
  // The same bit means different things by severity; unnamed bits say so.
  EXPECT_EQ(aer_status_bits(AerSeverity::nonfatal, 1u << 12), (std::vector<std::string>{"TLP"}));
  EXPECT_EQ(aer_status_bits(AerSeverity::correctable, 1u << 12), (std::vector<std::string>{"Timeout"}));
  EXPECT_EQ(aer_status_bits(AerSeverity::correctable, 1u << 3), (std::vector<std::string>{"bit 3"}));
}

// One record per kernel layout, decoded through that layout's format.
TEST(AerRecordFromHandWrittenFormats, EveryLayout) {
  struct Layout {
    const char* fixture;
    size_t tlp_words;  // 0: no TLP header in this layout
    bool bus_type;
  };
  // v4.18 and v6.1 are copies of real kernels' files (Debian's 6.12 and 6.1,
  // by make test-kernels): 6.1 marks the __data_loc field signed.
  for (Layout layout : {Layout{"aer_event.v4.4.format", 0, false}, Layout{"aer_event.v4.18.format", 4, false},
                        Layout{"aer_event.v6.1.format", 4, false}, Layout{"aer_event.v6.15.format", 14, false},
                        Layout{"aer_event.v7.0.format", 14, true}}) {
    SCOPED_TRACE(layout.fixture);
    auto format = load_format(layout.fixture);
    RawRecord raw(format, 256);
    raw.set_string("dev_name", "0000:3b:00.0");
    raw.set("status", (1u << 14) | (1u << 20));
    raw.set("severity", 0);
    std::vector<uint32_t> header;
    for (uint32_t i = 0; i < layout.tlp_words; ++i) header.push_back(0x40000000u + i);
    if (layout.tlp_words) {
      raw.set("tlp_header_valid", 1);
      raw.set_u32_array("tlp_header", header);
    }
    if (layout.bus_type) raw.set_string("bus_type", "CXL");
    auto event = decode_aer_record(format, raw.bytes());
    ASSERT_TRUE(event.ok()) << event.error().message;
    EXPECT_EQ(event->device, "0000:3b:00.0");
    EXPECT_EQ(event->severity, AerSeverity::nonfatal);
    EXPECT_EQ(event->bits, (std::vector<std::string>{"CmpltTO", "UnsupReq"}));
    EXPECT_EQ(event->tlp_header.has_value(), layout.tlp_words > 0);
    if (layout.tlp_words) {
      EXPECT_EQ(*event->tlp_header, header);
    }
    EXPECT_EQ(event->bus_type, layout.bus_type ? "CXL" : "PCIe");
  }
}

TEST(AerRecordFromHandWrittenFormats, InvalidHeaderIsNotReportedAndBadRecordsAreErrors) {
  auto format = load_format("aer_event.v4.18.format");
  RawRecord raw(format, 128);
  raw.set_string("dev_name", "0000:00:01.0");
  raw.set("status", 1);
  raw.set("severity", 2);
  raw.set("tlp_header_valid", 0);
  auto event = decode_aer_record(format, raw.bytes());
  ASSERT_TRUE(event.ok());
  EXPECT_FALSE(event->tlp_header.has_value());
  raw.set("severity", 7);
  EXPECT_FALSE(decode_aer_record(format, raw.bytes()).ok());
  EXPECT_FALSE(decode_aer_record(format, std::span(raw.bytes()).first(10)).ok());
}

TEST(AerCounters, BothNameStylesAndUnnamedBits) {
  std::istringstream modern("RxErr 0\nBadTLP 3\nTOTAL_ERR_COR 3\n");
  auto a = parse_aer_counters(modern);
  EXPECT_EQ(a.by_name["BadTLP"], 3u);
  EXPECT_EQ(a.total, 3u);
  std::istringstream old("Receiver Error 5\nReplay Timer Timeout 2\nTOTAL_ERR_COR 7\n");
  auto b = parse_aer_counters(old);
  EXPECT_EQ(b.by_name["RxErr"], 5u);
  EXPECT_EQ(b.by_name["Timeout"], 2u);
  std::istringstream unnamed("dev_nonfatal_errs_bit[27] 2\nCmpltTO 1\ngarbage\nRxErr x\n");
  auto c = parse_aer_counters(unnamed);
  EXPECT_EQ(c.by_name["bit 27"], 2u);
  EXPECT_EQ(c.by_name["CmpltTO"], 1u);
  EXPECT_EQ(c.malformed_lines, (std::vector<std::string>{"garbage", "RxErr x"}));
}

TEST(AerCounterMonitor, DeltasBecomeEventsResetsRebaseline) {
  AerCounterMonitor monitor;
  auto reading = [](uint64_t bad_tlp, uint64_t rx) {
    std::map<AerSeverity, AerCounters> m;
    m[AerSeverity::correctable].by_name = {{"BadTLP", bad_tlp}, {"RxErr", rx}};
    return m;
  };
  EXPECT_TRUE(monitor.observe("0000:3b:00.0", reading(3, 0)).empty());  // baseline
  auto events = monitor.observe("0000:3b:00.0", reading(10, 0));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].bits, (std::vector<std::string>{"BadTLP"}));
  EXPECT_EQ(events[0].count, 7u);
  EXPECT_EQ(events[0].status, 1u << 6);
  EXPECT_EQ(events[0].source, "sysfs");
  EXPECT_TRUE(monitor.observe("0000:3b:00.0", reading(2, 0)).empty());  // reset: no negative event
  EXPECT_EQ(monitor.observe("0000:3b:00.0", reading(4, 1)).size(), 2u);
}

}  // namespace
}  // namespace slowburn::aer_test
