// A timeline for Perfetto UI and chrome://tracing (Chrome's JSON
// trace-event format): one process per node, one track per rank and
// communicator, each collective call a slice (its wait: compute gaps are
// the space between slices), findings as instant events on the culprit's
// node, hardware events on their node, and each rank's arrival lateness per
// window as a counter track. Calls come through call() (the session's or
// analyze's call tap), the rest as a Sink. Tracks never hold overlapping
// slices: a call that overlaps the one before on its track (two worker
// threads of one process group) goes to a spill track of its own.
// Timestamps are the session's CLOCK_MONOTONIC in microseconds (in analyze,
// the reference node's): small enough for a double to keep nanoseconds; the
// trace's metadata says how to turn them into wall time.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "events/call_event.h"
#include "sinks/sink.h"

namespace slowburn {

class PerfettoSink : public Sink {
 public:
  // `wall_offset_ns`: CLOCK_REALTIME - CLOCK_MONOTONIC of the clock the
  // timestamps are on; `default_node`: the node of ranks that name none,
  // or of every rank when `one_node` (trace: its ranks' host is the real
  // hostname, the node is what --host says).
  static Result<std::unique_ptr<PerfettoSink>> create(const std::string& path, int64_t wall_offset_ns,
                                                      std::string default_node, bool one_node = false);
  ~PerfettoSink() override;

  void rank(const RankIdentity& identity);
  void call(const CallEvent& call, const CallComm& comm, const std::string& probe);

  void probe_status(const ProbeStatus& status) override;
  void probes_done(size_t, size_t) override {}
  void note(const std::string&) override {}
  void device_event(const DeviceEvent& event) override;
  void window(const WindowReport& report) override;
  void tick(uint64_t) override {}
  void finding(const Finding& finding) override;
  void histogram(const HistogramReport&) override {}
  void communicators(const std::vector<CommunicatorRef>&) override {}
  void node_clock(const NodeClock&) override {}
  void summary(const SessionSummary&) override {}
  // Writes the last events and closes the file.
  void verdict(const SessionVerdict& verdict) override;
  // Closes the file if still open; the first write error, if any (a full
  // disk must not leave a truncated timeline said to be written).
  Result<void> close();

 private:
  PerfettoSink() = default;
  struct Track {
    int tid = 0;
    uint64_t busy_until_ns = 0;
  };
  int process_of(const std::string& node);
  std::string node_of(const std::string& host) const;
  int track_of(int32_t pid, uint32_t comm_id, const std::string& comm_label, uint64_t entry_ns, uint64_t exit_ns);
  double us(uint64_t ns) const;
  void emit(const std::string& event);
  void instant(const std::string& node, uint64_t ts_ns, const std::string& name, const std::string& args_json);

  std::ofstream out_;
  std::string path_;
  int64_t wall_offset_ns_ = 0;
  std::string default_node_;
  bool one_node_ = false;
  bool first_event_ = true;
  bool closed_ = false;
  std::map<std::string, int> processes_;
  std::map<int32_t, RankIdentity> ranks_;
  // (pid, communicator) -> its tracks, the first and its spills
  std::map<std::pair<int32_t, uint32_t>, std::vector<Track>> tracks_;
  int next_tid_ = 1;
};

}  // namespace slowburn
