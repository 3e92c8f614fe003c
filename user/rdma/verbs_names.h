// Names and meanings of libibverbs enums (FACTS.md, <infiniband/verbs.h>):
// QP states and types, asynchronous event types.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace slowburn {

// "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"; "state N" otherwise;
// "-" for -1 (not known / not requested).
std::string qp_state_name(int32_t state);
constexpr int32_t kQpStateSqe = 5, kQpStateErr = 6;
inline bool is_error_state(int32_t state) { return state == kQpStateSqe || state == kQpStateErr; }

// "RC", "UC", "UD", "RAW_PACKET", "XRC_SEND", "XRC_RECV", "DRIVER"; "type N" otherwise.
std::string qp_type_name(uint32_t type);

enum class AsyncScope { qp, cq, srq, wq, port, device };

struct AsyncEventInfo {
  std::string name;  // "QP_FATAL", ... or "event N"
  AsyncScope scope = AsyncScope::device;
  bool error = false;  // the QP, CQ, port or device stopped working
  std::string meaning;
};
AsyncEventInfo async_event_info(uint32_t event_type);

// A GID as ibv_devinfo -v prints it: eight groups of four hex digits.
std::string format_gid(const std::array<uint8_t, 16>& gid);
bool gid_is_zero(const std::array<uint8_t, 16>& gid);

}  // namespace slowburn
