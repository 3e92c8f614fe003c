// A node event: one type for every hardware, fabric and host signal, with
// the device, its role, the ranks behind it, a line for people and the
// fields its domain measured. Plain data that knows no monitor: the domains
// and sources fill it, detect/ judges it as a cause, sinks print it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace slowburn {

// How grave an event is as a cause of slowness (the metrics' severity label).
enum class EventSeverity { info, warning, error, fatal };
std::string_view event_severity_name(EventSeverity severity);

struct DeviceEvent {
  // xid, sxid, aer, link.downtrained, link.recovered, link.down, pcie.link_event, pci.hotplug;
  // fabric: pfc.pause_storm, ecn.cnp_surge, rdma.retrans, link.flap, link.errors, nic.gone, nic.back,
  // counters.reset; verbs: qp.error, qp.modify_failed, qp.create_failed, qp.destroy_failed, rdma.async;
  // NCCL IB: ib.slow_connection; verbs data path: rdma.slow_qp; host (host/host_causes.h): host.cpu_throttled,
  // host.cpu_contention, host.blocked_io, host.page_faults, host.swap, host.numa_placement, host.memory_limit,
  // host.oom_kill, host.tcp_retrans, host.tcp_rtt
  std::string type;
  uint64_t ts_ns = 0;      // CLOCK_MONOTONIC
  std::string device;      // BDF ("0000:3b:00.0"); empty when the source names none we know
  std::string role;        // gpu, nic, switch-port, root-port, ... ("" when not in the topology), host
  std::string label;       // "GPU 0 NVIDIA H100 80GB HBM3", "mlx5_0"
  std::vector<int> ranks;  // ranks using the device or anything below it
  std::string summary;     // one line, for people
  // The grade of this occurrence where its type alone does not give it (an
  // Xid the catalog calls informational, a correctable AER error, an
  // asynchronous error of a whole NIC); unset: its type does (detect/causes.h).
  std::optional<EventSeverity> severity;
  // The process a host cause is about: rank numbers of two jobs on one node collide.
  std::optional<int32_t> pid;
  // Read back from a recording: how strong a cause it was judged when recorded.
  std::optional<int> cause_rank;
  // The domain's own measurements, flat (JSON lines put them beside the
  // fields above: {"type":"xid","code":79,...}).
  nlohmann::json fields = nlohmann::json::object();
};

}  // namespace slowburn
