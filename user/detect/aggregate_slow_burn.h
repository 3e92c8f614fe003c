// The slow burn (detect/session_cost.h) in the probe mode. The windows'
// rules name a rank whose blame is 10%+ of a window; a rank that costs the
// job 1-10% is lost in its peers' noise window by window, and found only
// in totals summed over a long stretch. Per (job, communicator, probe)
// lane, each local rank's lasts, blame and CPU times are summed over the
// windows the service saw: for hours to days, and across a restart of the
// service (the totals are its state, kept in a file by the service, so a
// baseline is not lost with the process). Judged once a minute over the
// lane's whole baseline and over its latest ten minutes (a cost that began
// late, or a ramp), with the same judgement as trace's; "since when" from
// the lane's cost history (detect/cost_onset.h). A rank's cost is its own
// lateness, as trace's: its blame less the part the kernel says leaving
// its previous collective late explains (blame_leaving_ns).
//
// A drift (issue 30: a ramp named before it passes 1.04x) is named under
// the floor, down to half of it, as trace names it: on the latest two to
// three minutes, where the rank's step grows against its peers' (an upper
// CUSUM of its window's mean compute gap over its peers' median, a share
// of the step, alarmed and rising, its alarm raised within ten minutes of
// the onset) and its cost began at a dated moment. The kernel
// keeps a window's gap sum, not its median: one long gap (a descheduled
// step) moves the mean, so the gap evidence here lifts no scheduler's-
// choice withholding, as trace's median does. Pure: windows in, findings
// out.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "detect/agg_window_input.h"
#include "detect/own_cpu_causes.h"
#include "detect/report.h"
#include "detect/session_cost.h"
#include "detect/straggler.h"

namespace slowburn {

// A rank's own cost, cumulative, at one moment of its lane's history.
struct AggCostPoint {
  uint64_t at_ns = 0;                                // monotonic
  uint64_t traced_ns = 0;                            // the lane's traced time then
  std::vector<std::pair<int32_t, uint64_t>> own_ns;  // per pid, sorted
};

// A lane's baseline: what survives a restart. Keyed by names, not by this
// process's numbers (probe ids and communicator slots are made again).
struct AggSlowBurnLane {
  std::string job;
  std::string comm_key;  // CommunicatorInfo::key
  std::string probe;
  uint64_t first_ns = 0;  // monotonic: the lane's first window with calls
  // Its totals: at_ns its latest window's end, traced_ns its windows' time
  // summed (the time the service was down is not traced), instances and
  // each rank's sums.
  LaneSnapshot totals;
  std::deque<LaneSnapshot> kept;     // starts of the latest stretch, one a minute while it moves
  std::vector<AggCostPoint> points;  // its cost history, evenly spaced (stride_ns)
  uint64_t stride_ns = 0;
  // Per pid, the CUSUM statistic of its compute gap over its peers'
  // (DetectorConfig's cusum_* units): a drift's evidence outlives a restart.
  std::map<int32_t, double> gap_cusum;
  // Per pid, when that statistic last rose past the decision (monotonic;
  // absent while it is under it).
  std::map<int32_t, uint64_t> gap_alarmed_ns;
};

struct AggSlowBurnState {
  std::vector<AggSlowBurnLane> lanes;
};

class AggregateSlowBurn {
 public:
  // config: its session_cost_thresholds and the compute-gap CUSUM's scale
  // (cusum_unit_share, cusum_allowance, cusum_decision), trace's own.
  AggregateSlowBurn(const DetectorConfig& config, std::vector<ProbeInfo> probes);

  // One window: the inputs of synchronizing probes on named communicators
  // are summed into their lanes.
  void add(uint64_t start_ns, uint64_t end_ns, const std::vector<AggWindowInput>& inputs);
  // Once a minute: the ranks each lane's totals (or its latest stretch)
  // name. named() holds every rank the rule names as of the last look.
  void judge(uint64_t now_ns);
  const std::map<int32_t, Finding>& named() const { return named_; }
  // The ranks every test named but whose minor cost is the scheduler's
  // choice (every member of their lane waits for a CPU as much), per rank
  // its costliest such lane, where no lane names it.
  const std::map<int32_t, Withheld>& withheld() const { return withheld_; }
  // The process exited: it leaves its lanes, and a lane with none left goes.
  void remove_rank(int32_t pid);
  // The node said the rank's own cgroup throttled it: off the run queue,
  // it is not withheld as the scheduler's choice on a stretch the saying
  // covers half of (detect/own_cpu_causes.h).
  void own_cpu_cause(const OwnCpuCause& cause) { own_cpu_causes_.said(cause); }

  AggSlowBurnState state() const;
  // A saved baseline (the service keeps only ranks still alive): its lanes
  // go on from their totals when their ranks are seen again.
  void restore(AggSlowBurnState state);

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // (job, communicator key, probe)
  struct Lane {
    AggSlowBurnLane saved;
    // Learnt from this process's windows (not saved): a restored lane is
    // judged once it is seen again.
    CommunicatorRef comm;
    std::map<int32_t, RankIdentity> identities;
    std::map<int32_t, int> comm_ranks;
    std::map<int32_t, std::deque<double>> gap_recent;  // its CUSUM after each of its latest windows
  };
  void keep_history(Lane& lane);
  void add_gap_excess(Lane& lane, uint64_t end_ns, uint64_t elapsed_ns,
                      const std::vector<const AggWindowInput*>& ranks) const;
  bool gap_grows_since(const Lane& lane, int32_t pid, uint64_t onset_ns, bool named_so) const;
  struct Judged {
    Finding finding;
    bool withheld = false;  // the scheduler's choice (detect/session_cost.h)
    RunqShares shares;
  };
  std::optional<Judged> judge_lane(const Lane& lane, uint64_t now_ns) const;
  std::optional<CostOnset> onset_of(const Lane& lane, int32_t pid, double floor_share) const;

  SessionCostThresholds thresholds_;
  double gap_unit_share_ = 0, gap_allowance_ = 0, gap_decision_ = 0;
  std::map<uint32_t, ProbeInfo> probes_;
  std::map<Key, Lane> lanes_;
  std::map<int32_t, Finding> named_;
  std::map<int32_t, Withheld> withheld_;
  OwnCpuCauses own_cpu_causes_;              // not kept across a restart: see own_cause in judge_lane
  std::optional<uint64_t> watched_from_ns_;  // this process's first window
  uint64_t looked_ns_ = 0;
};

}  // namespace slowburn
