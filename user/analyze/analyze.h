// slowburn analyze: recordings of one job from many nodes, judged as one
// job. Two passes over the recordings:
//   1. each node's collective releases per (communicator, probe), from
//      which merge/clock_offsets estimates every node's clock offset to the
//      first recording's (node clocks are never trusted);
//   2. every call, on the reference clock, streamed in exit order into the
//      same straggler detector `trace` uses (same rules, same findings, same
//      verdict), with communicators matched across nodes by their key.
// A node whose offset cannot be estimated is left out, said why: lateness
// across nodes means nothing on unknown clocks.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analyze/clock_offsets.h"
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

// The recordings a list of files and directories names, in order: a
// directory gives its *.sbr files, sorted by name.
Result<std::vector<std::filesystem::path>> recordings_in(const std::vector<std::filesystem::path>& inputs);

Result<AnalyzeResult> run_analyze(const AnalyzeOptions& options, Sink& sink);

}  // namespace slowburn
