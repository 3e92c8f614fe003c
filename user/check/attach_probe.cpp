#include "check/attach_probe.h"

#include <fmt/format.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <set>
#include <span>

#include "events/decoder.h"
#include "loader/callpair_program.h"
#include "loader/ring_buffer.h"
#include "loader/tp_record_program.h"
#include "loader/uprobe_multi.h"
#include "probes/cookie.h"
#include "slowburn/hwevents.h"
#include "symbols/elf_symbols.h"

extern "C" __attribute__((noinline, noipa, used)) int slowburn_check_probe_target(int value) {
  asm volatile("" ::: "memory");  // a body of its own: never folded into its callers
  return value + 1;
}

namespace slowburn {

namespace {

using namespace std::chrono_literals;

// A probe id no catalog probe uses (the catalog counts up from 1).
constexpr uint16_t kCheckProbeId = 0xc4ec;
// The first argument of the Nth call: the cookie tells the program to record it.
constexpr int kFirstArgument = 4000;

const char* mode_name(AttachMode mode) {
  return mode == AttachMode::multi_link ? "one multi-uprobe link per direction" : "perf-event links";
}

// Polls until `done` or a second has passed: records are in the ring
// buffer once the probed call returns, the wait only covers a slow poll.
void read_back(RingBufferReader& reader, const std::function<bool()>& done) {
  auto deadline = std::chrono::steady_clock::now() + 1s;
  while (!done() && std::chrono::steady_clock::now() < deadline) (void)reader.poll(20);
  (void)reader.drain();
}

}  // namespace

AttachProbe probe_uprobe_attach(AttachMode mode, int calls) {
  AttachProbe probe;
  if (mode == AttachMode::multi_link && !kernel_has_uprobe_multi()) {
    probe.error = "this kernel has no multi-uprobe links with PID filtering (Linux 6.10+)";
    return probe;
  }
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    probe.error = "cannot resolve /proc/self/exe: " + ec.message();
    return probe;
  }
  auto symbols = ElfSymbols::open(exe);
  if (!symbols) {
    probe.error = symbols.error().message;
    return probe;
  }
  auto found = symbols->lookup("slowburn_check_probe_target");
  if (found.size() != 1) {
    probe.error = fmt::format("slowburn_check_probe_target not found in {} (a stripped binary?)", exe.string());
    return probe;
  }
  probe.ran = true;
  probe.how = fmt::format("uprobe+uretprobe at {}:slowburn_check_probe_target in pid {} ({}, bpf_cookie)", exe.string(),
                          getpid(), mode_name(mode));

  CallpairConfig config;
  config.target_tgid = static_cast<uint32_t>(getpid());
  config.attach_mode = mode;
  config.ringbuf_bytes = 256u << 10;
  config.wakeup_bytes = 0;  // wake the reader on every record
  config.max_thread_states = 64;
  auto program = CallpairProgram::load(config);
  if (!program) {
    probe.error = program.error().message;
    return probe;
  }
  probe.loaded = true;
  // size_arg = 1: the program records the first argument, read at the
  // call through what the cookie says: a record carrying it proves the
  // cookie reached the program.
  UprobeSite site{found[0].file_offset,
                  make_cookie(CookieFields{.probe_id = kCheckProbeId, .size_arg = 1, .aux_arg = 0})};
  if (auto attached = (*program)->attach(exe.string(), getpid(), std::span(&site, 1)); !attached) {
    probe.error = attached.error().message;
    return probe;
  }
  probe.attached = true;

  EventDecoder decoder;
  std::set<uint64_t> expected;
  auto reader = RingBufferReader::open((*program)->events_fd(), [&](std::span<const std::byte> bytes) {
    auto call = decoder.decode_call(bytes);
    if (!call) return;
    ++probe.records;
    if (call->probe_id == kCheckProbeId && expected.erase(call->size_arg)) ++probe.matched;
  });
  if (!reader) {
    probe.error = reader.error().message;
    return probe;
  }
  // Through a volatile pointer: every call is a real call.
  int (*volatile target)(int) = slowburn_check_probe_target;
  for (int i = 0; i < calls; ++i) {
    expected.insert(static_cast<uint64_t>(kFirstArgument + i));
    (void)target(kFirstArgument + i);
    ++probe.fired;
  }
  read_back(**reader, [&] { return probe.matched == probe.fired; });
  if (probe.records == 0)
    probe.error = fmt::format("attached, but none of {} calls came back through the ring buffer", probe.fired);
  else if (probe.matched != probe.fired)
    probe.error =
        fmt::format("{} of {} calls came back with the cookie's probe id and argument", probe.matched, probe.fired);
  return probe;
}

AttachProbe probe_tracepoint_attach() {
  AttachProbe probe;
  probe.ran = true;
  probe.how = fmt::format("tracepoint {}:{} (perf-event link, bpf_cookie, bpf_probe_read_kernel)",
                          kProbeTracepointSystem, kProbeTracepointEvent);
  auto program = TpRecordProgram::load();
  if (!program) {
    probe.error = program.error().message;
    return probe;
  }
  probe.loaded = true;
  if (auto attached = (*program)->attach(kProbeTracepointSystem, kProbeTracepointEvent, SB_TP_TEST); !attached) {
    probe.error = attached.error().message;
    return probe;
  }
  probe.attached = true;
  EventDecoder decoder;
  auto reader = RingBufferReader::open((*program)->events_fd(), [&](std::span<const std::byte> bytes) {
    auto record = decoder.decode_tp_record(bytes);
    if (!record) return;
    ++probe.records;
    if (record->source == SB_TP_TEST) ++probe.matched;
  });
  if (!reader) {
    probe.error = reader.error().message;
    return probe;
  }
  // This thread renamed to its own name: task_rename fires, nothing changes.
  char name[17] = {};
  if (prctl(PR_GET_NAME, name) != 0 || prctl(PR_SET_NAME, name) != 0) {
    probe.error = fmt::format("cannot rename this thread to fire {}:{}", kProbeTracepointSystem, kProbeTracepointEvent);
    return probe;
  }
  probe.fired = 1;
  read_back(**reader, [&] { return probe.matched >= probe.fired; });
  // Another process renaming a thread meanwhile fires it too: `matched` may exceed `fired`.
  if (probe.matched == 0)
    probe.error = "attached, but the tracepoint's record did not come back through the ring buffer";
  return probe;
}

}  // namespace slowburn
