#include "sources/device_events.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/format.h"
#include "core/strings.h"
#include "nvidia/xid_catalog.h"
#include "rdma/verbs_names.h"
#include "sysfs/pci_devices.h"

namespace slowburn {

namespace {

using json = nlohmann::json;

std::string ranks_text(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + format_rank_list(ranks);
}

json optional_json(const auto& value) { return value ? json(*value) : json(nullptr); }

json xid_fields(const XidEvent& x, const XidInfo& info, const std::string& source) {
  json j{{"code", x.code},
         {"pci", x.pci},
         {"pid", optional_json(x.pid)},
         {"process", optional_json(x.process)},
         {"message", x.message},
         {"severity", info.severity},
         {"action", info.action},
         {"meaning", info.meaning},
         {"source", source}};
  if (x.gpu_instance) j["gpu_instance"] = *x.gpu_instance;
  if (x.compute_instance) j["compute_instance"] = *x.compute_instance;
  if (x.switch_index) j["switch"] = *x.switch_index;
  if (x.caused_by) j["caused_by_xid"] = *x.caused_by;
  return j;
}

json aer_fields(const AerEvent& a) {
  json j{{"severity", aer_severity_name(a.severity)},
         {"status", a.status},
         {"bits", a.bits},
         {"count", a.count},
         {"bus_type", a.bus_type},
         {"source", a.source}};
  j["tlp_header"] = optional_json(a.tlp_header);
  return j;
}

json link_fields(const LinkEvent& l) {
  return {{"reason", l.reason},
          {"partner", l.partner.empty() ? json(nullptr) : json(l.partner)},
          {"current_width", optional_json(l.reading.current_width)},
          {"current_speed_gts", optional_json(l.reading.current_speed_gts)},
          {"max_width", optional_json(l.reading.max_width)},
          {"max_speed_gts", optional_json(l.reading.max_speed_gts)},
          {"expected_width", optional_json(l.expected.width)},
          {"expected_speed_gts", optional_json(l.expected.speed_gts)}};
}

json fabric_fields(const FabricEvent& f) {
  json j{{"severity", f.severity}, {"nic", f.nic},
         {"port", f.port},         {"netdev", f.netdev.empty() ? json(nullptr) : json(f.netdev)},
         {"value", f.value},       {"threshold", f.threshold},
         {"counters", f.deltas}};
  if (!f.priority.empty()) j["priority"] = f.priority;
  if (!f.direction.empty()) j["direction"] = f.direction;
  return j;
}

json qp_fields(const QpEvent& q) {
  json j{{"severity", q.severity},
         {"pid", q.pid},
         {"nic", q.device.empty() ? json(nullptr) : json(q.device)},
         {"qp_num", q.qp_num ? json(q.qp_num) : json(nullptr)},
         {"result", q.result}};
  if (q.from_state >= 0) j["from_state"] = qp_state_name(q.from_state);
  if (q.to_state >= 0) j["to_state"] = qp_state_name(q.to_state);
  if (q.type == "rdma.async") j["event"] = async_event_info(q.event_type).name;
  if (q.port_num) j["port"] = q.port_num;
  return j;
}

json connection_fields(const IbSlowConnection& c) {
  return {{"pid", c.pid},
          {"direction", ib_direction_name(c.direction)},
          {"connection", c.connection},
          {"comm", fmt::format("{:#x}", c.comm)},
          {"requests", c.requests},
          {"latency_mean_us", c.mean_latency_ns / 1e3},
          {"job_median_latency_us", c.median_latency_ns / 1e3},
          {"z", c.z}};
}

EventSeverity aer_event_severity(AerSeverity severity) {
  switch (severity) {
    case AerSeverity::fatal:
      return EventSeverity::fatal;
    case AerSeverity::nonfatal:
      return EventSeverity::error;
    case AerSeverity::correctable:
      break;
  }
  return EventSeverity::warning;
}

}  // namespace

std::string DeviceEventBuilder::attach_device(DeviceEvent& event, const std::string& address) const {
  // A PCI address in any spelling; a kernel name ("mlx5_0") is not one.
  event.device = address.find(':') == std::string::npos ? std::string() : normalize_bdf(address);
  const TopologyDevice* dev = topology_ && !address.empty() ? topology_->find(address) : nullptr;
  if (!dev) return event.device.empty() ? "unknown device" : event.device;
  event.device = dev->pci.bdf;
  event.role = std::string(device_role_name(dev->role));
  event.label = dev->label;
  event.ranks = topology_->ranks_behind(dev->pci.bdf);
  // No rank yet is said by saying none: a service joins later ranks to it.
  if (event.ranks.empty()) return fmt::format("{} {} ({})", event.role, dev->label, dev->pci.bdf);
  return fmt::format("{} {} ({}, {})", event.role, dev->label, dev->pci.bdf, ranks_text(event.ranks));
}

DeviceEvent DeviceEventBuilder::xid(const XidEvent& xid, uint64_t ts_ns, const std::string& source) const {
  DeviceEvent event;
  event.type = xid.nvswitch ? "sxid" : "xid";
  event.ts_ns = ts_ns;
  XidInfo info = xid.nvswitch ? sxid_info(xid.code) : xid_info(xid.code, xid.message);
  std::string where = attach_device(event, xid.pci);
  event.summary = fmt::format("{} {} on {}: {} [{}: {}; {}]", xid.nvswitch ? "SXid" : "Xid", xid.code, where,
                              xid.message, info.severity, info.meaning, info.action);
  // Codes the catalog calls informational (43 channel reset, 45 cleanup
  // after another Xid) explain nothing; the others are errors.
  event.severity = info.severity == "informational" ? EventSeverity::info : EventSeverity::error;
  event.fields = xid_fields(xid, info, source);
  return event;
}

DeviceEvent DeviceEventBuilder::aer(const AerEvent& aer, uint64_t ts_ns) const {
  DeviceEvent event;
  event.type = "aer";
  event.ts_ns = ts_ns;
  std::string where = attach_device(event, aer.device);
  event.summary = fmt::format("AER {} {}{} on {}{}", aer_severity_name(aer.severity), join(aer.bits, "+"),
                              aer.count > 1 ? fmt::format(" x{}", aer.count) : "", where,
                              aer.bus_type != "PCIe" ? " (" + aer.bus_type + ")" : "");
  event.severity = aer_event_severity(aer.severity);
  event.fields = aer_fields(aer);
  return event;
}

DeviceEvent DeviceEventBuilder::link(const LinkEvent& link, uint64_t ts_ns) const {
  DeviceEvent event;
  event.type = link.type;
  event.ts_ns = ts_ns;
  std::string where = attach_device(event, link.device);
  event.summary = fmt::format("{} on {}{}: {} (now {}, expected {})", link.type, where,
                              link.partner.empty() ? "" : ", link to " + link.partner, link.reason,
                              format_link(link.reading.current_width, link.reading.current_speed_gts),
                              format_link(link.expected.width, link.expected.speed_gts));
  event.fields = link_fields(link);
  return event;
}

DeviceEvent DeviceEventBuilder::pcie_link_trace(const PcieLinkTrace& trace, uint64_t ts_ns) const {
  DeviceEvent event;
  event.type = "pcie.link_event";
  event.ts_ns = ts_ns;
  std::string where = attach_device(event, trace.port);
  event.summary =
      fmt::format("PCIe link event {} below {}: x{} {} (max {}){}", pcie_link_reason_name(trace.reason), where,
                  trace.width, trace.current_speed_gts ? fmt::format("{:g} GT/s", *trace.current_speed_gts) : "?",
                  trace.max_speed_gts ? fmt::format("{:g} GT/s", *trace.max_speed_gts) : "?",
                  trace.status_bits.empty() ? "" : " [" + join(trace.status_bits, ",") + "]");
  event.fields = {{"port", trace.port},
                  {"reason", pcie_link_reason_name(trace.reason)},
                  {"width", trace.width},
                  {"current_speed_gts", optional_json(trace.current_speed_gts)},
                  {"max_speed_gts", optional_json(trace.max_speed_gts)},
                  {"flit_mode", trace.flit_mode},
                  {"link_status", trace.status_bits}};
  return event;
}

DeviceEvent DeviceEventBuilder::hotplug(const PciHotplugTrace& trace, uint64_t ts_ns) const {
  DeviceEvent event;
  event.type = "pci.hotplug";
  event.ts_ns = ts_ns;
  std::string where = attach_device(event, trace.port);
  event.summary = fmt::format("PCI hotplug {} on slot {} below {}", pci_hp_event_name(trace.event), trace.slot, where);
  event.fields = {{"port", trace.port}, {"slot", trace.slot}, {"event", pci_hp_event_name(trace.event)}};
  return event;
}

DeviceEvent DeviceEventBuilder::fabric(const FabricEvent& fabric) const {
  DeviceEvent event;
  event.type = fabric.type;
  event.ts_ns = fabric.ts_ns;
  // By PCI address when sysfs gave one, else by the NIC's kernel name.
  attach_device(event, fabric.device.empty() ? fabric.nic : fabric.device);
  if (event.label.empty()) event.label = fabric.nic;
  event.summary = fmt::format("{} {}{}", fabric.type, fabric.summary,
                              event.ranks.empty() ? "" : fmt::format(" [{}]", ranks_text(event.ranks)));
  event.fields = fabric_fields(fabric);
  return event;
}

DeviceEvent DeviceEventBuilder::qp(const QpEvent& qp, std::optional<int> rank) const {
  DeviceEvent event;
  event.type = qp.type;
  event.ts_ns = qp.ts_ns;
  attach_device(event, qp.device);
  if (event.label.empty()) event.label = qp.device;
  bool whole_nic = qp.type == "rdma.async" && qp.qp_num == 0 && qp.severity == "error";
  if (!whole_nic) event.ranks.clear();  // a QP belongs to its process, not to every rank on the NIC
  if (rank && std::find(event.ranks.begin(), event.ranks.end(), *rank) == event.ranks.end()) {
    event.ranks.push_back(*rank);
    std::sort(event.ranks.begin(), event.ranks.end());
  }
  event.summary = fmt::format("{} {}{}", qp.type, qp.summary,
                              event.ranks.empty() ? "" : fmt::format(" [{}]", ranks_text(event.ranks)));
  // An asynchronous error is a cause; a warning or a notice is not.
  if (qp.type == "rdma.async") event.severity = qp.severity == "error" ? EventSeverity::error : EventSeverity::info;
  event.fields = qp_fields(qp);
  return event;
}

DeviceEventBuilder::QpPath DeviceEventBuilder::QpPath::of(const QpInfo& qp) {
  return {qp.device, qp.dest_qp_num, gid_is_zero(qp.dest_gid) ? "" : format_gid(qp.dest_gid)};
}

DeviceEvent DeviceEventBuilder::slow_connection(const IbSlowConnection& c, std::optional<int> rank, uint64_t ts_ns,
                                                const std::optional<QpPath>& path) const {
  DeviceEvent event;
  event.ts_ns = ts_ns;
  if (rank) event.ranks = {*rank};
  std::string who = rank ? fmt::format("rank {} ", *rank) : "";
  double times = c.median_latency_ns > 0 ? c.mean_latency_ns / c.median_latency_ns : 0.0;
  if (c.direction == IbDirection::qp) {
    // A send completes once the peer's NIC acknowledged it: a slow path to
    // that peer, retransmissions on it, or a NIC that completes late.
    // The QP is its process's: joined by pid, not through the NIC (which
    // serves every rank on it), so event.device stays empty.
    event.type = "rdma.slow_qp";
    event.pid = static_cast<int32_t>(c.pid);
    event.label = fmt::format("pid {} qp {:#x}", c.pid, c.comm);
    std::string where;
    if (path && !path->nic.empty()) where += " on " + path->nic;
    if (path && path->dest_qp_num)
      where +=
          fmt::format(" (to QP {:#x}{})", path->dest_qp_num, path->dest_gid.empty() ? "" : " at GID " + path->dest_gid);
    event.summary = fmt::format(
        "rdma.slow_qp {}pid {}: QP {:#x}{}: its sends complete {} after posting on average over {} requests, "
        "{:.1f}x the job's median {} (z {:.1f}): a slow path to its peer (retransmissions, a degraded link), or a "
        "NIC that completes late",
        who, c.pid, c.comm, where, format_ns(c.mean_latency_ns), c.requests, times, format_ns(c.median_latency_ns),
        c.z);
    event.fields = connection_fields(c);
    event.fields.erase("connection");
    event.fields.erase("comm");
    event.fields["qp_num"] = c.comm;
    if (path && !path->nic.empty()) event.fields["nic"] = path->nic;
    if (path && path->dest_qp_num) event.fields["dest_qp_num"] = path->dest_qp_num;
    if (path && !path->dest_gid.empty()) event.fields["dest_gid"] = path->dest_gid;
    return event;
  }
  event.type = "ib.slow_connection";
  event.label = fmt::format("pid {} nccl.ib {} #{}", c.pid, ib_direction_name(c.direction), c.connection);
  // A receive waits for its sender too: slow means a slow path from that
  // peer, or a peer that sends late.
  bool recv = c.direction == IbDirection::recv;
  event.summary = fmt::format(
      "ib.slow_connection {}pid {}: NCCL IB {} connection #{} averages {} per request over {} "
      "requests, {:.1f}x the job's median {} (z {:.1f}): {}",
      who, c.pid, ib_direction_name(c.direction), c.connection, format_ns(c.mean_latency_ns), c.requests, times,
      format_ns(c.median_latency_ns), c.z,
      recv ? "a slow path from that peer, or a peer that sends late" : "a slow path to that peer");
  event.fields = connection_fields(c);
  return event;
}

}  // namespace slowburn
