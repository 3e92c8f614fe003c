// The detector's state, shared by its two source files (straggler.cpp:
// calls, lanes, instances, hangs; straggler_windows.cpp: windows, findings,
// the verdict). Not for use outside them.
#pragma once

#include <linux/types.h>  // __u64: the state sb_leave_allowance (slowburn/instance_rules.h) updates

#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "detect/inside.h"
#include "detect/straggler.h"
#include "stats/sequential.h"

namespace slowburn {

// One aligned instance as the sequential test saw it: the evidence a
// sequential finding reports (over the instances of the test's run).
struct SequentialInstance {
  uint64_t release_ns = 0;
  uint64_t step_ns = 0;  // since the lane's previous release
  int32_t last_pid = 0;
  uint64_t blame_ns = 0;
  uint64_t blame_leaving_ns = 0;
  std::vector<std::pair<int32_t, double>> lateness_ns;  // every member's entry - median entry
};

// The collectives that give a member its position on a communicator (and
// that a hang can wait in): those every member calls and that wait for the
// others (a broadcast's receivers wait for its root).
inline bool counts_position(CallKind kind) { return kind == CallKind::synchronizing || kind == CallKind::rooted; }

// A rank's typical step counts as still longer than its peers' (the
// verdict's scheduler's-choice test) where its compute-gap CUSUM rose in at
// least kGapRisesNeeded of its latest kGapRiseWindows judged windows (2.5 s
// at the default 500 ms windows). Healthy ranks on 2 CPUs step up by a
// capped +4.5 in one window and drain for the next dozen (one reached 17.1
// in 26 s that way); a rank computing 1.1x rose in every window.
inline constexpr size_t kGapRiseWindows = 5;
inline constexpr size_t kGapRisesNeeded = 4;

struct StragglerDetector::Lane {
  ProbeInfo info;
  CommunicatorRef comm;
  std::optional<CollectiveAligner> aligner;  // lanes whose calls align across ranks
  uint64_t first_call_ns = 0;                // members learnt from calls settle after this
  std::set<int32_t> seen;                    // ranks that called on it
  std::map<int32_t, std::optional<int>> comm_ranks;
  std::map<int32_t, Cusum> cusum;
  // Its CUSUM's statistic after each of its latest judged windows (the
  // newest last, kGapRiseWindows + 1 kept): whether it still rises.
  std::map<int32_t, std::deque<double>> gap_cusum_recent;
  // Windows in which the window rule flagged each rank on this lane.
  std::map<int32_t, int> total_flagged;
  std::map<int32_t, uint64_t> total_blame_ns;
  std::map<int32_t, uint64_t> total_lasts;             // instances it arrived last in
  std::map<int32_t, uint64_t> total_blame_leaving_ns;  // of total_blame_ns: from leaving its previous collective late
  uint64_t total_judged_instances = 0;                 // instances with a last and a runner-up
  std::map<int32_t, InsideSums> total_inside;          // its calls' CPU times over the session
  std::map<int32_t, uint64_t> total_seq_events;        // of those, with the sequential test's event
  std::map<int32_t, __u64> usual_leave_ns;             // its usual time to leave after the release (sb_leave_allowance)
  std::map<int32_t, BernoulliCusum> sequential;
  uint64_t last_release_ns = 0;
  std::deque<SequentialInstance> recent;  // the latest instances, for sequential findings' evidence
  // From the last arrival to the release, per message size: its usual (detect/inside.h).
  std::map<uint64_t, InsideBaseline> inside_baselines;
  std::map<int32_t, uint64_t> total_inside_cost_ns;  // what the collective waited for each rank's CPU
  // Windows in which the collective itself was slower (after its last
  // arrival, 2x its usual) and no rank's CPU set it apart; said once
  // per run of them.
  std::deque<bool> slow_for_all;
  bool slow_for_all_said = false;

  // Whether its members are known up front (the job, or read / created);
  // else they are learnt from the calls during settle_ns.
  bool members_known() const { return !comm || comm->source == CommSource::job || comm->local_pids.has_value(); }
};

// A communicator's standing hang: whom it named, and its findings.
struct StragglerDetector::CommHang {
  std::set<int32_t> named;             // culprits and mismatched members reported
  std::map<int32_t, size_t> findings;  // member -> its finding in findings_
  bool noted = false;                  // said that nobody could be named
};

struct StragglerDetector::RankAccum {
  uint64_t calls = 0;
  std::vector<double> waits_ns;
  uint64_t instances = 0;
  std::vector<double> lateness_ns;
  std::vector<double> gaps_ns;
  double blame_ns = 0;
  double blame_leaving_ns = 0;  // the part of blame_ns from leaving its previous collective late
  uint64_t last_count = 0;
  // Its sequential test after the instances released in this window: the
  // highest statistic, and whether it was in alarm after any of them.
  std::optional<double> sequential_max;
  bool sequential_alarm = false;
  InsideSums inside;  // its aligned calls' CPU times
};

struct StragglerDetector::LaneAccum {
  uint64_t instances = 0;
  std::map<int32_t, RankAccum> ranks;
  // Each instance's time from its last arrival to its release, by message size.
  std::map<uint64_t, std::vector<double>> after_last_arrival_ns;
  // Beside each of those: how long each rank stayed after the release
  // (its exit - the first exit), where it stayed at all.
  std::map<uint64_t, std::vector<std::vector<std::pair<int32_t, double>>>> stays_after_release_ns;
  uint64_t after_last_arrival_total_ns = 0;
};

// A window's best evidence for one rank, over its lanes: the arrival tests,
// the CUSUM's, and the inside test's.
struct StragglerDetector::WindowBest {
  Mark mark;
  const WindowReport* report = nullptr;
  const RankWindowStats* evidence = nullptr;
  const WindowReport* cusum_report = nullptr;
  const RankWindowStats* cusum_evidence = nullptr;
  const WindowReport* inside_report = nullptr;
  const RankWindowStats* inside_evidence = nullptr;
};

struct StragglerDetector::Window {
  uint64_t index = 0;
  std::map<LaneKey, LaneAccum> lanes;
};

// A finding's life: from the window it was raised in until the rank has
// been clear for persistence_n windows.
struct StragglerDetector::Run {
  size_t finding = 0;  // index into findings_
  uint64_t start_ns = 0;
  uint64_t last_flagged_end_ns = 0;
  int evaluated = 0;
  int flagged = 0;
  double cost_ns = 0;  // its blame in the windows of the run
  bool open = true;
  uint64_t tracked_end_ns = 0;  // the end of the last window it counted
};

}  // namespace slowburn
