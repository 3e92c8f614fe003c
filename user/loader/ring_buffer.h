// RAII consumer of a BPF ring buffer: hands every record to a callback.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/error.h"

struct ring_buffer;

namespace slowburn {

class RingBufferReader {
 public:
  using Handler = std::function<void(std::span<const std::byte>)>;

  static Result<std::unique_ptr<RingBufferReader>> open(int map_fd, Handler handler);
  // Another ring buffer, polled together with the first.
  Result<void> add(int map_fd, Handler handler);
  ~RingBufferReader();
  RingBufferReader(const RingBufferReader&) = delete;
  RingBufferReader& operator=(const RingBufferReader&) = delete;

  // Waits up to timeout_ms for a wakeup, then consumes every record ready
  // (producers skip most wakeups: see wakeup_bytes); returns how many.
  // EINTR (a signal) is not an error.
  Result<int> poll(int timeout_ms);
  // Consumes whatever is ready, without waiting.
  Result<int> drain();

 private:
  RingBufferReader() = default;
  static int on_record(void* ctx, void* data, size_t size);

  std::vector<std::unique_ptr<Handler>> handlers_;  // stable addresses: libbpf keeps them as ctx
  ring_buffer* rb_ = nullptr;
};

}  // namespace slowburn
