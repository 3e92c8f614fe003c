// JSON lines for machines: one object per line, kind in {status, window,
// finding, hist}, each with ts (Unix seconds), host and rank identity.
#pragma once

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>

#include "sinks/sink.h"

namespace slowburn {

class JsonSink : public Sink {
 public:
  // wall_offset_ns: CLOCK_REALTIME - CLOCK_MONOTONIC, to put kernel
  // timestamps (bpf_ktime_get_ns) on the wall clock.
  JsonSink(std::ostream& out, std::string host, int64_t wall_offset_ns)
      : out_(&out), host_(std::move(host)), wall_offset_ns_(wall_offset_ns) {}
  // Each line as an object, not printed: for callers that hand the same
  // objects on inside another document (slowburn mcp's tool results).
  using LineHandler = std::function<void(const nlohmann::json& line)>;
  JsonSink(LineHandler on_line, std::string host, int64_t wall_offset_ns);
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
  void write(const nlohmann::json& line, bool flush);

  std::ostream* out_ = nullptr;  // null: every line goes to on_line_
  LineHandler on_line_;
  std::string host_;
  int64_t wall_offset_ns_;
};

}  // namespace slowburn
