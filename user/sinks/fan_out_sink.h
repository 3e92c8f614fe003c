// Everything to several sinks, in order: what the user reads, the
// recording, the timeline.
#pragma once

#include <vector>

#include "sinks/sink.h"

namespace slowburn {

class FanOutSink : public Sink {
 public:
  explicit FanOutSink(std::vector<Sink*> sinks) : sinks_(std::move(sinks)) {}
  void probe_status(const ProbeStatus& s) override {
    each([&](Sink& k) { k.probe_status(s); });
  }
  void probes_done(size_t attached, size_t processes) override {
    each([&](Sink& k) { k.probes_done(attached, processes); });
  }
  void note(const std::string& text) override {
    each([&](Sink& k) { k.note(text); });
  }
  void device_event(const DeviceEvent& e) override {
    each([&](Sink& k) { k.device_event(e); });
  }
  void window(const WindowReport& w) override {
    each([&](Sink& k) { k.window(w); });
  }
  void tick(uint64_t now_ns) override {
    each([&](Sink& k) { k.tick(now_ns); });
  }
  void finding(const Finding& f) override {
    each([&](Sink& k) { k.finding(f); });
  }
  void histogram(const HistogramReport& h) override {
    each([&](Sink& k) { k.histogram(h); });
  }
  void communicators(const std::vector<CommunicatorRef>& c) override {
    each([&](Sink& k) { k.communicators(c); });
  }
  void node_clock(const NodeClock& n) override {
    each([&](Sink& k) { k.node_clock(n); });
  }
  void summary(const SessionSummary& s) override {
    each([&](Sink& k) { k.summary(s); });
  }
  void verdict(const SessionVerdict& v) override {
    each([&](Sink& k) { k.verdict(v); });
  }

 private:
  template <typename F>
  void each(F&& f) {
    for (Sink* s : sinks_) f(*s);
  }
  std::vector<Sink*> sinks_;
};

}  // namespace slowburn
