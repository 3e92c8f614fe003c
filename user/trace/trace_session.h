// An ad-hoc tracing session, as a pipeline of stages with one owner each:
//   discover (engine/discover)          -> the rank processes
//   resolve + attach (loader/attach_probes) -> the call-pair probes in each rank
//   consume (engine/call_stream)        -> decoded calls
//   align + judge (engine/job_judges, comm/comm_registry, detect/)
//   explain (engine/finding_explainer)  -> each finding's likely causes
//   report (the Sink)                   -> tables, findings, histograms, verdict
// with the node's sources beside them (engine/node_sources). It runs until
// the duration ends, a stop is requested (SIGINT/SIGTERM) or every rank
// has exited; then histograms, the communicators, the loss accounting and
// the verdict.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "detect/straggler.h"
#include "engine/node_sources.h"
#include "events/call_event.h"
#include "events/device_event.h"
#include "events/process_view.h"
#include "sinks/sink.h"

namespace slowburn {

class Topology;

struct TraceOptions {
  std::vector<int32_t> pids;                // empty: every rank process on the node
  std::vector<std::string> probe_patterns;  // empty: the whole catalog
  std::optional<std::string> library;       // attach in this file instead of what the ranks mapped
  double duration_s = 0;                    // 0: until stopped
  double interval_s = 1.0;                  // live table period
  DetectorConfig detector;
  bool stop_on_finding = false;
  // The node's sources, joined to the ranks and offered as the likely cause
  // of a finding on them: link-degradation events (Xid, AER, PCIe links),
  // the RDMA path (NIC counters; QP errors from libibverbs and NCCL IB
  // per-connection latency in the ranks that load those libraries), the
  // host's side of each rank, and (always, in a trace) the node's ECC/EDAC/MCE
  // activity between the session's start and end.
  NodeSourcesOptions node;
  // Where every collective call also goes, with its communicator, and every
  // reading of the calls in flight (a recording, a timeline); unset: nowhere.
  std::function<void(const CallEvent&, const CallComm&)> on_call;
  std::function<void(uint64_t now_ns, const std::vector<InFlightCall>&)> on_in_flight;
  // And, at each such reading, the kernel's view of every live rank (CPU
  // counted since the oldest call in flight): what analyze judges a hang by.
  std::function<void(uint64_t now_ns, const std::map<int32_t, ProcessView>&)> on_process_views;
  // And how each rank ended, where the kernel said.
  std::function<void(int32_t pid, const ProcessEnd&)> on_rank_end;
};

struct TraceResult {
  SessionSummary summary;
  SessionVerdict verdict;
  std::vector<RankIdentity> ranks;
  size_t attached = 0;                          // (probe, rank) pairs attached
  size_t collectives_attached = 0;              // of them, collective probes (mpi.*, nccl.*, gloo.*)
  std::optional<double> first_finding_after_s;  // since the probes were attached
  std::vector<DeviceEvent> device_events;
  std::vector<CommunicatorRef> communicators;
  // Which device is whose (null: hardware events off): what joins an event to a culprit.
  std::shared_ptr<const Topology> topology;
};

// Runs a whole session. An error when nothing could be attached or traced
// (the error says what the ranks load and what to try).
Result<TraceResult> run_trace(const TraceOptions& options, Sink& sink, const std::atomic<bool>& stop);

}  // namespace slowburn
