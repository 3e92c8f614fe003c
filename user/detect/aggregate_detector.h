// The straggler detector of the continuous probe mode. The kernel keeps
// cumulative sums per (process, probe) (bpf/collagg.bpf.c) and nothing per
// call, so a window here is the difference of two readings: per rank, its
// calls, mean wait, mean compute gap, mean arrival lateness (after the
// instance's first arrival), and the blame and last arrivals charged to it.
// The tests are the per-call detector's (detect/verdict.h) on those means;
// findings need the same persistence (M of the last N windows). Pure.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/rank_identity.h"
#include "detect/report.h"
#include "detect/straggler.h"
#include "events/agg_counts.h"

namespace slowburn {

// One (process, probe, communicator) over one window: differences of the
// kernel's sums.
struct AggWindowInput : AggCounts {
  RankIdentity identity;  // job, rank, pid
  uint32_t probe_id = 0;
  CommunicatorRef comm;  // null: not told apart
  std::optional<int> comm_rank;
};

class AggregateDetector {
 public:
  AggregateDetector(DetectorConfig config, std::vector<ProbeInfo> probes);

  // Evaluates one window of every job: one report per (job, communicator,
  // probe) with calls, and the findings it raised. Lateness in the reports
  // is relative to the median rank of the communicator on this node.
  DetectorOutput evaluate(uint64_t start_ns, uint64_t end_ns, const std::vector<AggWindowInput>& inputs);
  // The process exited: its history and standing finding go; findings stay.
  void remove_rank(int32_t pid);

  // Standing findings by culprit pid (cleared once no window flags it, or
  // no window judged the rank for persistence_n windows).
  const std::map<int32_t, Finding>& active() const { return active_; }
  const std::vector<Finding>& findings() const { return findings_; }

 private:
  // Lateness and gap means of the ranks doing the same step (job, probe,
  // communicator size), what each rank is judged against.
  struct Pool {
    std::map<int32_t, double> lateness_ns, gap_ns;
  };
  WindowReport report_for(uint32_t probe_id, uint64_t start_ns, uint64_t end_ns,
                          const std::vector<const AggWindowInput*>& ranks, const Pool& pool) const;

  DetectorConfig config_;
  std::map<uint32_t, ProbeInfo> probes_;
  std::map<int32_t, std::deque<bool>> history_;                      // per pid, flagged in the last N windows
  std::map<std::pair<int32_t, uint32_t>, uint64_t> total_blame_ns_;  // (pid, probe)
  std::map<int32_t, uint64_t> first_seen_ns_;
  std::map<int32_t, Finding> active_;
  std::map<int32_t, uint64_t> last_evaluated_;  // pid -> window_index_ when last judged
  uint64_t window_index_ = 0;
  std::vector<Finding> findings_;
};

}  // namespace slowburn
