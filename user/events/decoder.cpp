#include "events/decoder.h"

#include <algorithm>
#include <cstring>

#include "slowburn/callpair.h"
#include "slowburn/hwevents.h"
#include "slowburn/lifecycle.h"
#include "slowburn/verbs.h"

namespace slowburn {

static_assert(sizeof(sb_event_header) == 24, "event header layout changed: bump versions");
static_assert(sizeof(sb_call_event) == 128, "call event layout changed: bump SB_CALL_EVENT_VERSION");
static_assert(sizeof(sb_verbs_event) == 168, "verbs event layout changed: bump SB_VERBS_EVENT_VERSION");
static_assert(sizeof(sb_lifecycle_event) == 64, "lifecycle event layout changed: bump SB_LIFECYCLE_VERSION");

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
  CallEvent call;
  call.pid = raw.hdr.pid;
  call.tid = raw.hdr.tid;
  call.cpu = raw.hdr.cpu;
  call.probe_id = raw.probe_id;
  call.seq = raw.seq;
  call.entry_ns = raw.entry_ns;
  call.exit_ns = raw.exit_ns;
  call.size_arg = raw.size_arg;
  call.aux_arg = raw.aux_arg;
  call.comm = raw.comm;
  if (raw.flags & SB_CALL_HAS_COMM_SEQ) call.comm_seq = raw.comm_seq;
  if (raw.flags & SB_CALL_HAS_OUT) call.out_value = raw.out_value;
  if (raw.flags & SB_CALL_HAS_KEY) call.key_hash = raw.key_hash;
  call.comm_unreadable = raw.flags & SB_CALL_COMM_UNREAD;
  call.ret = raw.ret;
  if (raw.flags & SB_CALL_HAS_CPU) call.oncpu_ns = raw.oncpu_ns;
  if (raw.flags & SB_CALL_HAS_RUNQ) call.runq_ns = raw.runq_ns;
  return call;
}

std::optional<KmsgLine> EventDecoder::decode_kmsg(std::span<const std::byte> record) {
  if (!check(record, SB_EVENT_KMSG, SB_KMSG_EVENT_VERSION, sizeof(sb_kmsg_event))) return std::nullopt;
  const auto* raw = reinterpret_cast<const sb_kmsg_event*>(record.data());
  size_t len = std::min<size_t>(raw->len, sizeof(raw->text));
  return KmsgLine{raw->hdr.ts_ns, std::string(raw->text, strnlen(raw->text, len))};
}

std::optional<LifecycleRecord> EventDecoder::decode_lifecycle(std::span<const std::byte> record) {
  if (!check(record, SB_EVENT_LIFECYCLE, SB_LIFECYCLE_VERSION, sizeof(sb_lifecycle_event))) return std::nullopt;
  const auto* raw = reinterpret_cast<const sb_lifecycle_event*>(record.data());
  LifecycleRecord r;
  switch (raw->kind) {
    case SB_LIFE_EXIT:
      r.kind = LifecycleRecord::Kind::exit;
      break;
    case SB_LIFE_SIGNAL:
      r.kind = LifecycleRecord::Kind::signal;
      break;
    case SB_LIFE_OOM:
      r.kind = LifecycleRecord::Kind::oom;
      break;
    default:  // a kind newer than this decoder: counted as a type it does not know
      --stats_.decoded;
      ++stats_.unknown_type;
      return std::nullopt;
  }
  r.ts_ns = raw->hdr.ts_ns;
  r.pid = static_cast<int32_t>(raw->hdr.pid);
  r.signal = raw->sig;
  r.exit_code = raw->exit_code;
  r.group_exit_code = raw->group_exit_code;
  r.sender_pid = raw->sender_tgid;
  r.sender_comm.assign(raw->sender_comm, strnlen(raw->sender_comm, sizeof(raw->sender_comm)));
  return r;
}

std::optional<TpRecord> EventDecoder::decode_tp_record(std::span<const std::byte> record) {
  if (!check(record, SB_EVENT_TP_RECORD, SB_TP_RECORD_VERSION, sizeof(sb_tp_record))) return std::nullopt;
  const auto* raw = reinterpret_cast<const sb_tp_record*>(record.data());
  size_t len = std::min<size_t>(raw->len, sizeof(raw->data));
  const auto* data = reinterpret_cast<const std::byte*>(raw->data);
  return TpRecord{raw->hdr.ts_ns, raw->source, std::vector<std::byte>(data, data + len)};
}

std::optional<VerbsCall> EventDecoder::decode_verbs(std::span<const std::byte> record) {
  if (!check(record, SB_EVENT_VERBS, SB_VERBS_EVENT_VERSION, sizeof(sb_verbs_event))) return std::nullopt;
  sb_verbs_event raw;
  std::memcpy(&raw, record.data(), sizeof(raw));
  if (raw.call < SB_VERBS_MODIFY_QP || raw.call > SB_VERBS_ASYNC_EVENT) {
    // The header matched but the payload names no call we know: a producer bug, not data.
    --stats_.decoded;
    ++stats_.unknown_type;
    return std::nullopt;
  }
  VerbsCall call;
  call.kind = static_cast<VerbsCallKind>(raw.call);
  call.pid = raw.hdr.pid;
  call.tid = raw.hdr.tid;
  call.ts_ns = raw.hdr.ts_ns;
  call.duration_ns = raw.duration_ns;
  call.result = raw.result;
  call.object = raw.object;
  call.qp_num = raw.qp_num;
  call.new_state = raw.new_state;
  call.old_state = raw.old_state;
  call.qp_type = raw.qp_type;
  call.attr_mask = raw.attr_mask;
  call.event_type = raw.event_type;
  call.port_num = raw.port_num;
  call.dest_qp_num = raw.dest_qp_num;
  std::memcpy(call.dest_gid.data(), raw.dest_gid, sizeof(raw.dest_gid));
  call.dest_lid = raw.dest_lid;
  call.device.assign(raw.device, strnlen(raw.device, sizeof(raw.device)));
  return call;
}

}  // namespace slowburn
