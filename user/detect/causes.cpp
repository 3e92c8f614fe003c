#include "detect/causes.h"

#include <algorithm>
#include <set>
#include <string_view>

namespace slowburn {

// Lower is more severe. Types not listed are not causes.
int cause_rank(const DeviceEvent& e) {
  if (e.cause_rank) return *e.cause_rank;
  // An Xid its domain graded informational (a channel reset, cleanup after
  // another Xid) explains nothing; the ECC ones never are.
  if (e.type == "xid" || e.type == "sxid") return e.severity == EventSeverity::info ? -1 : 0;
  if (e.type == "link.down") return 1;
  if (e.type == "link.downtrained") return 2;
  if (e.type == "aer") return e.severity == EventSeverity::warning ? 4 : 3;
  // The RDMA path: a dead port or device, then a flapping link, then what
  // slows traffic without stopping it.
  if (e.type == "nic.gone") return 1;
  if (e.type == "rdma.async") return e.severity == EventSeverity::error ? 1 : -1;
  if (e.type == "link.flap") return 2;
  // (qp.error, a move to ERR the process asked for, is not one: a flush
  // before destroying a QP looks the same; the provider's async errors are.)
  // Gaps a port saw in what it received (rdma.retrans "rx") are a peer's
  // packets lost on their way: weaker as this rank's cause, and not its data
  // path's evidence (data_path_cause). A recording keeps this rank, not the
  // event's fields, so a replay tells them apart by it.
  if (e.type == "rdma.retrans") {
    auto direction = e.fields.is_object() ? e.fields.find("direction") : e.fields.end();
    return direction != e.fields.end() && *direction == "rx" ? 4 : 3;
  }
  if (e.type == "pfc.pause_storm" || e.type == "host.tcp_retrans") return 3;
  // A connection slower than its peers' (its round trips, not its losses):
  // ranked below a CPU cause, which also slows the ACKs of a starved rank.
  if (e.type == "ib.slow_connection" || e.type == "rdma.slow_qp" || e.type == "host.tcp_rtt") return 4;
  if (e.type == "link.errors" || e.type == "ecn.cnp_surge") return 4;
  // The host: a process killed for memory, then what took the rank's CPU
  // away, then what blocked it.
  if (e.type == "host.oom_kill") return 1;
  if (e.type == "host.cpu_throttled" || e.type == "host.cpu_contention") return 2;
  if (e.type == "host.memory_limit" || e.type == "host.page_faults" || e.type == "host.swap" ||
      e.type == "host.numa_placement" || e.type == "host.blocked_io")
    return 3;
  if (e.type == "pcie.link_event") return 5;
  if (e.type == "pci.hotplug") return 6;
  return -1;
}

bool data_path_cause(const DeviceEvent& e) {
  if (cause_rank(e) < 0) return false;
  // Gaps a port saw in what it received (cause rank 4, above) are a peer's
  // packets lost on their way: that peer's path, not this rank's (a lossy
  // egress at rank 0 raised rank 1's out_of_seq_request beside rank 0's own
  // resends, and the rule saw evidence on both members: RESULTS 40).
  if (e.type == "rdma.retrans" && cause_rank(e) > 3) return false;
  // What loses or slows the rank's own frames. Not pause storms or CNP
  // surges (a NIC told to slow down is congestion's victim as often as its
  // cause: "slower for everyone" says that), not an Xid (its GPU computes
  // late: the arrival test's), not the host's CPU and memory causes (the
  // kernel's CPU times judge those).
  static const std::set<std::string_view> kDataPath = {
      "host.tcp_retrans", "rdma.retrans", "rdma.async", "nic.gone",           "link.down",    "link.downtrained",
      "link.flap",        "link.errors",  "aer",        "ib.slow_connection", "rdma.slow_qp", "host.tcp_rtt"};
  return kDataPath.contains(e.type);
}

std::string event_about_rank(const DeviceEvent& e, const RankIdentity& rank) {
  std::string own = rank_label(rank) + "'s ";
  if (e.summary.starts_with(own)) return "its " + e.summary.substr(own.size());
  return e.summary;
}

std::vector<std::pair<int32_t, TransportEvidence>> transport_evidence_of(const DeviceEvent& e, uint64_t ts_ns,
                                                                         const std::vector<RankIdentity>& ranks,
                                                                         const ConcernsCulprit& concerns) {
  std::vector<std::pair<int32_t, TransportEvidence>> out;
  if (!data_path_cause(e)) return out;
  for (const RankIdentity& rank : ranks)
    if (concerns(e, rank)) out.emplace_back(rank.pid, TransportEvidence{ts_ns, event_about_rank(e, rank)});
  return out;
}

std::vector<OwnCpuCause> own_cpu_cause_of(const DeviceEvent& e, uint64_t ts_ns, const std::vector<RankIdentity>& ranks,
                                          const ConcernsCulprit& concerns) {
  constexpr uint64_t kDefaultSpanNs = 5'000'000'000;  // HostMonitorOptions::window_s
  std::vector<OwnCpuCause> out;
  if (e.type != "host.cpu_throttled" || !e.fields.is_object()) return out;
  auto peers = e.fields.find("peers_value");
  if (peers == e.fields.end() || peers->is_null()) return out;  // no peer: not set apart
  auto duration = [&](const char* name, uint64_t otherwise) {
    auto f = e.fields.find(name);
    return f != e.fields.end() && f->is_number_unsigned() ? f->get<uint64_t>() : otherwise;
  };
  const uint64_t ended_before_ns = duration("span_ended_before_ns", 0);
  const uint64_t to_ns = ts_ns > ended_before_ns ? ts_ns - ended_before_ns : 0;
  uint64_t span_ns = duration("span_ns", kDefaultSpanNs);
  // Over a whole session it held in `value` of the periods, when is not
  // known: that much of the span, as if at its end.
  const bool whole_session = e.fields.value("whole_session", false);
  if (whole_session) {
    auto value = e.fields.find("value");
    double share = value != e.fields.end() && value->is_number() ? std::clamp(value->get<double>(), 0.0, 1.0) : 0.0;
    span_ns = static_cast<uint64_t>(share * static_cast<double>(span_ns));
  }
  for (const RankIdentity& rank : ranks)
    if (concerns(e, rank)) out.push_back({rank.pid, to_ns > span_ns ? to_ns - span_ns : 0, to_ns, whole_session});
  return out;
}

std::string_view event_severity(const DeviceEvent& event) {
  if (event.type == "aer" && event.severity) return event_severity_name(*event.severity);
  int rank = cause_rank(event);
  if (rank < 0 || rank > 4) return "info";
  return rank <= 1 ? "error" : "warning";
}

bool event_names_rank(const DeviceEvent& event, const RankIdentity& culprit) {
  // A host cause is its process's: rank numbers of two jobs on a node
  // collide. By the pid on its node (analyze gives one of two nodes' equal
  // pids another; the event keeps the node's).
  if (event.pid) return *event.pid == own_pid(culprit);
  return std::find(event.ranks.begin(), event.ranks.end(), culprit.rank) != event.ranks.end();
}

bool attach_likely_causes(Finding& finding, std::span<const DeviceEvent> events, const ConcernsCulprit& concerns) {
  std::vector<const DeviceEvent*> causes;
  for (const DeviceEvent& e : events) {
    if (cause_rank(e) < 0) continue;
    if (!concerns(e, finding.culprit)) continue;
    causes.push_back(&e);
  }
  // Most severe first; for the same severity, the device closest to the
  // culprit (its own GPU or NIC before the switch and root port above).
  auto closeness = [](const DeviceEvent& e) {
    int role = e.role == "gpu" || e.role == "nic" || e.role == "nvswitch" || e.role == "host" ? 0
               : e.role == "switch-port"                                                      ? 1
               : e.role == "root-port"                                                        ? 2
                                                                                              : 3;
    return std::make_pair(role, e.ranks.size());
  };
  std::stable_sort(causes.begin(), causes.end(), [&](const DeviceEvent* a, const DeviceEvent* b) {
    return std::make_pair(cause_rank(*a), closeness(*a)) < std::make_pair(cause_rank(*b), closeness(*b));
  });
  std::set<std::pair<std::string, std::string>> seen;
  finding.likely_causes.clear();
  finding.likely_cause_type.clear();
  for (const DeviceEvent* e : causes) {
    if (!seen.insert({e->type, e->device}).second) continue;
    if (finding.likely_causes.empty()) finding.likely_cause_type = e->type;
    finding.likely_causes.push_back(e->summary);
    if (finding.likely_causes.size() == 3) break;
  }
  if (finding.likely_causes.empty()) return false;
  finding.summary += "; likely cause: " + finding.likely_causes.front();
  return true;
}

void attach_sdc_activity(Finding& finding, const std::optional<std::string>& activity) {
  if (!activity) return;
  finding.sdc_activity = activity;
  finding.summary += "; the node shows " + *activity;
}

}  // namespace slowburn
