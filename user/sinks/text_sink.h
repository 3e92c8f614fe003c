// Text for people: probe states, a live per-rank table every interval,
// findings culprit first, then libbpf-tools style histograms.
#pragma once

#include <map>
#include <ostream>
#include <vector>

#include "sinks/sink.h"

namespace slowburn {

class TextSink : public Sink {
 public:
  explicit TextSink(std::ostream& out) : out_(out) {}
  void probe_status(const ProbeStatus& status) override;
  void probes_done(size_t attached, size_t processes) override;
  void note(const std::string& text) override;
  void device_event(const DeviceEvent& event) override;
  void window(const WindowReport& report) override;
  void tick(uint64_t now_ns) override;
  void finding(const Finding& finding) override;
  void histogram(const HistogramReport& report) override;
  void communicators(const std::vector<CommunicatorRef>& comms) override;
  void node_clock(const NodeClock& node) override;
  void summary(const SessionSummary& summary) override;
  void verdict(const SessionVerdict& verdict) override;

 private:
  std::ostream& out_;
  std::map<std::pair<std::string, uint32_t>, WindowReport> latest_;  // per (probe, communicator), since the last tick
  std::vector<ProbeStatus> statuses_;                                // until probes_done()
  bool header_done_nodes_ = false;
};

std::string format_window_table(const WindowReport& report);

}  // namespace slowburn
