// Builds DeviceEvents from each signal, joined to the topology: which
// device, what it is, which ranks sit behind it, in one line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "events/device_event.h"
#include "nvidia/xid.h"
#include "pcie/aer.h"
#include "pcie/link.h"
#include "rdma/fabric_monitor.h"
#include "rdma/ib_connections.h"
#include "rdma/qp_inventory.h"
#include "sysfs/topology.h"

namespace slowburn {

class DeviceEventBuilder {
 public:
  // topology may be null (no sysfs): events then name the address only.
  explicit DeviceEventBuilder(const Topology* topology) : topology_(topology) {}

  DeviceEvent xid(const XidEvent& xid, uint64_t ts_ns, const std::string& source) const;
  DeviceEvent aer(const AerEvent& aer, uint64_t ts_ns) const;
  DeviceEvent link(const LinkEvent& link, uint64_t ts_ns) const;
  DeviceEvent pcie_link_trace(const PcieLinkTrace& trace, uint64_t ts_ns) const;
  DeviceEvent hotplug(const PciHotplugTrace& trace, uint64_t ts_ns) const;
  // A NIC port's counter event: the ranks behind the NIC.
  DeviceEvent fabric(const FabricEvent& event) const;
  // A verbs call event of the process that made it (`rank`, when the
  // process is a known rank); a port or device error also concerns every
  // rank behind the NIC.
  DeviceEvent qp(const QpEvent& event, std::optional<int> rank) const;
  // An NCCL IB connection of a rank much slower than the job's others.
  // A slow QP's NIC and peer, where the control path saw them (a QP
  // created before the trace has none).
  struct QpPath {
    std::string nic;  // "mlx5_0"
    uint32_t dest_qp_num = 0;
    std::string dest_gid;  // empty: a LID-only path, or not connected while traced
    static QpPath of(const QpInfo& qp);
  };
  DeviceEvent slow_connection(const IbSlowConnection& connection, std::optional<int> rank, uint64_t ts_ns,
                              const std::optional<QpPath>& path = std::nullopt) const;

 private:
  // Fills device, role, label and ranks; returns "label (BDF, ranks ...)".
  std::string attach_device(DeviceEvent& event, const std::string& address) const;
  const Topology* topology_;
};

}  // namespace slowburn
