// Stage 4 of a session (consume): the call-pair program's ring buffer,
// decoded into CallEvents for whoever judges them. Other ring buffers (the
// RDMA programs') can be polled with it.
#pragma once

#include <functional>
#include <memory>
#include <span>

#include "core/error.h"
#include "events/call_event.h"
#include "events/decoder.h"
#include "loader/ring_buffer.h"

namespace slowburn {

// Proof that every record produced so far has been consumed: what must come
// before a rank is retired (its last calls still count as a rank's).
class Drained {
 public:
  // A replay (analyze) retires ranks after its last recorded call: nothing is left to consume.
  static Drained replayed() { return Drained(); }

 private:
  friend class CallStream;
  Drained() = default;
};

class CallStream {
 public:
  using OnCall = std::function<void(const CallEvent&)>;

  static Result<std::unique_ptr<CallStream>> open(int events_fd, OnCall on_call);
  // Another ring buffer polled with this one (its records go to `handler`).
  Result<void> add(int map_fd, RingBufferReader::Handler handler);

  // Waits up to timeout_ms, then consumes what is ready.
  Result<void> poll(int timeout_ms);
  // Consumes everything ready now.
  Result<Drained> drain();

  const DecodeStats& decode_stats() const { return decoder_.stats(); }

 private:
  CallStream() = default;
  std::unique_ptr<RingBufferReader> reader_;
  EventDecoder decoder_;
  OnCall on_call_;
};

}  // namespace slowburn
