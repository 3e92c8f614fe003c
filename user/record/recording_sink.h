// A Sink that writes what a session reports into its recording: the ranks
// and probe states as they attach, windows, findings, device events, the
// communicators, the loss counters and the verdict. The calls themselves
// come through Recorder::call from the consumer, not through a Sink.
#pragma once

#include "record/recorder.h"
#include "sinks/sink.h"

namespace slowburn {

class RecordingSink : public Sink {
 public:
  explicit RecordingSink(Recorder& recorder) : r_(recorder) {}
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
  void summary(const SessionSummary& summary) override;
  void verdict(const SessionVerdict& verdict) override;

 private:
  Recorder& r_;
};

}  // namespace slowburn
