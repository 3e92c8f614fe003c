// Raw ring-buffer records -> typed events. Never trusts the bytes: short
// records, unknown types and unknown versions are counted and skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "events/call_event.h"

namespace slowburn {

struct DecodeStats {
  uint64_t decoded = 0;
  uint64_t truncated = 0;  // shorter than its type's layout
  uint64_t unknown_type = 0;
  uint64_t unknown_version = 0;  // a producer newer (or older) than this decoder

  uint64_t rejected() const { return truncated + unknown_type + unknown_version; }
};

class EventDecoder {
 public:
  std::optional<CallEvent> decode_call(std::span<const std::byte> record);
  const DecodeStats& stats() const { return stats_; }

 private:
  DecodeStats stats_;
};

}  // namespace slowburn
