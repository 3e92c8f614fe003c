// The straggler detector of the continuous probe mode. The kernel keeps
// cumulative sums per (process, probe) (bpf/collagg.bpf.c) and nothing per
// call, so a window here is the difference of two readings: per rank, its
// calls, mean wait, mean compute gap, mean arrival lateness (after the
// instance's first arrival), and the blame and last arrivals charged to it.
// The tests are the per-call detector's (detect/verdict.h) on those means;
// findings need the same persistence (M of the last N windows).
// Beside the windows, every interval feeds the per-instance sequential test
// (stats/sequential.h) with the kernel's counts of each rank's instances and
// events (collagg.h): a strong straggler is named within an interval or two
// instead of M windows. Pure.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/rank_identity.h"
#include "detect/agg_window_input.h"
#include "detect/aggregate_slow_burn.h"
#include "detect/causes.h"
#include "detect/inside.h"
#include "detect/report.h"
#include "detect/straggler.h"
#include "stats/sequential.h"

namespace slowburn {

class AggregateDetector {
 public:
  AggregateDetector(DetectorConfig config, std::vector<ProbeInfo> probes);

  // Evaluates one window of every job: one report per (job, communicator,
  // probe) with calls, and the findings it raised. Lateness in the reports
  // is relative to the median rank of the communicator on this node.
  DetectorOutput evaluate(uint64_t start_ns, uint64_t end_ns, const std::vector<AggWindowInput>& inputs);
  // Feeds the sequential test with one interval's counts (per (job,
  // communicator, probe) of 3+ ranks on this node: each rank's arrivals and
  // seq_events) and returns the findings of the ranks whose test crossed its
  // threshold. Their findings stand while the test stays in alarm.
  DetectorOutput observe_interval(uint64_t start_ns, uint64_t end_ns, const std::vector<AggWindowInput>& inputs);
  // The process exited: its history and standing finding go; findings stay.
  void remove_rank(int32_t pid);
  // What the node said of a rank's data path (detect/inside.h), weighed in
  // the windows judged after it as trace does: where no rank's CPU is set
  // apart and the communicator's collective is slower than its usual, the
  // ranks it names are judged inside by their data path.
  void transport_evidence(int32_t pid, TransportEvidence evidence);
  // The node said the rank's own cgroup throttled it (causes.h): its minor
  // cost is not withheld as the scheduler's choice where that covers half
  // of the stretch judged.
  void own_cpu_cause(const OwnCpuCause& cause) { slow_burn_.own_cpu_cause(cause); }
  // An event of the node: the two above for each rank it concerns.
  void device_event(const DeviceEvent& event, const std::vector<RankIdentity>& ranks, const ConcernsCulprit& concerns);

  // Standing findings by culprit pid (cleared once no window flags it, or
  // no window judged the rank for persistence_n windows).
  const std::map<int32_t, Finding>& active() const { return active_; }
  const std::vector<Finding>& findings() const { return findings_; }
  // The slow burn's baseline (detect/aggregate_slow_burn.h), for the
  // service's state file, and back after a restart.
  AggSlowBurnState slow_burn_state() const { return slow_burn_.state(); }
  void restore_slow_burn(AggSlowBurnState state) { slow_burn_.restore(std::move(state)); }

 private:
  // Lateness and gap means of the ranks doing the same step (job, probe,
  // communicator size), what each rank is judged against.
  struct Pool {
    std::map<int32_t, double> lateness_ns, gap_ns;
  };
  WindowReport report_for(uint32_t probe_id, uint64_t start_ns, uint64_t end_ns,
                          const std::vector<const AggWindowInput*>& ranks, const Pool& pool) const;
  using GroupKey = std::tuple<std::string, uint32_t, uint32_t>;  // (job, communicator, probe)
  using PoolKey = std::tuple<std::string, uint32_t, int>;        // (job, probe, communicator size)
  // The inputs with calls by (job, communicator, probe), and the pools they are judged against.
  void group(uint64_t start_ns, const std::vector<AggWindowInput>& inputs,
             std::map<GroupKey, std::vector<const AggWindowInput*>>& groups, std::map<PoolKey, Pool>& pools);
  bool sequential_alarm(int32_t pid) const;
  bool slow_burn_standing(int32_t pid) const;
  void judge_slow_burn(uint64_t start_ns, uint64_t end_ns, const std::vector<AggWindowInput>& inputs,
                       DetectorOutput& out);
  void record(Finding f, DetectorOutput& out);
  Finding sequential_finding(const WindowReport& report, const RankWindowStats& evidence, const BernoulliCusum& test,
                             uint64_t end_ns);

  DetectorConfig config_;
  std::map<uint32_t, ProbeInfo> probes_;
  std::map<int32_t, std::deque<bool>> history_;                      // per pid, flagged in the last N windows
  std::map<std::pair<int32_t, uint32_t>, uint64_t> total_blame_ns_;  // (pid, probe)
  // What collectives waited for each rank's CPU (the inside test's cost), (pid, probe).
  std::map<std::pair<int32_t, uint32_t>, uint64_t> total_inside_cost_ns_;
  std::map<int32_t, uint64_t> first_seen_ns_;
  std::map<int32_t, Finding> active_;
  std::map<int32_t, uint64_t> last_evaluated_;                         // pid -> window_index_ when last judged
  std::map<std::pair<GroupKey, int32_t>, BernoulliCusum> sequential_;  // per (group, pid)
  // The collective's own time per (job, communicator, probe): the least
  // mean wait of its ranks, against its earlier windows'.
  std::map<GroupKey, std::pair<InsideBaseline, uint64_t>> inside_baselines_;  // and window_index_ when last fed
  std::map<int32_t, std::multimap<uint64_t, TransportEvidence>> transport_;   // pid -> what the node said, by ts
  std::map<int32_t, std::string> transport_in(const std::vector<const AggWindowInput*>& ranks, uint64_t start_ns,
                                              uint64_t end_ns);
  AggregateSlowBurn slow_burn_;
  std::set<int32_t> slow_burn_said_;  // ranks whose slow-burn finding was said while the rule names them
  std::set<int32_t> withheld_said_;   // ranks whose withheld slow burn was said (once a rank)
  uint64_t window_index_ = 0;
  std::vector<Finding> findings_;
};

}  // namespace slowburn
