// The call-pair program on real uprobes of this kernel, attached to
// tests/targets/call_counter: exact counts in records and histograms.
#include <gtest/gtest.h>

#include <map>

#include "core/clock.h"
#include "core/subprocess.h"
#include "events/decoder.h"
#include "loader/callpair_program.h"
#include "loader/ring_buffer.h"
#include "loader/uprobe_multi.h"
#include "probes/cookie.h"
#include "support/test_support.h"
#include "symbols/elf_symbols.h"

namespace slowburn::callpair_test {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

constexpr uint16_t kProbeA = 1001, kProbeB = 1002, kProbeC = 1003;

struct Target {
  TempDir dir;
  std::optional<Subprocess> process;
  std::map<std::string, uint64_t> offsets;

  void start(long count_a, long count_b, long count_c, long sleep_us) {
    auto path = testing::target_path("call_counter");
    auto symbols = ElfSymbols::open(path);
    ASSERT_TRUE(symbols.ok()) << symbols.error().message;
    for (const char* name : {"sb_target_a", "sb_target_b", "sb_target_c"}) {
      auto found = symbols->lookup(name);
      ASSERT_EQ(found.size(), 1u) << name;
      offsets[name] = found[0].file_offset;
    }
    auto child = Subprocess::spawn({path.string(), (dir / "go").string(), std::to_string(count_a),
                                    std::to_string(count_b), std::to_string(count_c), std::to_string(sleep_us)});
    ASSERT_TRUE(child.ok()) << child.error().message;
    process.emplace(std::move(*child));
  }
  pid_t pid() const { return process->pid(); }
  std::string path() const { return testing::target_path("call_counter").string(); }
  void go() { testing::touch(dir / "go"); }
};

Result<void> attach_one(CallpairProgram& program, Target& target, const char* symbol, int32_t pid, uint64_t cookie) {
  UprobeSite site{target.offsets[symbol], cookie};
  return program.attach(target.path(), pid, std::span(&site, 1));
}

// Reads records until the target exits, then whatever is left.
std::vector<CallEvent> collect_until_exit(CallpairProgram& program, Target& target, EventDecoder& decoder) {
  std::vector<CallEvent> calls;
  auto reader = RingBufferReader::open(program.events_fd(), [&](std::span<const std::byte> record) {
    if (auto call = decoder.decode_call(record)) calls.push_back(*call);
  });
  EXPECT_TRUE(reader.ok());
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!target.process->poll() && std::chrono::steady_clock::now() < deadline) (void)(*reader)->poll(50);
  EXPECT_TRUE(target.process->poll().has_value()) << "target did not finish";
  (void)(*reader)->drain();
  return calls;
}

std::map<uint32_t, std::vector<CallEvent>> by_probe(const std::vector<CallEvent>& calls) {
  std::map<uint32_t, std::vector<CallEvent>> out;
  for (const CallEvent& c : calls) out[c.probe_id].push_back(c);
  return out;
}

// Both ways of attaching: multi-uprobe links (this kernel) and the
// perf-event links older kernels fall back to.
class CallpairModes : public ::testing::TestWithParam<AttachMode> {};

TEST_P(CallpairModes, OneProgramByCookieOnSeveralFunctionsExactCounts) {
  SKIP_UNLESS_ROOT();
  if (GetParam() == AttachMode::multi_link && !kernel_has_uprobe_multi())
    GTEST_SKIP() << "kernel lacks multi-uprobe links with PID filtering (Linux 6.10+)";
  Target target;
  ASSERT_NO_FATAL_FAILURE(target.start(20, 30, 40, 2000));
  CallpairConfig config;
  config.attach_mode = GetParam();
  auto program = CallpairProgram::load(config);
  ASSERT_TRUE(program.ok()) << program.error().message;
  UprobeSite sites[] = {
      {target.offsets["sb_target_a"], make_cookie(CookieFields{.probe_id = kProbeA, .size_arg = 1, .aux_arg = 0})},
      {target.offsets["sb_target_b"], make_cookie(CookieFields{.probe_id = kProbeB, .size_arg = 2, .aux_arg = 0})},
      {target.offsets["sb_target_c"], make_cookie(CookieFields{.probe_id = kProbeC, .size_arg = 0, .aux_arg = 0})}};
  auto attached = (*program)->attach(target.path(), target.pid(), sites);
  ASSERT_TRUE(attached.ok()) << attached.error().message;
  // One link per (file, process, direction) with multi-uprobes, one per uprobe otherwise.
  EXPECT_EQ((*program)->link_count(), GetParam() == AttachMode::multi_link ? 2u : 6u);
  uint64_t before_ns = monotonic_ns();
  target.go();
  EventDecoder decoder;
  auto calls = by_probe(collect_until_exit(**program, target, decoder));
  uint64_t after_ns = monotonic_ns();

  ASSERT_EQ(calls[kProbeA].size(), 20u);
  ASSERT_EQ(calls[kProbeB].size(), 30u);
  ASSERT_EQ(calls[kProbeC].size(), 40u);
  for (const auto& [probe, list] : calls) {
    for (size_t i = 0; i < list.size(); ++i) {
      EXPECT_EQ(list[i].seq, i + 1) << "probe " << probe;  // per (thread, probe), from 1, no gaps
      EXPECT_EQ(list[i].pid, static_cast<uint32_t>(target.pid()));
      EXPECT_LE(list[i].entry_ns, list[i].exit_ns);
      // Timestamps on the kernel's clock, inside the span the test itself
      // measured: the same clock, and the same call's entry and exit.
      EXPECT_GE(list[i].entry_ns, before_ns);
      EXPECT_LE(list[i].exit_ns, after_ns);
    }
  }
  // The injected 2 ms sleep bounds sb_target_a from below.
  for (const CallEvent& c : calls[kProbeA]) {
    EXPECT_GE(c.duration_ns(), 2'000'000u);
    EXPECT_EQ(c.size_arg, 2000u);  // the declared size argument (parameter 1 here)
  }
  for (size_t i = 0; i < calls[kProbeB].size(); ++i) EXPECT_EQ(calls[kProbeB][i].size_arg, (i + 1) * 64);

  // The in-kernel histograms agree with the records, per (process, probe).
  std::map<uint32_t, uint64_t> hist_counts;
  for (const KernelHistogram& h : (*program)->histograms("usecs")) {
    EXPECT_EQ(h.tgid, static_cast<uint32_t>(target.pid()));
    hist_counts[h.probe_id] = h.hist.count();
    if (h.probe_id == kProbeA) {
      // 2 ms in usecs: slot 10 (1024-2047) or above, never below.
      for (size_t slot = 0; slot < 10; ++slot) EXPECT_EQ(h.hist.slots()[slot], 0u) << slot;
    }
  }
  EXPECT_EQ(hist_counts[kProbeA], 20u);
  EXPECT_EQ(hist_counts[kProbeB], 30u);
  EXPECT_EQ(hist_counts[kProbeC], 40u);
  CallpairCounters counters = (*program)->counters();
  EXPECT_EQ(counters.ringbuf_drops, 0u);
  EXPECT_EQ(counters.orphan_returns, 0u);
  EXPECT_EQ(decoder.stats().rejected(), 0u);
}

INSTANTIATE_TEST_SUITE_P(AttachModes, CallpairModes, ::testing::Values(AttachMode::multi_link, AttachMode::perf_link),
                         [](const auto& info) { return info.param == AttachMode::multi_link ? "multi" : "perf"; });

TEST(CallpairBpf, MinDurationFiltersRecordsButHistogramsCountEverything) {
  SKIP_UNLESS_ROOT();
  Target target;
  ASSERT_NO_FATAL_FAILURE(target.start(5, 0, 50, 2000));
  CallpairConfig config;
  config.min_duration_ns = 1'000'000;
  auto program = CallpairProgram::load(config);
  ASSERT_TRUE(program.ok());
  ASSERT_TRUE(attach_one(**program, target, "sb_target_a", target.pid(),
                         make_cookie(CookieFields{.probe_id = kProbeA, .size_arg = 0, .aux_arg = 0}))
                  .ok());
  ASSERT_TRUE(attach_one(**program, target, "sb_target_c", target.pid(),
                         make_cookie(CookieFields{.probe_id = kProbeC, .size_arg = 0, .aux_arg = 0}))
                  .ok());
  target.go();
  EventDecoder decoder;
  auto calls = by_probe(collect_until_exit(**program, target, decoder));
  EXPECT_EQ(calls[kProbeA].size(), 5u);
  EXPECT_EQ(calls[kProbeC].size(), 0u);
  std::map<uint32_t, uint64_t> hist_counts;
  for (const KernelHistogram& h : (*program)->histograms("usecs")) hist_counts[h.probe_id] = h.hist.count();
  EXPECT_EQ(hist_counts[kProbeC], 50u);
}

TEST(CallpairBpf, PidFilterInRodataIgnoresOtherProcesses) {
  SKIP_UNLESS_ROOT();
  Target target;
  ASSERT_NO_FATAL_FAILURE(target.start(0, 0, 100, 0));
  CallpairConfig config;
  config.target_tgid = static_cast<uint32_t>(getpid());  // not the target
  auto program = CallpairProgram::load(config);
  ASSERT_TRUE(program.ok());
  // Attached for every process: only the rodata filter stands in the way.
  ASSERT_TRUE(attach_one(**program, target, "sb_target_c", -1,
                         make_cookie(CookieFields{.probe_id = kProbeC, .size_arg = 0, .aux_arg = 0}))
                  .ok());
  target.go();
  EventDecoder decoder;
  EXPECT_TRUE(collect_until_exit(**program, target, decoder).empty());
  EXPECT_TRUE((*program)->histograms("usecs").empty());
}

TEST(CallpairBpf, RingBufferOverflowIsCountedExactly) {
  SKIP_UNLESS_ROOT();
  Target target;
  ASSERT_NO_FATAL_FAILURE(target.start(0, 0, 10000, 0));
  CallpairConfig config;
  config.ringbuf_bytes = 4096;  // room for ~50 records: most of 10,000 must be dropped
  auto program = CallpairProgram::load(config);
  ASSERT_TRUE(program.ok()) << program.error().message;
  ASSERT_TRUE(attach_one(**program, target, "sb_target_c", target.pid(),
                         make_cookie(CookieFields{.probe_id = kProbeC, .size_arg = 0, .aux_arg = 0}))
                  .ok());
  target.go();
  ASSERT_TRUE(target.process->wait_for(30s).has_value());  // nobody consumes meanwhile
  std::vector<CallEvent> calls;
  EventDecoder decoder;
  auto reader = RingBufferReader::open((*program)->events_fd(), [&](std::span<const std::byte> record) {
    if (auto call = decoder.decode_call(record)) calls.push_back(*call);
  });
  ASSERT_TRUE(reader.ok());
  (void)(*reader)->drain();
  uint64_t drops = (*program)->counters().ringbuf_drops;
  EXPECT_GT(drops, 0u);
  EXPECT_EQ(calls.size() + drops, 10000u);  // nothing lost silently
}

TEST(CallpairBpf, InFlightCallsAreVisible) {
  SKIP_UNLESS_ROOT();
  Target target;
  ASSERT_NO_FATAL_FAILURE(target.start(1, 0, 0, 1'500'000));  // one 1.5 s call
  auto program = CallpairProgram::load({});
  ASSERT_TRUE(program.ok());
  ASSERT_TRUE(attach_one(**program, target, "sb_target_a", target.pid(),
                         make_cookie(CookieFields{.probe_id = kProbeA, .size_arg = 0, .aux_arg = 0}))
                  .ok());
  target.go();
  std::vector<InFlightCall> inside;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (inside.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    inside = (*program)->in_flight();
  }
  ASSERT_EQ(inside.size(), 1u);
  EXPECT_EQ(inside[0].tgid, static_cast<uint32_t>(target.pid()));
  EXPECT_EQ(inside[0].probe_id, kProbeA);
  ASSERT_TRUE(target.process->wait_for(10s).has_value());
  EXPECT_TRUE((*program)->in_flight().empty());
}

TEST(CallpairBpf, DestroyingTheProgramLeavesNothingLoaded) {
  SKIP_UNLESS_ROOT();
  Target target;
  ASSERT_NO_FATAL_FAILURE(target.start(0, 0, 1, 0));
  uint32_t entry_id = 0, exit_id = 0;
  {
    auto program = CallpairProgram::load({});
    ASSERT_TRUE(program.ok());
    ASSERT_TRUE(attach_one(**program, target, "sb_target_c", target.pid(),
                           make_cookie(CookieFields{.probe_id = kProbeC, .size_arg = 0, .aux_arg = 0}))
                    .ok());
    entry_id = (*program)->entry_program_id();
    exit_id = (*program)->exit_program_id();
    ASSERT_NE(entry_id, 0u);
  }
  // Freed after an RCU grace period: give the kernel a moment.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  auto loaded = [&] {
    auto ids = testing::bpf_program_ids_named("call_enter");
    auto more = testing::bpf_program_ids_named("call_exit");
    ids.insert(ids.end(), more.begin(), more.end());
    return std::find(ids.begin(), ids.end(), entry_id) != ids.end() ||
           std::find(ids.begin(), ids.end(), exit_id) != ids.end();
  };
  while (loaded() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(loaded());
  target.go();
}

}  // namespace
}  // namespace slowburn::callpair_test
