#include "events/decoder.h"

#include <algorithm>
#include <cstring>

#include "slowburn/callpair.h"
#include "slowburn/hwevents.h"

namespace slowburn {

static_assert(sizeof(sb_event_header) == 24, "event header layout changed: bump versions");
static_assert(sizeof(sb_call_event) == 72, "call event layout changed: bump SB_CALL_EVENT_VERSION");

bool EventDecoder::check(std::span<const std::byte> record, uint16_t type, uint16_t version, size_t size) {
  if (record.size() < sizeof(sb_event_header)) {
    ++stats_.truncated;
    return false;
  }
  sb_event_header header;
  std::memcpy(&header, record.data(), sizeof(header));
  if (header.type != type) {
    ++stats_.unknown_type;
    return false;
  }
  if (header.version != version) {
    ++stats_.unknown_version;
    return false;
  }
  if (record.size() < size) {
    ++stats_.truncated;
    return false;
  }
  ++stats_.decoded;
  return true;
}

std::optional<CallEvent> EventDecoder::decode_call(std::span<const std::byte> record) {
  if (!check(record, SB_EVENT_CALL, SB_CALL_EVENT_VERSION, sizeof(sb_call_event))) return std::nullopt;
  sb_call_event raw;
  std::memcpy(&raw, record.data(), sizeof(raw));
  return CallEvent{raw.hdr.pid,  raw.hdr.tid, raw.hdr.cpu,  raw.probe_id, raw.seq,
                   raw.entry_ns, raw.exit_ns, raw.size_arg, raw.aux_arg};
}

std::optional<KmsgLine> EventDecoder::decode_kmsg(std::span<const std::byte> record) {
  if (!check(record, SB_EVENT_KMSG, SB_KMSG_EVENT_VERSION, sizeof(sb_kmsg_event))) return std::nullopt;
  const auto* raw = reinterpret_cast<const sb_kmsg_event*>(record.data());
  size_t len = std::min<size_t>(raw->len, sizeof(raw->text));
  return KmsgLine{raw->hdr.ts_ns, std::string(raw->text, strnlen(raw->text, len))};
}

std::optional<TpRecord> EventDecoder::decode_tp_record(std::span<const std::byte> record) {
  if (!check(record, SB_EVENT_TP_RECORD, SB_TP_RECORD_VERSION, sizeof(sb_tp_record))) return std::nullopt;
  const auto* raw = reinterpret_cast<const sb_tp_record*>(record.data());
  size_t len = std::min<size_t>(raw->len, sizeof(raw->data));
  const auto* data = reinterpret_cast<const std::byte*>(raw->data);
  return TpRecord{raw->hdr.ts_ns, raw->source, std::vector<std::byte>(data, data + len)};
}

}  // namespace slowburn
