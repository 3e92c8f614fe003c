#include "engine/call_stream.h"

namespace slowburn {

Result<std::unique_ptr<CallStream>> CallStream::open(int events_fd, OnCall on_call) {
  std::unique_ptr<CallStream> stream(new CallStream());
  stream->on_call_ = std::move(on_call);
  CallStream* self = stream.get();
  auto reader = RingBufferReader::open(events_fd, [self](std::span<const std::byte> record) {
    if (auto call = self->decoder_.decode_call(record)) self->on_call_(*call);
  });
  if (!reader) return reader.error();
  stream->reader_ = std::move(*reader);
  return stream;
}

Result<void> CallStream::add(int map_fd, RingBufferReader::Handler handler) {
  return reader_->add(map_fd, std::move(handler));
}

Result<void> CallStream::poll(int timeout_ms) {
  if (auto polled = reader_->poll(timeout_ms); !polled) return polled.error();
  return {};
}

Result<Drained> CallStream::drain() {
  if (auto drained = reader_->drain(); !drained) return drained.error();
  return Drained();
}

}  // namespace slowburn
