#include "hw/device_events.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/format.h"
#include "core/strings.h"
#include "sysfs/pci_devices.h"

namespace slowburn {

namespace {
std::string ranks_text(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + format_rank_list(ranks);
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
  XidReport report{xid, xid.nvswitch ? sxid_info(xid.code) : xid_info(xid.code, xid.message), source};
  std::string where = attach_device(event, xid.pci);
  event.summary = fmt::format("{} {} on {}: {} [{}: {}; {}]", xid.nvswitch ? "SXid" : "Xid", xid.code, where,
                              xid.message, report.info.severity, report.info.meaning, report.info.action);
  event.payload = std::move(report);
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
  event.payload = aer;
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
  event.payload = link;
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
  event.payload = trace;
  return event;
}

DeviceEvent DeviceEventBuilder::hotplug(const PciHotplugTrace& trace, uint64_t ts_ns) const {
  DeviceEvent event;
  event.type = "pci.hotplug";
  event.ts_ns = ts_ns;
  std::string where = attach_device(event, trace.port);
  event.summary = fmt::format("PCI hotplug {} on slot {} below {}", pci_hp_event_name(trace.event), trace.slot, where);
  event.payload = trace;
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
  event.payload = fabric;
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
  event.payload = qp;
  return event;
}

DeviceEvent DeviceEventBuilder::slow_connection(const IbSlowConnection& c, std::optional<int> rank,
                                                uint64_t ts_ns) const {
  DeviceEvent event;
  event.type = "ib.slow_connection";
  event.ts_ns = ts_ns;
  if (rank) event.ranks = {*rank};
  event.label = fmt::format("pid {} nccl.ib {} #{}", c.pid, ib_direction_name(c.direction), c.connection);
  // A receive waits for its sender too: slow means a slow path from that
  // peer, or a peer that sends late.
  bool recv = c.direction == IbDirection::recv;
  event.summary = fmt::format(
      "ib.slow_connection {}pid {}: NCCL IB {} connection #{} averages {} per request over {} "
      "requests, {:.1f}x the job's median {} (z {:.1f}): {}",
      rank ? fmt::format("rank {} ", *rank) : "", c.pid, ib_direction_name(c.direction), c.connection,
      format_ns(c.mean_latency_ns), c.requests, c.median_latency_ns > 0 ? c.mean_latency_ns / c.median_latency_ns : 0.0,
      format_ns(c.median_latency_ns), c.z,
      recv ? "a slow path from that peer, or a peer that sends late" : "a slow path to that peer");
  event.payload = c;
  return event;
}

}  // namespace slowburn
