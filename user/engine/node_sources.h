// Everything a session reads of the node beside the collectives, as one
// stream of DeviceEvents: the hardware (Xid, AER, PCIe links, and the
// topology that joins them to ranks), the RDMA path (NIC counters; in a
// trace also libibverbs and NCCL IB in the ranks), the host's side of each
// rank, and the node's ECC/EDAC/MCE activity between a session's start and
// end. Built from one options struct with one set of roots, for `trace` and
// `probe` alike; every source ends in a reported state.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rank_identity.h"
#include "core/roots.h"
#include "events/device_event.h"
#include "loader/ring_buffer.h"
#include "probes/probe_status.h"

namespace slowburn {

class HwMonitor;
class HostMonitor;
class RdmaSources;
class NodeSdcWatch;
class Topology;
class SymbolCache;

struct NodeSourcesOptions {
  Roots roots;
  bool hardware = true;  // Xid, AER, PCIe links, and the topology
  bool rdma = true;      // RDMA NIC counters; attach_rdma adds the ranks' libibverbs and NCCL IB
  bool host = true;      // each rank's CPU, cgroup, memory and I/O (sources/host_monitor.h)
  bool kernel = true;    // the BPF programs (Xid, AER, link tracepoints; sched); off: sysfs and procfs only
  // The node's ECC/EDAC/MCE activity from start() to finish() (a trace;
  // the service's health watch reads the same rows on its own period).
  bool sdc = false;
};

class NodeSources {
 public:
  static Result<std::unique_ptr<NodeSources>> start(const NodeSourcesOptions& options);
  ~NodeSources();

  // The ranks on this node now: the topology says which devices are
  // theirs, the host monitor follows them (started with the first rank,
  // stopped after the last: nothing stays attached without a rank); a rank
  // no longer listed is forgotten.
  void set_ranks(const std::vector<RankIdentity>& ranks);
  // The rank exited: no more readings, but the session's end still judges it.
  void rank_exited(int32_t pid);
  // A trace's RDMA programs in the ranks that load libibverbs or libnccl.
  Result<void> attach_rdma(const std::vector<RankIdentity>& ranks, SymbolCache& symbols);
  // Their ring buffer, to poll with the session's own.
  Result<void> add_rdma_to(const std::function<Result<void>(int fd, RingBufferReader::Handler handler)>& add);
  size_t rdma_attached() const;

  // Events since the last call: the kernel's records (waiting up to
  // timeout_ms; without hardware sources it sleeps that long), then the
  // sysfs pollers, the host and RDMA readings when due, at now_ns plus the
  // time waited. An error stops the
  // hardware sources (stop_hardware) for a caller that goes on without them.
  Result<std::vector<DeviceEvent>> poll(int timeout_ms, uint64_t now_ns);
  void stop_hardware();
  // The session's end: the host's whole-session judgement, the RDMA
  // connections as they ended, and the second SDC reading.
  std::vector<DeviceEvent> finish(uint64_t now_ns);

  // States of the sources started since the last call, and notes (files a
  // poller could not read, an SDC reading that failed).
  std::vector<ProbeStatus> take_statuses();
  std::vector<std::string> take_notes();
  // After finish(): "ECC/EDAC/MCE activity: ..." when an SDC row warned or failed.
  const std::optional<std::string>& sdc_activity() const { return sdc_activity_; }

  // Null without hardware sources.
  const Topology* topology() const { return topology_.get(); }
  std::shared_ptr<const Topology> shared_topology() const { return topology_; }
  const HwMonitor* hardware() const { return hw_.get(); }
  const RdmaSources* rdma() const { return rdma_.get(); }
  // Every source's state as it stands (the metrics' probe states).
  std::vector<ProbeStatus> statuses() const;

 private:
  explicit NodeSources(const NodeSourcesOptions& options);
  Result<void> start_hardware();
  void start_host(const std::vector<RankIdentity>& ranks);

  NodeSourcesOptions o_;
  std::shared_ptr<Topology> topology_;
  std::vector<RankIdentity> ranks_;
  std::unique_ptr<HwMonitor> hw_;
  std::unique_ptr<HostMonitor> host_;
  std::unique_ptr<RdmaSources> rdma_;
  std::unique_ptr<NodeSdcWatch> sdc_;
  std::optional<std::string> sdc_activity_;
  std::vector<ProbeStatus> new_statuses_;
  std::vector<std::string> notes_;
};

}  // namespace slowburn
