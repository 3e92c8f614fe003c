// analyze's second pass: every recorded call of the placed nodes, moved
// onto the reference's clock and streamed in exit order through the same
// job judges a live trace uses (same rules, same findings, same verdict),
// with communicators matched across nodes by their key.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyze/recording_set.h"
#include "core/error.h"
#include "engine/job_judges.h"
#include "sinks/perfetto_sink.h"

namespace slowburn {

struct PlacedNode {
  const NodeRecording* node = nullptr;
  int64_t shift_ns = 0;  // its CLOCK_MONOTONIC -> the reference's, at anchor_ns
  // The clocks' drift (analyze/clock_offsets.h): the shift grows by
  // drift_ppm ns per ms of its monotonic clock from anchor_ns.
  double drift_ppm = 0;
  int64_t anchor_ns = 0;
  // A time of its CLOCK_MONOTONIC on the reference's.
  uint64_t to_reference(uint64_t node_ns) const {
    auto t = static_cast<int64_t>(node_ns);
    return static_cast<uint64_t>(t + shift_ns +
                                 static_cast<int64_t>(drift_ppm * 1e-6 * static_cast<double>(t - anchor_ns)));
  }
};

struct ReplaySpan {
  uint64_t first_ns = 0;  // the first call's exit, on the reference's clock
  uint64_t last_ns = 0;   // the latest exit, or the last reading of the calls in flight
};

class MergedReplay {
 public:
  static constexpr uint64_t kAdvancePeriodNs = 100'000'000;  // as a live session advances its judges

  explicit MergedReplay(std::vector<PlacedNode> nodes);

  // Every call into `judges` (and `timeline`, when given); the judges
  // advance every kAdvancePeriodNs of job time and their output goes to `emit`.
  Result<ReplaySpan> replay(JobJudges& judges, PerfettoSink* timeline, const std::function<void(DetectorOutput)>& emit);
  // The judges see nothing after this time of the reference's clock (the
  // timeline still does), and check_in_flight judges no wait: where a
  // node's recording was cut short, its ranks are unseen after it, and a
  // collective judged without them would blame one of the ranks still seen.
  void stop_at(uint64_t reference_ns) { stop_ns_ = reference_ns; }
  // What was still inside a collective when each node last looked, judged
  // at the earliest of those readings (a later entry on one node is not yet
  // a wait on another's); span.last_ns moves up to it.
  DetectorOutput check_in_flight(JobJudges& judges, ReplaySpan& span) const;
  // The ranks whose end their node recorded leave the judges in the order
  // they ended (on the reference clock): the failures, the first first.
  DetectorOutput retire_ended(JobJudges& judges) const;
  // The communicators, by id (the job-wide one keeps 0).
  std::vector<CommunicatorRef> communicators() const;

 private:
  struct Stream;
  CallComm merged_comm(const NodeRecording& node, const RecordedCall& call);
  CallEvent merged_call(const PlacedNode& placed, const RecordedCall& call, const ProbeSpec& spec);

  std::vector<PlacedNode> nodes_;
  std::map<std::string, CommunicatorRef> comms_;  // by key
  uint32_t next_lone_id_ = 1;
  std::map<std::pair<const NodeRecording*, uint32_t>, uint32_t> tids_;  // (node, tid) -> the merged job's
  uint32_t next_tid_ = 1u << 30;
  std::optional<uint64_t> stop_ns_;
};

}  // namespace slowburn
