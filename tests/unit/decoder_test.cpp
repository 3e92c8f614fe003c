#include "events/decoder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "slowburn/callpair.h"

namespace slowburn::decoder_test {
namespace {

std::vector<std::byte> raw(const sb_call_event& e, size_t size = sizeof(sb_call_event)) {
  std::vector<std::byte> bytes(size);
  std::memcpy(bytes.data(), &e, std::min(size, sizeof(e)));
  return bytes;
}

sb_call_event sample() {
  sb_call_event e{};
  e.hdr.type = SB_EVENT_CALL;
  e.hdr.version = SB_CALL_EVENT_VERSION;
  e.hdr.pid = 100;
  e.hdr.tid = 101;
  e.hdr.cpu = 1;
  e.hdr.ts_ns = 5000;
  e.probe_id = 7;
  e.seq = 3;
  e.entry_ns = 1000;
  e.exit_ns = 5000;
  e.size_arg = 4096;
  e.aux_arg = 7;
  return e;
}

TEST(EventDecoder, DecodesACallRecord) {
  EventDecoder d;
  auto call = d.decode_call(raw(sample()));
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->pid, 100u);
  EXPECT_EQ(call->tid, 101u);
  EXPECT_EQ(call->probe_id, 7u);
  EXPECT_EQ(call->seq, 3u);
  EXPECT_EQ(call->duration_ns(), 4000u);
  EXPECT_EQ(call->size_arg, 4096u);
  EXPECT_EQ(d.stats().decoded, 1u);
  EXPECT_EQ(d.stats().rejected(), 0u);
}

TEST(EventDecoder, CpuTimesAreKeptOnlyWhenTheKernelReadThem) {
  EventDecoder d;
  sb_call_event e = sample();
  e.oncpu_ns = 1000;
  e.runq_ns = 3000;
  auto without = d.decode_call(raw(e));
  ASSERT_TRUE(without.has_value());
  EXPECT_FALSE(without->oncpu_ns.has_value());
  EXPECT_FALSE(without->runq_ns.has_value());
  e.flags = SB_CALL_HAS_CPU;  // a kernel without CONFIG_SCHED_INFO: no run-queue wait
  auto oncpu_only = d.decode_call(raw(e));
  ASSERT_TRUE(oncpu_only.has_value());
  EXPECT_EQ(oncpu_only->oncpu_ns, 1000u);
  EXPECT_FALSE(oncpu_only->runq_ns.has_value());
  e.flags = SB_CALL_HAS_CPU | SB_CALL_HAS_RUNQ;
  auto both = d.decode_call(raw(e));
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->runq_ns, 3000u);
}

TEST(EventDecoder, UnknownVersionIsCountedNotMisread) {
  EventDecoder d;
  sb_call_event e = sample();
  e.hdr.version = SB_CALL_EVENT_VERSION + 1;
  EXPECT_FALSE(d.decode_call(raw(e)).has_value());
  EXPECT_EQ(d.stats().unknown_version, 1u);
  EXPECT_EQ(d.stats().decoded, 0u);
}

TEST(EventDecoder, UnknownTypeAndShortRecords) {
  EventDecoder d;
  sb_call_event e = sample();
  e.hdr.type = 99;
  EXPECT_FALSE(d.decode_call(raw(e)).has_value());
  EXPECT_FALSE(d.decode_call(raw(sample(), sizeof(sb_call_event) - 1)).has_value());
  EXPECT_FALSE(d.decode_call(raw(sample(), 3)).has_value());
  EXPECT_FALSE(d.decode_call({}).has_value());
  EXPECT_EQ(d.stats().unknown_type, 1u);
  EXPECT_EQ(d.stats().truncated, 3u);
  EXPECT_EQ(d.stats().rejected(), 4u);
}

TEST(EventDecoder, SurvivesArbitraryBytes) {
  EventDecoder d;
  std::vector<std::byte> junk(200);
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = std::byte(i * 37 + 11);
  for (size_t len = 0; len <= junk.size(); ++len) (void)d.decode_call(std::span(junk.data(), len));
  EXPECT_EQ(d.stats().decoded + d.stats().rejected(), junk.size() + 1);
}

}  // namespace
}  // namespace slowburn::decoder_test
