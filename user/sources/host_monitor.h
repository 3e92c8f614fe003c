// The host's side of the ranks: reads their signals once a second (the sched
// program's sums, procfs, cgroups), judges each job's ranks over the last
// window and says, as device events of type host.*, the causes that set a
// rank apart (host/host_causes.h): when one starts, and again every
// refresh_s while it holds. Every source ends in a reported state.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "events/device_event.h"
#include "host/host_causes.h"
#include "host/host_reader.h"
#include "probes/probe_status.h"

namespace slowburn {

class SchedProgram;
class Topology;

struct HostMonitorOptions {
  bool sched = true;  // the BPF program; off: procfs and cgroups only
  HostReaderOptions files;
  double window_s = 5;  // judged over this much
  // A rank's TCP retransmissions are judged over the last this much too: a
  // link that starts losing frames is diluted over window_s by the bytes
  // sent before (said 6 s into a loss of 1 in 10 frames, bench/RESULTS.md 30).
  double tcp_window_s = 2;
  double refresh_s = 30;  // a cause that holds is said again this often
  double read_period_s = 1;
  HostThresholds thresholds;
  // Which GPU and NIC is whose, for NUMA placement (host.numa_placement);
  // null: not judged. The CPUs' nodes are read under sysfs_root.
  std::shared_ptr<const Topology> topology;
  std::filesystem::path sysfs_root = "/sys";
};

class HostMonitor {
 public:
  explicit HostMonitor(const HostMonitorOptions& options);
  ~HostMonitor();

  // host.sched (attached, or why not) and host.cgroup (where throttling is read).
  const std::vector<ProbeStatus>& statuses() const { return statuses_; }
  void add_rank(const RankIdentity& rank);
  // It exited: no more readings; its session still counts at finish().
  void rank_exited(int32_t pid);
  // Forgotten (a service that outlives jobs).
  void remove_rank(int32_t pid);
  // When a read is due: reads every rank and judges the last window.
  std::vector<DeviceEvent> poll(uint64_t now_ns);
  // The whole session, judged at its end: causes that held over it and were not said yet.
  std::vector<DeviceEvent> finish(uint64_t now_ns);
  std::vector<std::string> take_notes() { return reader_.take_notes(); }

 private:
  struct Sample {
    HostReading reading;
    std::map<std::pair<int32_t, uint32_t>, CpuShare> shares;  // by (other pid, cpu): sums so far
  };
  struct Rank {
    RankIdentity identity;
    Sample first;
    std::deque<Sample> recent;  // the last window_s and one more
    bool exited = false;
  };
  void read_all(uint64_t now_ns);
  std::vector<HostCause> placement(const Rank& rank) const;
  std::vector<DeviceEvent> judge(uint64_t now_ns, bool whole_session);
  std::vector<HostCause> recent_tcp(const std::string& job, const std::vector<HostCause>& said) const;

  HostMonitorOptions o_;
  HostReader reader_;
  std::unique_ptr<SchedProgram> sched_;
  std::vector<ProbeStatus> statuses_;
  std::map<int32_t, Rank> ranks_;
  std::map<int, int> cpu_nodes_;                              // CPU -> NUMA node
  std::map<std::pair<int32_t, std::string>, uint64_t> said_;  // (pid, type) -> when last said, while it holds
  uint64_t next_read_ns_ = 0;
};

// The interval between two samples of one rank, as the judge takes it.
HostInterval host_interval(const RankIdentity& rank, const HostReading& from, const HostReading& to,
                           const std::vector<CpuShare>& shares);
// A cause as the device event that carries it.
DeviceEvent host_event(const HostCause& cause, uint64_t ts_ns, bool whole_session = false);

}  // namespace slowburn
