// Link-degradation events: one type for every hardware signal, carrying the
// device, its role, the ranks behind it, and the signal's own payload.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "host/host_causes.h"
#include "nvidia/xid.h"
#include "nvidia/xid_catalog.h"
#include "pcie/aer.h"
#include "pcie/link.h"
#include "rdma/fabric_monitor.h"
#include "rdma/ib_connections.h"
#include "rdma/qp_inventory.h"

namespace slowburn {

struct XidReport {
  XidEvent xid;
  XidInfo info;
  std::string source;  // "kmsg" (printk:console) or "tracepoint" (nvidia:nvidia_dev_xid)
};

// An event read back from a recording (record/schema.h): its payload is
// gone, what judging it as a cause needs was kept.
struct RecordedEvent {
  std::optional<int> cause_rank;  // detect/causes.h cause_rank when recorded; unset: judged by type (schema 2)
  std::optional<int32_t> pid;     // the process a host cause is about
};

using DevicePayload = std::variant<XidReport, AerEvent, LinkEvent, PcieLinkTrace, PciHotplugTrace, FabricEvent, QpEvent,
                                   IbSlowConnection, HostCause, RecordedEvent>;

struct DeviceEvent {
  // xid, sxid, aer, link.downtrained, link.recovered, link.down, pcie.link_event, pci.hotplug;
  // fabric: pfc.pause_storm, ecn.cnp_surge, rdma.retrans, link.flap, link.errors, nic.gone, nic.back,
  // counters.reset; verbs: qp.error, qp.modify_failed, qp.create_failed, qp.destroy_failed, rdma.async;
  // NCCL IB: ib.slow_connection; host (host/host_causes.h): host.cpu_throttled, host.cpu_contention,
  // host.blocked_io, host.page_faults, host.swap, host.numa_placement, host.memory_limit, host.oom_kill
  std::string type;
  uint64_t ts_ns = 0;      // CLOCK_MONOTONIC
  std::string device;      // BDF ("0000:3b:00.0"); empty when the source names none we know
  std::string role;        // gpu, nic, switch-port, root-port, ... ("" when not in the topology), host
  std::string label;       // "GPU 0 NVIDIA H100 80GB HBM3", "mlx5_0"
  std::vector<int> ranks;  // ranks using the device or anything below it
  std::string summary;     // one line, for people
  DevicePayload payload;
};

}  // namespace slowburn
