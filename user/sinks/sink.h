// Where a tracing session's results go. One interface, two renderings
// (text for people, JSON lines for machines); the session never formats.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "detect/report.h"
#include "detect/straggler.h"
#include "events/device_event.h"
#include "events/histogram_report.h"
#include "probes/probe_status.h"

namespace slowburn {

struct SessionSummary {
  double traced_seconds = 0;
  DetectorCounters detector;       // calls, instances, and what alignment could not use
  uint64_t ringbuf_drops = 0;      // records the kernel could not reserve
  uint64_t decode_rejected = 0;    // records the decoder refused (unknown version, short)
  uint64_t orphan_returns = 0;     // returns without an entry (attached mid-call)
  uint64_t untimed_calls = 0;      // entries the kernel could not store (too many calls in flight)
  size_t communicators = 0;        // told apart, the job-wide one included
  uint64_t recording_dropped = 0;  // analyze: calls the recordings could not keep (their disk fell behind)
  std::vector<Finding> findings;
};

// slowburn analyze: one node of a merged job, and its clock against the
// reference node's (the first recording).
struct NodeClock {
  std::string host;
  std::string recording;  // its file
  std::vector<int> ranks;
  bool reference = false;
  std::optional<int64_t> offset_ns;  // add to the node's timestamps for the reference's clock
  int64_t spread_ns = 0;             // of the matched releases' differences
  size_t matched = 0;                // releases matched with the reference's
  std::string lane;                  // the collective that gave it
  std::string unknown_reason;        // no offset: why (the node is then left out)
  double drift_ppm = 0;              // the offset's drift against the reference (analyze/clock_offsets.h)
  bool closed = true;                // its tracer ended the session (false: killed mid-run, or the node lost)
  size_t prompt_matched = 0;         // of matched, the prompt pairs the offset was fitted on (0: every pair)
  int64_t bound_ns = 0;              // the causal bounds' width it lies in (0: not placed by causality)
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void probe_status(const ProbeStatus& status) = 0;
  // Every probe has reported its state and tracing begins (text prints the
  // states grouped here, and the "Hit Ctrl-C" line).
  virtual void probes_done(size_t attached, size_t processes) = 0;
  virtual void note(const std::string& text) = 0;
  // A link-degradation event (Xid, AER, link state), joined to its ranks.
  virtual void device_event(const DeviceEvent& event) = 0;
  virtual void window(const WindowReport& report) = 0;
  // Called every --interval: text prints its live table here.
  virtual void tick(uint64_t now_ns) = 0;
  virtual void finding(const Finding& finding) = 0;
  virtual void histogram(const HistogramReport& report) = 0;
  // The communicators the session told apart, once, before the summary.
  virtual void communicators(const std::vector<CommunicatorRef>& comms) = 0;
  // analyze: a merged node and its clock offset, before anything else.
  virtual void node_clock(const NodeClock& node) = 0;
  virtual void summary(const SessionSummary& summary) = 0;
  // The session's conclusion, last.
  virtual void verdict(const SessionVerdict& verdict) = 0;
};

}  // namespace slowburn
