#include "events/decoder.h"

#include <cstring>

#include "slowburn/callpair.h"

namespace slowburn {

static_assert(sizeof(sb_event_header) == 24, "event header layout changed: bump versions");
static_assert(sizeof(sb_call_event) == 72, "call event layout changed: bump SB_CALL_EVENT_VERSION");

std::optional<CallEvent> EventDecoder::decode_call(std::span<const std::byte> record) {
  if (record.size() < sizeof(sb_event_header)) {
    ++stats_.truncated;
    return std::nullopt;
  }
  sb_event_header header;
  std::memcpy(&header, record.data(), sizeof(header));
  if (header.type != SB_EVENT_CALL) {
    ++stats_.unknown_type;
    return std::nullopt;
  }
  if (header.version != SB_CALL_EVENT_VERSION) {
    ++stats_.unknown_version;
    return std::nullopt;
  }
  if (record.size() < sizeof(sb_call_event)) {
    ++stats_.truncated;
    return std::nullopt;
  }
  sb_call_event raw;
  std::memcpy(&raw, record.data(), sizeof(raw));
  ++stats_.decoded;
  return CallEvent{header.pid,   header.tid,  header.cpu,   raw.probe_id, raw.seq,
                   raw.entry_ns, raw.exit_ns, raw.size_arg, raw.aux_arg};
}

}  // namespace slowburn
