// A libibverbs control-path call, decoded from bpf/verbs.bpf.c's record.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace slowburn {

enum class VerbsCallKind { modify_qp = 1, create_qp = 2, destroy_qp = 3, async_event = 4 };

struct VerbsCall {
  VerbsCallKind kind = VerbsCallKind::modify_qp;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t ts_ns = 0;  // at return, CLOCK_MONOTONIC
  uint64_t duration_ns = 0;
  int32_t result = 0;   // the int returned (create_qp: 0, or -1 for NULL)
  uint64_t object = 0;  // struct ibv_qp* (or ibv_context* for device events)
  uint32_t qp_num = 0;
  int32_t new_state = -1;  // modify_qp: the requested state, -1 when not in the mask
  int32_t old_state = -1;  // modify_qp: the state before the call
  uint32_t qp_type = 0;
  uint32_t attr_mask = 0;
  uint32_t event_type = 0;  // async_event
  uint32_t port_num = 0;    // async port events
  uint32_t dest_qp_num = 0;
  std::array<uint8_t, 16> dest_gid{};
  uint16_t dest_lid = 0;
  std::string device;  // "mlx5_0"; empty if it could not be read
};

}  // namespace slowburn
