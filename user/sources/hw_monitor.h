// The node's hardware signals as one stream of DeviceEvents: Xid (driver
// tracepoint, else the kernel log filtered in the kernel), AER (tracepoint
// where the kernel has it, and sysfs counters), PCIe link state (sysfs
// poller; link and hotplug tracepoints on v7.0+). Every source ends in a
// reported state: attached, or unavailable with the precise reason.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "core/error.h"
#include "events/device_event.h"
#include "pcie/link.h"
#include "probes/probe_status.h"
#include "rdma/fabric_monitor.h"
#include "rdma/fabric_sampler.h"
#include "sources/device_events.h"
#include "sysfs/topology.h"
#include "tracefs/format.h"

namespace slowburn {

class KmsgXidProgram;
class TpRecordProgram;
class RingBufferReader;
class EventDecoder;
struct TpRecord;

struct HwMonitorOptions {
  bool xid = true;
  bool aer = true;
  bool link = true;
  std::vector<ExpectationRule> expectations;
  std::filesystem::path sysfs_root = "/sys";
  std::filesystem::path proc_root = "/proc";
  bool kernel_sources = true;  // BPF programs; off when replaying a captured tree
  // RDMA NIC counters (sysfs counters/hw_counters, ethtool statistics of
  // their netdevs): off by default, the hardware tools watch their own
  // signal; trace and `slowburn fabric` turn it on.
  bool fabric = false;
  FabricThresholds fabric_thresholds;
  std::vector<std::string> fabric_nics;     // only these RDMA devices / netdevs (empty: all)
  std::vector<std::string> fabric_netdevs;  // plain interfaces to watch too (ethtool only)
  std::filesystem::path ethtool_dir;        // replay: `ethtool -S` captures by interface name
  double poll_interval_s = 1.0;
};

struct HwCounters {
  uint64_t kmsg_lines_seen = 0;     // kernel log lines the filter ran on
  uint64_t kmsg_lines_matched = 0;  // passed to user space as Xid lines
  uint64_t kmsg_drops = 0;
  uint64_t tp_records = 0;
  uint64_t tp_drops = 0;
  uint64_t unparsed = 0;  // records or lines that matched but could not be decoded
};

struct LinkRow {
  const TopologyDevice* device = nullptr;
  LinkReading reading;  // the latest
  LinkStatus status = LinkStatus::unknown;
  LinkExpectation expected;
  std::vector<int> ranks;  // behind it
};

class HwMonitor {
 public:
  static Result<std::unique_ptr<HwMonitor>> start(const HwMonitorOptions& options,
                                                  std::shared_ptr<const Topology> topology);
  ~HwMonitor();

  const std::vector<ProbeStatus>& statuses() const { return statuses_; }
  // Records ready in the kernel (waiting up to timeout_ms), then the sysfs
  // pollers when their period is due (always on the first call).
  Result<std::vector<DeviceEvent>> poll(int timeout_ms, uint64_t now_ns);
  HwCounters counters() const;
  std::vector<LinkRow> link_table() const;
  // The latest interval of every NIC port (fabric source).
  const std::vector<NicRates>& fabric_rates() const { return fabric_.rates(); }
  // Per-device notes from the pollers (unreadable or malformed files), each once.
  std::vector<std::string> take_notes() { return fabric_.take_new_notes(); }
  const Topology& topology() const { return *topology_; }

 private:
  HwMonitor(const HwMonitorOptions& options, std::shared_ptr<const Topology> topology);
  void status(const std::string& source, ProbeState state, const std::string& detail);
  Result<void> start_kernel_sources();
  void start_sysfs_pollers();
  void start_fabric_poller();
  Result<void> add_reader(int fd, std::function<void(std::span<const std::byte>)> handler);
  void on_tp_record(const TpRecord& record);
  void poll_sysfs();

  HwMonitorOptions options_;
  std::shared_ptr<const Topology> topology_;
  DeviceEventBuilder builder_;
  std::vector<ProbeStatus> statuses_;
  std::unique_ptr<KmsgXidProgram> kmsg_;
  std::unique_ptr<TpRecordProgram> tp_;
  std::unique_ptr<EventDecoder> decoder_;
  std::unique_ptr<RingBufferReader> reader_;
  std::map<uint32_t, TracepointFormat> formats_;  // by enum sb_tp_source
  LinkMonitor links_;
  FabricMonitor fabric_;
  std::optional<FabricSamplerOptions> fabric_sampler_;  // set when the fabric source runs
  AerCounterMonitor aer_counters_;
  std::vector<std::string> link_devices_, aer_devices_;
  std::map<std::string, LinkReading> last_readings_;
  std::set<std::string> silent_link_ends_;  // ports whose link the device below reports
  std::vector<DeviceEvent> pending_;
  uint64_t next_sysfs_poll_ns_ = 0;
  uint64_t unparsed_ = 0;
};

}  // namespace slowburn
