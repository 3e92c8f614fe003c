// Raw ring-buffer records -> typed events. Never trusts the bytes: short
// records, unknown types and unknown versions are counted and skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "events/call_event.h"
#include "events/verbs_call.h"

namespace slowburn {

struct DecodeStats {
  uint64_t decoded = 0;
  uint64_t truncated = 0;  // shorter than its type's layout
  uint64_t unknown_type = 0;
  uint64_t unknown_version = 0;  // a producer newer (or older) than this decoder

  uint64_t rejected() const { return truncated + unknown_type + unknown_version; }
};

// A kernel log line that passed the in-kernel Xid filter.
struct KmsgLine {
  uint64_t ts_ns = 0;
  std::string text;
};

// A raw tracepoint record and which tracepoint it came from (enum sb_tp_source).
struct TpRecord {
  uint64_t ts_ns = 0;
  uint32_t source = 0;
  std::vector<std::byte> data;
};

// A traced process exited, was sent a signal that stops or ends it, or was
// chosen by the OOM killer (lifecycle.bpf.c).
struct LifecycleRecord {
  enum class Kind { exit, signal, oom };
  Kind kind = Kind::exit;
  uint64_t ts_ns = 0;
  int32_t pid = 0;
  int signal = 0;           // signal: the signal
  int exit_code = 0;        // exit: task->exit_code (status << 8, or the signal | 0x80 with a core)
  int group_exit_code = 0;  // exit: the thread group's, when a group exit ended it
  uint32_t sender_pid = 0;  // signal: who sent it (its process)
  std::string sender_comm;
};

class EventDecoder {
 public:
  std::optional<CallEvent> decode_call(std::span<const std::byte> record);
  std::optional<KmsgLine> decode_kmsg(std::span<const std::byte> record);
  std::optional<TpRecord> decode_tp_record(std::span<const std::byte> record);
  std::optional<VerbsCall> decode_verbs(std::span<const std::byte> record);
  std::optional<LifecycleRecord> decode_lifecycle(std::span<const std::byte> record);
  const DecodeStats& stats() const { return stats_; }

 private:
  // The header, checked against the expected type, version and size.
  bool check(std::span<const std::byte> record, uint16_t type, uint16_t version, size_t size);
  DecodeStats stats_;
};

}  // namespace slowburn
