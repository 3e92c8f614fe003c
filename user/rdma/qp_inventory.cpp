#include "rdma/qp_inventory.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/strings.h"
#include "rdma/verbs_names.h"

namespace slowburn {

namespace {

std::string where(const VerbsCall& call) {
  return call.device.empty() ? fmt::format("pid {}", call.pid) : fmt::format("pid {} {}", call.pid, call.device);
}

std::string qp_label(uint32_t qp_num) { return fmt::format("QP {:#x}", qp_num); }

}  // namespace

QpInfo& QpInventory::qp_for(const VerbsCall& call) {
  QpInfo& qp = qps_[{call.pid, call.object}];
  qp.pid = call.pid;
  qp.object = call.object;
  if (call.qp_num) qp.qp_num = call.qp_num;
  if (!call.device.empty()) qp.device = call.device;
  return qp;
}

std::vector<QpEvent> QpInventory::apply(const VerbsCall& call) {
  std::vector<QpEvent> events;
  QpTotals& totals = totals_[call.pid];
  auto event = [&](std::string type, std::string severity, std::string summary) -> QpEvent& {
    QpEvent& e = events.emplace_back();
    e.type = std::move(type);
    e.severity = std::move(severity);
    e.ts_ns = call.ts_ns;
    e.pid = call.pid;
    e.device = call.device;
    e.qp_num = call.qp_num;
    e.result = call.result;
    e.summary = std::move(summary);
    return e;
  };

  switch (call.kind) {
    case VerbsCallKind::create_qp: {
      if (call.result != 0 || call.object == 0) {
        ++totals.failed_calls;
        event("qp.create_failed", "warning", fmt::format("{}: ibv_create_qp returned NULL", where(call)));
        break;
      }
      QpInfo& qp = qp_for(call);
      qp = QpInfo{};  // a reused address is a new QP
      qp.pid = call.pid;
      qp.object = call.object;
      qp.qp_num = call.qp_num;
      qp.device = call.device;
      qp.qp_type = call.qp_type;
      qp.type_known = true;
      qp.state = 0;  // a new QP is in RESET
      qp.created_ns = call.ts_ns;
      qp.last_change_ns = call.ts_ns;
      ++totals.created;
      break;
    }
    case VerbsCallKind::modify_qp: {
      QpInfo& qp = qp_for(call);
      if (!qp.type_known) qp.qp_type = call.qp_type, qp.type_known = true;
      if (call.result != 0) {
        ++qp.failed_modifies;
        ++totals.failed_calls;
        QpEvent& e = event("qp.modify_failed", "warning",
                           fmt::format("{}: {} {} -> {} failed (error {})", where(call), qp_label(call.qp_num),
                                       qp_state_name(call.old_state), qp_state_name(call.new_state), call.result));
        e.from_state = call.old_state;
        e.to_state = call.new_state;
        break;
      }
      if (call.attr_mask & (1u << 20)) qp.dest_qp_num = call.dest_qp_num;                        // IBV_QP_DEST_QPN
      if (call.attr_mask & (1u << 7)) qp.dest_gid = call.dest_gid, qp.dest_lid = call.dest_lid;  // IBV_QP_AV
      if (call.new_state < 0) break;  // attributes only, no transition
      int32_t from = qp.state >= 0 ? qp.state : call.old_state;
      qp.state = call.new_state;
      qp.last_change_ns = call.ts_ns;
      ++qp.transitions;
      if (static_cast<size_t>(call.new_state) < totals.moves_to.size()) ++totals.moves_to[call.new_state];
      if (is_error_state(call.new_state)) {
        ++totals.error_transitions;
        // Requested by the process: an error it saw (a bad completion), or a
        // flush before destroying the QP (UCX does that). A warning, not a
        // failure: the provider's async events are the QP failures.
        QpEvent& e = event("qp.error", "warning",
                           fmt::format("{}: {} moved {} -> {} (requested by the process)", where(call),
                                       qp_label(call.qp_num), qp_state_name(from), qp_state_name(call.new_state)));
        e.from_state = from;
        e.to_state = call.new_state;
      }
      break;
    }
    case VerbsCallKind::destroy_qp: {
      if (call.result != 0) {
        ++totals.failed_calls;
        event("qp.destroy_failed", "warning",
              fmt::format("{}: destroying {} failed (error {})", where(call), qp_label(call.qp_num), call.result));
        break;
      }
      if (auto it = qps_.find({call.pid, call.object}); it != qps_.end())
        last_known_[{call.pid, it->second.qp_num}] = it->second;
      qps_.erase({call.pid, call.object});
      ++totals.destroyed;
      break;
    }
    case VerbsCallKind::async_event: {
      if (call.result != 0) break;  // no event was returned (EAGAIN on a non-blocking fd)
      AsyncEventInfo info = async_event_info(call.event_type);
      std::string subject = info.scope == AsyncScope::qp     ? qp_label(call.qp_num)
                            : info.scope == AsyncScope::port ? fmt::format("port {}", call.port_num)
                                                             : std::string();
      QpEvent& e = event(
          "rdma.async", info.error ? "error" : "info",
          fmt::format("{}: {}{}{}: {}", where(call), info.name, subject.empty() ? "" : " on ", subject, info.meaning));
      e.event_type = call.event_type;
      e.port_num = call.port_num;
      if (info.scope != AsyncScope::qp) e.qp_num = 0;
      if (info.error) ++totals.async_errors;
      // The provider moved the QP to ERR itself: the inventory follows.
      if (info.error && info.scope == AsyncScope::qp) {
        if (auto it = qps_.find({call.pid, call.object}); it != qps_.end()) {
          e.from_state = it->second.state;
          it->second.state = kQpStateErr;
          it->second.last_change_ns = call.ts_ns;
        }
        e.to_state = kQpStateErr;
        ++totals.error_transitions;
      }
      break;
    }
  }
  return events;
}

std::string qp_totals_text(const QpTotals& t) {
  std::vector<std::string> moves;
  for (size_t state = 0; state < t.moves_to.size(); ++state)
    if (t.moves_to[state])
      moves.push_back(fmt::format("{} {}", qp_state_name(static_cast<int32_t>(state)), t.moves_to[state]));
  std::string text = fmt::format("{} QP(s) created", t.created);
  if (!moves.empty()) text += "; moved to " + join(moves, ", ");
  return text + fmt::format("; {} destroyed", t.destroyed);
}

std::optional<QpInfo> QpInventory::last_known(uint32_t pid, uint32_t qp_num) const {
  for (const auto& [key, q] : qps_)
    if (key.first == pid && q.qp_num == qp_num) return q;
  auto it = last_known_.find({pid, qp_num});
  return it == last_known_.end() ? std::nullopt : std::optional<QpInfo>(it->second);
}

size_t QpInventory::forget_process(uint32_t pid) {
  for (const auto& [key, q] : qps_)
    if (key.first == pid) last_known_[{pid, q.qp_num}] = q;
  return std::erase_if(qps_, [pid](const auto& entry) { return entry.first.first == pid; });
}

std::vector<QpInfo> QpInventory::qps() const {
  std::vector<QpInfo> out;
  for (const auto& [key, qp] : qps_) out.push_back(qp);
  std::sort(out.begin(), out.end(),
            [](const QpInfo& a, const QpInfo& b) { return std::tie(a.pid, a.qp_num) < std::tie(b.pid, b.qp_num); });
  return out;
}

}  // namespace slowburn
