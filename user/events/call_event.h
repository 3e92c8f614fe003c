// Typed events decoded from ring-buffer records.
#pragma once

#include <cstdint>
#include <optional>

#include "events/communicator.h"

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
  uint64_t comm = 0;                  // the communicator handle (process-local), 0: none
  std::optional<uint64_t> comm_seq;   // a sequence number the library keeps (gloo's tag)
  std::optional<uint64_t> out_value;  // what the out pointer held at return (a created handle)
  std::optional<uint64_t> key_hash;   // the key hashed at entry (ncclUniqueId)
  bool comm_unreadable = false;       // the communicator pointer could not be read
  int64_t ret = 0;                    // the function's return value
  // The calling thread during the call: on a CPU, and runnable but waiting
  // for one (a run queue, or its cgroup's quota). Unset where not read.
  std::optional<uint64_t> oncpu_ns;
  std::optional<uint64_t> runq_ns;

  uint64_t duration_ns() const { return exit_ns - entry_ns; }
};

// A call that has entered and not yet returned (read from the kernel's
// per-thread entry state): what a hung collective looks like.
struct InFlightCall {
  uint32_t tgid = 0;
  uint32_t tid = 0;
  uint32_t probe_id = 0;
  uint64_t entry_ns = 0;
  uint64_t comm = 0;             // the communicator handle it entered with
  CommunicatorRef communicator;  // which communicator that is (the registry's), null: not told apart
};

}  // namespace slowburn
