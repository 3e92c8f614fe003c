// The QPs of each traced process, kept from libibverbs control-path calls,
// and the calls worth telling a person about: a QP moved to ERR or SQE, a
// transition that failed, an asynchronous error event. Pure: fed decoded
// calls, no BPF, no files.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "events/verbs_call.h"

namespace slowburn {

struct QpInfo {
  uint32_t pid = 0;
  uint64_t object = 0;  // the struct ibv_qp* in the process: unique while the QP lives
  uint32_t qp_num = 0;
  std::string device;
  uint32_t qp_type = 0;
  bool type_known = false;
  int32_t state = -1;       // last known; -1 until a transition is seen
  uint64_t created_ns = 0;  // 0: created before tracing started
  uint64_t last_change_ns = 0;
  uint32_t transitions = 0;
  uint32_t failed_modifies = 0;
  uint32_t dest_qp_num = 0;  // the peer's QP, once connected (RTR)
  std::array<uint8_t, 16> dest_gid{};
  uint16_t dest_lid = 0;
};

struct QpEvent {
  // qp.error (moved to ERR or SQE on request), qp.modify_failed,
  // qp.create_failed, qp.destroy_failed, rdma.async
  std::string type;
  std::string severity;  // error, warning, info
  uint64_t ts_ns = 0;
  uint32_t pid = 0;
  std::string device;
  uint32_t qp_num = 0;  // 0: none (port and device events)
  int32_t from_state = -1;
  int32_t to_state = -1;
  uint32_t event_type = 0;  // rdma.async
  uint32_t port_num = 0;
  int32_t result = 0;
  std::string summary;  // one line
};

struct QpTotals {
  uint64_t created = 0;
  // ibv_modify_qp transitions that succeeded, by the state reached (enum
  // ibv_qp_state, RESET .. ERR): a connection that came up is one to INIT,
  // RTR and RTS each. (A provider's move to ERR is an async event, not one.)
  std::array<uint64_t, 7> moves_to{};
  uint64_t destroyed = 0;
  uint64_t error_transitions = 0;  // to ERR or SQE, requested or reported by an async event
  uint64_t failed_calls = 0;
  uint64_t async_errors = 0;
};

// "2 QP(s) created; moved to INIT 2, RTR 2, RTS 2, ERR 2; 2 destroyed" (the
// states never reached are left out).
std::string qp_totals_text(const QpTotals& totals);

class QpInventory {
 public:
  // Updates the inventory; returns the events the call raised (often none).
  std::vector<QpEvent> apply(const VerbsCall& call);

  std::vector<QpInfo> qps() const;  // live QPs, by pid then QP number
  // A QP as last seen, live or destroyed since (a slow QP is reported after
  // its job tore it down): its NIC and peer. The latest by that number.
  std::optional<QpInfo> last_known(uint32_t pid, uint32_t qp_num) const;
  // A process that exited: its QPs went with it. Returns how many.
  size_t forget_process(uint32_t pid);
  const std::map<uint32_t, QpTotals>& totals() const { return totals_; }  // by pid

 private:
  QpInfo& qp_for(const VerbsCall& call);
  std::map<std::pair<uint32_t, uint64_t>, QpInfo> qps_;         // (pid, object)
  std::map<std::pair<uint32_t, uint32_t>, QpInfo> last_known_;  // (pid, QP number), destroyed ones too
  std::map<uint32_t, QpTotals> totals_;
};

}  // namespace slowburn
