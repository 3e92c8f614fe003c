// slowburn analyze: recordings of one job from many nodes, judged as one
// job, in three stages with one owner each:
//   recording set   (analyze/recording_set)   which nodes hold the job, its ranks' merged pids
//   clock placement (analyze/clock_placement) every node's clock offset to the first
//                                             recording's, from the data (node clocks are
//                                             never trusted)
//   merged replay   (analyze/merged_replay)   every call on the reference clock, in exit
//                                             order, through the job judges `trace` uses
//                                             (engine/job_judges: same rules, same findings,
//                                             same verdict), explained by the culprit's node's
//                                             recorded events (engine/finding_explainer)
// A node whose offset cannot be estimated is left out, said why: lateness
// across nodes means nothing on unknown clocks.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analyze/clock_offsets.h"
#include "analyze/recording_set.h"
#include "core/error.h"
#include "detect/straggler.h"
#include "sinks/perfetto_sink.h"
#include "sinks/sink.h"

namespace slowburn {

struct AnalyzeOptions {
  std::vector<std::filesystem::path> inputs;  // recordings, or directories of them (*.sbr)
  std::optional<std::string> job;             // the job to judge, when the recordings hold several
  DetectorConfig detector;
  OffsetSearch offsets;
  // Also every call, on the merged clock, to this timeline (which the sink
  // given to run_analyze should include for findings and windows).
  PerfettoSink* timeline = nullptr;
};

struct AnalyzeResult {
  std::vector<NodeClock> nodes;
  SessionSummary summary;
  SessionVerdict verdict;
  std::vector<CommunicatorRef> communicators;
  // The judged nodes' recorded events and node-wide sources (the detail
  // prefixed with the node): what `investigate --from` walks the layers with.
  std::vector<DeviceEvent> device_events;
  std::vector<ProbeStatus> sources;
};

Result<AnalyzeResult> run_analyze(const AnalyzeOptions& options, Sink& sink);

}  // namespace slowburn
