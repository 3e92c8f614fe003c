#include "loader/ring_buffer.h"

#include <bpf/libbpf.h>

#include <cerrno>
#include <memory>

namespace slowburn {

int RingBufferReader::on_record(void* ctx, void* data, size_t size) {
  (*static_cast<Handler*>(ctx))(std::span<const std::byte>(static_cast<const std::byte*>(data), size));
  return 0;
}

Result<std::unique_ptr<RingBufferReader>> RingBufferReader::open(int map_fd, Handler handler) {
  std::unique_ptr<RingBufferReader> reader(new RingBufferReader());
  reader->handlers_.push_back(std::make_unique<Handler>(std::move(handler)));
  reader->rb_ = ring_buffer__new(map_fd, &RingBufferReader::on_record, reader->handlers_.back().get(), nullptr);
  if (!reader->rb_) return make_sys_error(errno, "cannot open the BPF ring buffer");
  return reader;
}

Result<void> RingBufferReader::add(int map_fd, Handler handler) {
  handlers_.push_back(std::make_unique<Handler>(std::move(handler)));
  if (int err = ring_buffer__add(rb_, map_fd, &RingBufferReader::on_record, handlers_.back().get()); err)
    return make_sys_error(-err, "cannot add a BPF ring buffer");
  return {};
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
