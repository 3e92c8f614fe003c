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

// Everything to two sinks, in order: what the user reads and the recording.
class TeeSink : public Sink {
 public:
  TeeSink(Sink& first, Sink& second) : a_(first), b_(second) {}
  void probe_status(const ProbeStatus& s) override { a_.probe_status(s), b_.probe_status(s); }
  void probes_done(size_t attached, size_t processes) override {
    a_.probes_done(attached, processes), b_.probes_done(attached, processes);
  }
  void note(const std::string& text) override { a_.note(text), b_.note(text); }
  void device_event(const DeviceEvent& e) override { a_.device_event(e), b_.device_event(e); }
  void window(const WindowReport& w) override { a_.window(w), b_.window(w); }
  void tick(uint64_t now_ns) override { a_.tick(now_ns), b_.tick(now_ns); }
  void finding(const Finding& f) override { a_.finding(f), b_.finding(f); }
  void histogram(const HistogramReport& h) override { a_.histogram(h), b_.histogram(h); }
  void communicators(const std::vector<CommunicatorRef>& c) override { a_.communicators(c), b_.communicators(c); }
  void node_clock(const NodeClock& n) override { a_.node_clock(n), b_.node_clock(n); }
  void summary(const SessionSummary& s) override { a_.summary(s), b_.summary(s); }
  void verdict(const SessionVerdict& v) override { a_.verdict(v), b_.verdict(v); }

 private:
  Sink& a_;
  Sink& b_;
};

}  // namespace slowburn
