#include "loader/ring_buffer.h"

#include <bpf/libbpf.h>

#include <cerrno>
#include <memory>

namespace slowburn {

int RingBufferReader::on_record(void* ctx, void* data, size_t size) {
  auto* self = static_cast<RingBufferReader*>(ctx);
  self->handler_(std::span<const std::byte>(static_cast<const std::byte*>(data), size));
  return 0;
}

Result<std::unique_ptr<RingBufferReader>> RingBufferReader::open(int map_fd, Handler handler) {
  std::unique_ptr<RingBufferReader> reader(new RingBufferReader(std::move(handler)));
  reader->rb_ = ring_buffer__new(map_fd, &RingBufferReader::on_record, reader.get(), nullptr);
  if (!reader->rb_) return make_sys_error(errno, "cannot open the BPF ring buffer");
  return reader;
}

RingBufferReader::~RingBufferReader() { ring_buffer__free(rb_); }

Result<int> RingBufferReader::poll(int timeout_ms) {
  int n = ring_buffer__poll(rb_, timeout_ms);
  if (n == -EINTR) n = 0;
  if (n < 0) return make_sys_error(-n, "ring buffer poll failed");
  auto rest = drain();
  if (!rest) return rest.error();
  return n + *rest;
}

Result<int> RingBufferReader::drain() {
  int n = ring_buffer__consume(rb_);
  if (n < 0) return make_sys_error(-n, "ring buffer consume failed");
  return n;
}

}  // namespace slowburn
