// nvidia:nvidia_dev_xid records decoded through a format written by hand from
// kernel-open/nvidia/nv-tracepoint.h (open-gpu-kernel-modules, 575.51.02+);
// no driver on this machine prints it. The record bytes are laid out here
// from the TRACE_EVENT rules, not from that format file, so a wrong offset in
// either one fails the test.
#include "nvidia/xid_record.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/raw_record.h"

namespace slowburn::xid_record_test {
namespace {

// __string(dev) at 8, __field(u32, error_code) at 12, __string(msg) at 16
// after the 8-byte common header; the strings follow at 20, each a
// __data_loc word of (length with its NUL << 16 | offset).
std::vector<std::byte> xid_record(const char* dev, uint32_t code, const char* msg) {
  size_t dev_len = std::strlen(dev) + 1, msg_len = std::strlen(msg) + 1;
  std::vector<std::byte> bytes(20 + dev_len + msg_len);
  auto put32 = [&](size_t at, uint32_t v) { std::memcpy(bytes.data() + at, &v, 4); };
  put32(8, static_cast<uint32_t>(dev_len << 16 | 20));
  put32(12, code);
  put32(16, static_cast<uint32_t>(msg_len << 16 | (20 + dev_len)));
  std::memcpy(bytes.data() + 20, dev, dev_len);
  std::memcpy(bytes.data() + 20 + dev_len, msg, msg_len);
  return bytes;
}

TEST(XidRecordFromHandWrittenV575Format, CodeDeviceProcessAndMessage) {
  auto format = testing::load_format("nvidia_dev_xid.v575.format");
  auto bytes = xid_record("0000:3b:00.0", 79, "pid=4242, name=python3, GPU has fallen off the bus.");
  auto xid = decode_xid_record(format, bytes);
  ASSERT_TRUE(xid.ok()) << xid.error().message;
  EXPECT_EQ(xid->code, 79);
  EXPECT_EQ(xid->pci, "0000:3b:00.0");
  EXPECT_EQ(xid->pid, 4242);
  EXPECT_EQ(xid->process, "python3");
  EXPECT_EQ(xid->message, "GPU has fallen off the bus.");
  EXPECT_FALSE(xid->nvswitch);
}

TEST(XidRecordFromHandWrittenV575Format, CausedByAndUnknownProcess) {
  auto format = testing::load_format("nvidia_dev_xid.v575.format");
  auto bytes = xid_record("0000:b8:00.0", 45,
                          "pid='<unknown>', name=<unknown>, Ch 00000010, errorString CTX SWITCH "
                          "TIMEOUT, caused by previous Xid 79");
  auto xid = decode_xid_record(format, bytes);
  ASSERT_TRUE(xid.ok()) << xid.error().message;
  EXPECT_EQ(xid->code, 45);
  EXPECT_EQ(xid->pci, "0000:b8:00.0");
  EXPECT_FALSE(xid->pid.has_value());
  EXPECT_FALSE(xid->process.has_value());
  EXPECT_EQ(xid->caused_by, 79);
}

TEST(XidRecordFromHandWrittenV575Format, ARecordOfAnotherLayoutIsAnError) {
  // The AER format has no dev / error_code: a record decoded through the wrong
  // format is an error, counted by the monitor, never a made-up Xid.
  auto aer = testing::load_format("aer_event.v4.18.format");
  auto bytes = xid_record("0000:3b:00.0", 79, "x");
  EXPECT_FALSE(decode_xid_record(aer, bytes).ok());
  // A record cut short of its fields.
  auto format = testing::load_format("nvidia_dev_xid.v575.format");
  bytes.resize(10);
  EXPECT_FALSE(decode_xid_record(format, bytes).ok());
}

}  // namespace
}  // namespace slowburn::xid_record_test
