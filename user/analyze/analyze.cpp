#include "analyze/analyze.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "analyze/clock_placement.h"
#include "analyze/merged_replay.h"
#include "analyze/recording_set.h"
#include "core/strings.h"
#include "detect/clock_check.h"
#include "engine/finding_explainer.h"
#include "probes/catalog.h"

namespace slowburn {

namespace {

// The merged clocks' tolerance: a few spreads of the offset's estimate, and
// at least 100 us (the collective's own release spread between nodes).
constexpr int64_t kToleranceSpreads = 3;
constexpr int64_t kToleranceFloorNs = 100'000;

NodeClock node_clock(const NodeRecording& node, const NodePlacement& placement, bool reference) {
  NodeClock clock;
  clock.host = node.info.host;
  clock.recording = node.info.path.string();
  for (const RankIdentity& r : node.info.ranks)
    if (node.pids.contains(r.pid)) clock.ranks.push_back(r.rank);
  clock.reference = reference;
  clock.closed = node.info.closed;
  if (placement.offset) {
    clock.offset_ns = placement.offset->offset_ns;
    clock.spread_ns = placement.offset->spread_ns;
    clock.drift_ppm = placement.offset->drift_ppm;
    clock.matched = placement.offset->matched;
    clock.prompt_matched = placement.offset->prompt_matched;
    clock.bound_ns = placement.offset->causal_width_ns;
    clock.lane = placement.offset->lane;
  } else {
    clock.unknown_reason = placement.unknown_reason;
  }
  return clock;
}

// The nodes with an offset, each shifted onto the reference's monotonic clock.
std::vector<PlacedNode> placed_nodes(const std::vector<NodeRecording>& nodes,
                                     const std::vector<NodePlacement>& placements) {
  std::vector<PlacedNode> placed;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (const auto& offset = placements[i].offset) {
      // The offset is between wall clocks (the node's anchor a wall time).
      placed.push_back({&nodes[i], nodes[i].to_wall_ns + offset->offset_ns - nodes[0].to_wall_ns, offset->drift_ppm,
                        offset->anchor_ns - nodes[i].to_wall_ns});
    }
  return placed;
}

// The job's ranks under their merged pids, each named by its node.
std::vector<RankIdentity> merged_ranks(const std::vector<PlacedNode>& placed) {
  std::vector<RankIdentity> ranks;
  for (const PlacedNode& p : placed)
    for (RankIdentity r : p.node->info.ranks) {
      if (!p.node->pids.contains(r.pid)) continue;
      int32_t merged = p.node->merged_pid.at(r.pid);
      if (merged != r.pid) r.node_pid = r.pid;
      r.pid = merged;
      r.host = p.node->info.host;
      ranks.push_back(std::move(r));
    }
  return ranks;
}

// Every probe the placed nodes recorded, as this build's catalog has it.
std::vector<const ProbeSpec*> recorded_probes(const std::vector<PlacedNode>& placed) {
  std::vector<const ProbeSpec*> probes;
  std::set<uint32_t> ids;
  for (const PlacedNode& p : placed)
    for (const auto& [id, name] : p.node->info.probes)
      if (const ProbeSpec* spec = find_probe(name); spec && ids.insert(spec->id).second) probes.push_back(spec);
  return probes;
}

void add_participants(JobJudges& judges, const std::vector<PlacedNode>& placed) {
  for (const PlacedNode& p : placed)
    for (const auto& [probe, pid] : p.node->info.attached)
      if (const ProbeSpec* spec = find_probe(probe); spec && p.node->pids.contains(pid))
        judges.attached(spec->id, p.node->merged_pid.at(pid));
}

// The session's counters: the judges', and what the tracers lost on their nodes.
SessionSummary summarize(const JobJudges& judges, const std::vector<PlacedNode>& placed, const ReplaySpan& span,
                         size_t communicators) {
  SessionSummary summary;
  summary.traced_seconds = span.last_ns > span.first_ns ? static_cast<double>(span.last_ns - span.first_ns) / 1e9 : 0;
  summary.detector = judges.counters();
  summary.communicators = communicators;
  for (const PlacedNode& p : placed) {
    auto count = [&](const char* key) {
      auto it = p.node->info.counters.find(key);
      return it == p.node->info.counters.end() ? uint64_t{0} : it->second;
    };
    summary.ringbuf_drops += count("ringbuf_drops");
    summary.decode_rejected += count("decode_rejected");
    summary.orphan_returns += count("orphan_returns");
    summary.untimed_calls += count("untimed_calls");
    summary.recording_dropped += count("record_dropped_calls");
  }
  summary.findings = judges.findings();
  return summary;
}

// The judged nodes' recorded events and node-wide sources, the detail prefixed with the node.
void keep_node_records(const std::vector<PlacedNode>& placed, AnalyzeResult& result) {
  for (const PlacedNode& p : placed) {
    const RecordingInfo& info = p.node->info;
    result.device_events.insert(result.device_events.end(), info.device_events.begin(), info.device_events.end());
    for (ProbeStatus s : info.sources) {
      s.detail = info.host + (s.detail.empty() ? "" : ": " + s.detail);
      result.sources.push_back(std::move(s));
    }
  }
}

// Where the recordings its tracer never closed end (their ranks are unseen
// after that), on the reference's clock; and the latest end of any.
struct Ends {
  std::optional<uint64_t> cut_ns;
  uint64_t last_ns = 0;
};

Ends recording_ends(const std::vector<PlacedNode>& placed) {
  Ends ends;
  for (const PlacedNode& p : placed) {
    if (!p.node->info.exit_span_ns) continue;
    uint64_t end = p.to_reference(p.node->info.exit_span_ns->second);
    ends.last_ns = std::max(ends.last_ns, end);
    if (!p.node->info.closed) ends.cut_ns = ends.cut_ns ? std::min(*ends.cut_ns, end) : end;
  }
  return ends;
}

// What each recording its tracer never closed leaves out.
std::vector<std::string> unclosed_notes(const std::vector<PlacedNode>& placed, const Ends& ends) {
  std::vector<std::string> notes;
  for (const PlacedNode& p : placed) {
    const RecordingInfo& info = p.node->info;
    if (info.closed) continue;
    std::vector<int> unseen;
    for (const RankIdentity& r : info.ranks)
      if (p.node->pids.contains(r.pid)) unseen.push_back(r.rank);
    std::string ranks = join_numbers(unseen, ", ");
    if (!info.exit_span_ns || !ends.cut_ns) {
      notes.push_back(fmt::format(
          "{}'s recording was not closed (its tracer was killed, or the node went down) and holds no call", info.host));
      continue;
    }
    uint64_t end = p.to_reference(info.exit_span_ns->second);
    notes.push_back(fmt::format(
        "{}'s recording was not closed (its tracer was killed, or the node went down): its calls end {:.1f} s before "
        "the job's last recorded call; the job is judged up to {:.1f} s before that last call, and no wait inside a "
        "collective at the end is: after it, ranks {} are unseen, and a collective judged without them would blame "
        "one of the ranks still seen",
        info.host, static_cast<double>(ends.last_ns - std::min(ends.last_ns, end)) / 1e9,
        static_cast<double>(ends.last_ns - std::min(ends.last_ns, *ends.cut_ns)) / 1e9, ranks));
  }
  return notes;
}

// The verdict, with the nodes left out and what clock-free blame says of the merged clocks.
void conclude(AnalyzeResult& result, JobJudges& judges, const std::vector<NodeRecording>& nodes, size_t judged,
              const ReplaySpan& span, ClockCheckBuilder& clock_check) {
  result.verdict = judges.verdict(span.last_ns);
  for (const NodeClock& node : result.nodes)
    if (!node.offset_ns) result.verdict.nodes_left_out.push_back(node.host);
  if (judged < nodes.size() && result.verdict.judged)
    result.verdict.reason = fmt::format("{} of {} nodes left out (their clock offsets are unknown; see the node table)",
                                        nodes.size() - judged, nodes.size());
  if (judged > 1)
    result.verdict.clock_check =
        clock_check.finish(static_cast<double>(span.last_ns - std::min(span.last_ns, span.first_ns)));
}

}  // namespace

Result<AnalyzeResult> run_analyze(const AnalyzeOptions& options, Sink& sink) {
  auto nodes = read_job_recordings(options.inputs, options.job);
  if (!nodes) return nodes.error();
  auto placements = place_nodes(*nodes, options.offsets);
  if (!placements) return placements.error();
  AnalyzeResult result;
  int64_t widest_spread = 0;
  for (size_t i = 0; i < nodes->size(); ++i) {
    result.nodes.push_back(node_clock((*nodes)[i], (*placements)[i], i == 0));
    sink.node_clock(result.nodes.back());
    if ((*placements)[i].offset) widest_spread = std::max(widest_spread, (*placements)[i].offset->uncertainty_ns());
  }
  std::vector<PlacedNode> placed = placed_nodes(*nodes, *placements);

  DetectorConfig config = options.detector;
  config.clock_tolerance_ns = static_cast<uint64_t>(std::max(kToleranceFloorNs, kToleranceSpreads * widest_spread));
  std::vector<RankIdentity> ranks = merged_ranks(placed);
  JobJudges judges(config, recorded_probes(placed), ranks);
  add_participants(judges, placed);
  // Clock-free blame beside the clocks': the waits of every cross-node instance.
  ClockCheckBuilder clock_check(config.min_blame_share);
  judges.set_instance_tap([&clock_check](const CollectiveInstance& instance) { clock_check.add(instance); });
  for (const RankIdentity& r : ranks) {
    clock_check.add_rank(r);
    if (options.timeline) options.timeline->rank(r);
  }
  // The culprit's node's recorded events explain it, as trace explains its own.
  FindingExplainer explainer({.keep_ns = 0, .max_events = 0, .by_node = true});
  for (const PlacedNode& p : placed)
    for (const DeviceEvent& e : p.node->info.device_events) {
      explainer.add(e, p.node->info.host);
      // Its node's ranks only: pids and local numbers repeat across nodes.
      judges.device_event(e, p.to_reference(e.ts_ns), [&p](const DeviceEvent& event, const RankIdentity& rank) {
        return rank.host == p.node->info.host && event_names_rank(event, rank);
      });
    }

  MergedReplay replay(placed);
  Ends ends = recording_ends(placed);
  if (ends.cut_ns) replay.stop_at(*ends.cut_ns);
  auto emit = [&](DetectorOutput out) {
    for (const std::string& note : out.notes) sink.note(note);
    for (const WindowReport& w : out.windows) sink.window(w);
    for (Finding& f : out.findings) {
      explainer.explain(f, 0);
      sink.finding(f);
    }
  };
  auto span = replay.replay(judges, options.timeline, emit);
  if (!span) return span.error();
  for (const std::string& note : unclosed_notes(placed, ends)) sink.note(note);
  emit(replay.check_in_flight(judges, *span));
  emit(replay.retire_ended(judges));
  emit(judges.finish(span->last_ns));

  result.communicators = replay.communicators();
  sink.communicators(result.communicators);
  result.summary = summarize(judges, placed, *span, result.communicators.size());
  for (Finding& f : result.summary.findings) explainer.explain(f, 0);
  sink.summary(result.summary);
  conclude(result, judges, *nodes, placed.size(), *span, clock_check);
  explainer.explain(result.verdict, 0);
  keep_node_records(placed, result);
  sink.verdict(result.verdict);
  return result;
}

}  // namespace slowburn
