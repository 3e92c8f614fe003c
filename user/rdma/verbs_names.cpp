#include "rdma/verbs_names.h"

#include <fmt/format.h>

#include <algorithm>

namespace slowburn {

std::string qp_state_name(int32_t state) {
  static constexpr std::string_view kNames[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  if (state == -1) return "-";
  if (state >= 0 && state < 7) return std::string(kNames[state]);
  return fmt::format("state {}", state);
}

std::string qp_type_name(uint32_t type) {
  switch (type) {
    case 2:
      return "RC";
    case 3:
      return "UC";
    case 4:
      return "UD";
    case 8:
      return "RAW_PACKET";
    case 9:
      return "XRC_SEND";
    case 10:
      return "XRC_RECV";
    case 0xff:
      return "DRIVER";
  }
  return fmt::format("type {}", type);
}

AsyncEventInfo async_event_info(uint32_t event_type) {
  using S = AsyncScope;
  struct Row {
    const char* name;
    S scope;
    bool error;
    const char* meaning;
  };
  static constexpr Row kRows[] = {
      {"CQ_ERR", S::cq, true, "completion queue overrun or protection error: its QPs stop completing"},
      {"QP_FATAL", S::qp, true, "QP hit an error it cannot report in a completion: moved to ERR"},
      {"QP_REQ_ERR", S::qp, true, "invalid request from the peer (transport error): QP moved to ERR"},
      {"QP_ACCESS_ERR", S::qp, true, "remote access error (bad rkey or permissions): QP moved to ERR"},
      {"COMM_EST", S::qp, false, "first packet received on a QP in RTR: connection established"},
      {"SQ_DRAINED", S::qp, false, "send queue drained after a move to SQD"},
      {"PATH_MIG", S::qp, false, "migrated to the alternate path"},
      {"PATH_MIG_ERR", S::qp, true, "path migration failed"},
      {"DEVICE_FATAL", S::device, true, "the RDMA device failed: every QP on it is lost"},
      {"PORT_ACTIVE", S::port, false, "port became active"},
      {"PORT_ERR", S::port, true, "port left the active state: link down or flapping"},
      {"LID_CHANGE", S::port, false, "port LID changed (subnet manager)"},
      {"PKEY_CHANGE", S::port, false, "P_Key table changed"},
      {"SM_CHANGE", S::port, false, "subnet manager changed"},
      {"SRQ_ERR", S::srq, true, "shared receive queue error: its QPs stop receiving"},
      {"SRQ_LIMIT_REACHED", S::srq, false, "shared receive queue below its limit"},
      {"QP_LAST_WQE_REACHED", S::qp, false, "last WQE of a QP on an SRQ consumed"},
      {"CLIENT_REREGISTER", S::port, false, "subnet manager asks clients to re-register"},
      {"GID_CHANGE", S::port, false, "GID table changed"},
      {"WQ_FATAL", S::wq, true, "work queue error: moved to ERR"},
      {"DEVICE_SPEED_CHANGE", S::port, false, "port speed changed"},
  };
  if (event_type < std::size(kRows)) {
    const Row& r = kRows[event_type];
    return {r.name, r.scope, r.error, r.meaning};
  }
  return {fmt::format("event {}", event_type), S::device, false, "unknown event type (newer rdma-core?)"};
}

std::string format_gid(const std::array<uint8_t, 16>& gid) {
  std::string out;
  for (size_t i = 0; i < gid.size(); i += 2) {
    if (i) out += ':';
    out += fmt::format("{:02x}{:02x}", gid[i], gid[i + 1]);
  }
  return out;
}

bool gid_is_zero(const std::array<uint8_t, 16>& gid) {
  return std::all_of(gid.begin(), gid.end(), [](uint8_t b) { return b == 0; });
}

}  // namespace slowburn
