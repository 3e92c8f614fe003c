// Typed events decoded from ring-buffer records.
#pragma once

#include <cstdint>

namespace slowburn {

struct CallEvent {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t cpu = 0;
  uint32_t probe_id = 0;
  uint64_t seq = 0;  // per (thread, probe), from 1; a jump means lost calls
  uint64_t entry_ns = 0;
  uint64_t exit_ns = 0;
  uint64_t size_arg = 0;
  uint64_t aux_arg = 0;

  uint64_t duration_ns() const { return exit_ns - entry_ns; }
};

// A call that has entered and not yet returned (read from the kernel's
// per-thread entry state): what a hung collective looks like.
struct InFlightCall {
  uint32_t tgid = 0;
  uint32_t tid = 0;
  uint32_t probe_id = 0;
  uint64_t entry_ns = 0;
};

}  // namespace slowburn
