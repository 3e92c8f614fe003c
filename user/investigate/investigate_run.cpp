#include "investigate/investigate_run.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/finding_explainer.h"
#include "sysfs/topology.h"

namespace slowburn {

namespace {

// What the investigation reads of a session as it runs: the node-wide
// sources' states; finding and verdict lines pass through to `lines`.
class GatheringSink : public Sink {
 public:
  explicit GatheringSink(Sink* lines) : lines_(lines) {}
  std::vector<ProbeStatus> sources;
  void probe_status(const ProbeStatus& s) override {
    if (s.pid == 0) sources.push_back(s);
  }
  void probes_done(size_t, size_t) override {}
  void note(const std::string& text) override {
    if (lines_) lines_->note(text);
  }
  void device_event(const DeviceEvent&) override {}
  void window(const WindowReport&) override {}
  void tick(uint64_t) override {}
  void finding(const Finding& f) override {
    if (lines_) lines_->finding(f);
  }
  void histogram(const HistogramReport&) override {}
  void communicators(const std::vector<CommunicatorRef>&) override {}
  void node_clock(const NodeClock&) override {}
  void summary(const SessionSummary&) override {}
  void verdict(const SessionVerdict& v) override {
    if (lines_) lines_->verdict(v);
  }

 private:
  Sink* lines_;
};

// The devices each culprit process uses, as people name them.
std::map<int32_t, std::vector<std::string>> devices_of(const SessionVerdict& v, const Topology& topology) {
  std::map<int32_t, std::vector<std::string>> out;
  auto add = [&](const Finding& f) {
    for (const TopologyDevice& d : topology.devices())
      if (std::find(d.pids.begin(), d.pids.end(), f.culprit.pid) != d.pids.end())
        out[f.culprit.pid].push_back(fmt::format("{} ({})", d.label.empty() ? d.pci.bdf : d.label, d.pci.bdf));
  };
  for (const Finding& f : v.stragglers) add(f);
  for (const Finding& f : v.hangs) add(f);
  for (const Finding& f : v.failures) add(f);
  return out;
}

}  // namespace

Result<InvestigationInput> gather_live(const TraceOptions& options, Sink* lines, const std::atomic<bool>& stop) {
  GatheringSink sink(lines);
  auto result = run_trace(options, sink, stop);
  if (!result) return result.error();
  InvestigationInput in;
  in.verdict = result->verdict;
  in.traced_s = result->summary.traced_seconds;
  in.events = std::move(result->device_events);
  in.sources = std::move(sink.sources);
  if (std::shared_ptr<const Topology> topology = result->topology) {
    // The join asks the topology; it lives as long as the join.
    in.concerns = [topology, join = concerns_through(topology.get())](const DeviceEvent& e, const RankIdentity& r) {
      return join(e, r);
    };
    in.devices_of = devices_of(in.verdict, *topology);
  }
  return in;
}

Result<InvestigationInput> gather_recorded(const AnalyzeOptions& options, Sink* lines) {
  GatheringSink sink(lines);
  auto result = run_analyze(options, sink);
  if (!result) return result.error();
  InvestigationInput in;
  in.verdict = result->verdict;
  in.traced_s = result->summary.traced_seconds;
  in.events = std::move(result->device_events);
  in.sources = std::move(result->sources);
  return in;
}

}  // namespace slowburn
