#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "support/raw_record.h"
#include "tracefs/format.h"

namespace slowburn::tracefs_format_test {
namespace {

TEST(TracefsFormat, ParsesThisMachinesConsoleFormat) {
  auto format = testing::load_format("console.v6.18.format");
  EXPECT_EQ(format.name, "console");
  EXPECT_EQ(format.id, 411u);
  const FormatField* msg = format.field("msg");
  ASSERT_NE(msg, nullptr);
  EXPECT_TRUE(msg->data_loc);
  EXPECT_EQ(msg->offset, 8u);
  EXPECT_EQ(msg->size, 4u);
  EXPECT_EQ(format.field("common_pid")->offset, 4u);
  EXPECT_TRUE(format.field("common_pid")->is_signed);
}

TEST(TracefsFormat, ArraysAndTypesOfAHandWrittenFormat) {
  auto format = testing::load_format("aer_event.v6.15.format");
  const FormatField* tlp = format.field("tlp_header");
  ASSERT_NE(tlp, nullptr);
  EXPECT_EQ(tlp->array_length, 14u);
  EXPECT_EQ(tlp->type, "u32");
  EXPECT_EQ(tlp->size, 56u);
  EXPECT_EQ(format.field("no_such_field"), nullptr);
}

TEST(TracefsFormat, MalformedFieldLineIsAnErrorNamingTheLine) {
  std::istringstream in("name: x\nformat:\n\tfield:u32 status;\toffset:abc;\tsize:4;\n");
  auto format = parse_format(in);
  ASSERT_FALSE(format.ok());
  EXPECT_NE(format.error().message.find("format line 3"), std::string::npos);
  std::istringstream empty("");
  EXPECT_FALSE(parse_format(empty).ok());
}

TEST(RecordView, ReadsFieldsStringsAndArraysWithinBoundsOfAHandWrittenFormat) {
  auto format = testing::load_format("aer_event.v4.18.format");
  testing::RawRecord raw(format, 64);
  raw.set("status", 0x41);
  raw.set("severity", 2);
  raw.set("tlp_header_valid", 1);
  raw.set_u32_array("tlp_header", {1, 2, 3, 4});
  raw.set_string("dev_name", "0000:3b:00.0");
  RecordView view(format, raw.bytes());
  EXPECT_EQ(view.unsigned_value("status"), 0x41u);
  EXPECT_EQ(view.string("dev_name"), "0000:3b:00.0");
  EXPECT_EQ(view.u32_array("tlp_header"), (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_FALSE(view.unsigned_value("bus_type").has_value());
  // A record cut short reads as absent, never past its end.
  RecordView cut(format, std::span(raw.bytes()).first(14));
  EXPECT_FALSE(cut.unsigned_value("severity").has_value());
  EXPECT_FALSE(cut.string("dev_name").has_value());
}

TEST(RecordView, SignedValuesAndRelLoc) {
  std::istringstream in(
      "name: t\nformat:\n\tfield:int event;\toffset:8;\tsize:4;\tsigned:1;\n"
      "\tfield:__rel_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n");
  auto format = parse_format(in);
  ASSERT_TRUE(format.ok());
  std::vector<std::byte> bytes(32);
  int32_t event = -3;
  std::memcpy(bytes.data() + 8, &event, 4);
  // __rel_loc: offset counted from the end of the field (12 + 4 = 16).
  uint32_t loc = (3u << 16) | 4u;
  std::memcpy(bytes.data() + 12, &loc, 4);
  std::memcpy(bytes.data() + 20, "ab", 3);
  RecordView view(*format, bytes);
  EXPECT_EQ(view.signed_value("event"), -3);
  EXPECT_EQ(view.string("name"), "ab");
}

// Found by tracefs_fuzz: a zero-sized char field read from an empty record
// passed a null pointer to strnlen. It reads as an empty string.
TEST(RecordView, ZeroSizedFieldOfAnEmptyRecordIsAnEmptyString) {
  std::istringstream in("name: x\nformat:\n\tfield:char tag[0];\toffset:0;\tsize:0;\tsigned:0;\n");
  auto format = parse_format(in);
  ASSERT_TRUE(format.ok()) << format.error().message;
  RecordView view(*format, {});
  EXPECT_EQ(view.string("tag"), std::optional<std::string>(""));
  EXPECT_EQ(view.unsigned_value("tag"), std::nullopt);
}

}  // namespace
}  // namespace slowburn::tracefs_format_test
