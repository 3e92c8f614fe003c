#include "analyze/analyze.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <set>

#include "core/format.h"
#include "detect/causes.h"
#include "detect/clock_check.h"
#include "probes/catalog.h"
#include "record/recording_reader.h"
#include "stats/robust.h"

namespace slowburn {

namespace {

constexpr uint64_t kAdvancePeriodNs = 100'000'000;  // as a live session advances its detector

// The merged clocks' tolerance: a few spreads of the offset's estimate, and
// at least 100 us (the collective's own release spread between nodes).
constexpr int64_t kToleranceSpreads = 3;
constexpr int64_t kToleranceFloorNs = 100'000;

struct Node {
  RecordingInfo info;
  std::set<int32_t> pids;                 // the job's ranks on it
  std::map<int32_t, int32_t> merged_pid;  // its pid -> the merged job's
  int64_t to_wall_ns = 0;                 // its CLOCK_MONOTONIC -> its CLOCK_REALTIME
  std::optional<ClockOffset> offset;      // its CLOCK_REALTIME -> the reference's
  std::string unknown_reason;
};

const ProbeSpec* spec_of(const RecordingInfo& info, uint32_t probe_id) {
  auto it = info.probes.find(probe_id);
  return it == info.probes.end() ? nullptr : find_probe(it->second);
}

std::string comm_key(const RecordingInfo& info, uint32_t comm_id) {
  auto c = info.communicators.find(comm_id);
  // Not written (a killed tracer): a key no other node shares.
  return c != info.communicators.end() ? c->second.key : fmt::format("{}#{}", info.host, comm_id);
}

// Pass 1: when each of the node's collectives released its ranks, per
// (communicator, probe). One rank (the one with most calls) gives the
// instances; each release is the earliest of the node's ranks' exits near it.
// Only exits within [keep_from_ns, keep_to_ns] of the node's wall clock.
Result<LaneReleases> releases_of(const Node& node, int64_t keep_from_ns, int64_t keep_to_ns) {
  struct Exit {
    int64_t exit_ns;
    uint64_t seq;
  };
  struct PerPid {
    std::vector<Exit> exits;
    bool numbered = true;
  };
  std::map<std::string, std::map<int32_t, PerPid>> lanes;
  auto cursor = CallCursor::open(node.info.path);
  if (!cursor) return cursor.error();
  RecordedCall c;
  for (;;) {
    auto more = cursor->next(c);
    if (!more) return more.error();
    if (!*more) break;
    if (!node.pids.contains(c.pid)) continue;
    const ProbeSpec* spec = spec_of(node.info, c.probe_id);
    if (!spec || spec->kind != CallKind::synchronizing) continue;
    int64_t wall_ns = static_cast<int64_t>(c.exit_ns) + node.to_wall_ns;
    if (wall_ns < keep_from_ns || wall_ns > keep_to_ns) continue;
    PerPid& p = lanes[comm_key(node.info, c.comm_id) + " " + spec->name][c.pid];
    p.exits.push_back({wall_ns, c.seq});
    p.numbered = p.numbered && c.seq_absolute;
  }
  LaneReleases out;
  for (auto& [lane, pids] : lanes) {
    bool numbered = true;
    PerPid* pilot = nullptr;
    for (auto& [pid, p] : pids) {
      std::sort(p.exits.begin(), p.exits.end(), [](const Exit& a, const Exit& b) { return a.exit_ns < b.exit_ns; });
      numbered = numbered && p.numbered;
      if (!pilot || p.exits.size() > pilot->exits.size()) pilot = &p;
    }
    std::vector<double> steps;
    for (size_t i = 1; i < pilot->exits.size(); ++i)
      steps.push_back(static_cast<double>(pilot->exits[i].exit_ns - pilot->exits[i - 1].exit_ns));
    auto half_step = static_cast<int64_t>(median(steps).value_or(0) / 2);
    ReleaseSeries& series = out[lane];
    for (const Exit& e : pilot->exits) {
      int64_t release = e.exit_ns;
      for (const auto& [pid, p] : pids) {
        auto it = std::lower_bound(p.exits.begin(), p.exits.end(), e.exit_ns - half_step,
                                   [](const Exit& x, int64_t t) { return x.exit_ns < t; });
        if (it != p.exits.end() && it->exit_ns <= e.exit_ns + half_step) release = std::min(release, it->exit_ns);
      }
      series.release_ns.push_back(release);
      if (numbered) series.seq.push_back(e.seq);
    }
  }
  return out;
}

// Where two series of one lane overlap: by sequence number where both are
// numbered (no clock needed), else on the nodes' own clocks (wrong by the
// offset, seconds at worst, against a stretch minutes long at usual step
// rates). The centre of the overlap, on the node's clock.
int64_t overlap_center(const ReleaseSeries& node, const ReleaseSeries& ref) {
  if (!node.seq.empty() && !ref.seq.empty()) {
    uint64_t lo = std::max(node.seq.front(), ref.seq.front()), hi = std::min(node.seq.back(), ref.seq.back());
    uint64_t mid = lo <= hi ? lo + (hi - lo) / 2 : node.seq[node.seq.size() / 2];
    auto at = std::lower_bound(node.seq.begin(), node.seq.end(), mid);
    if (at == node.seq.end()) --at;
    return node.release_ns[static_cast<size_t>(at - node.seq.begin())];
  }
  int64_t lo = std::max(node.release_ns.front(), ref.release_ns.front());
  int64_t hi = std::min(node.release_ns.back(), ref.release_ns.back());
  return lo <= hi ? lo + (hi - lo) / 2 : node.release_ns[node.release_ns.size() / 2];
}

// Every node's clock offset to the first (the reference), or why not.
Result<void> place_nodes(std::vector<Node>& nodes, const OffsetSearch& search, int64_t& widest_spread) {
  const RecordingInfo& ref_info = nodes[0].info;
  int64_t middle = ref_info.exit_span_ns
                       ? static_cast<int64_t>(ref_info.exit_span_ns->first / 2 + ref_info.exit_span_ns->second / 2) +
                             nodes[0].to_wall_ns
                       : 0;
  int64_t half = search.match_half_span_ns, reach = search.match_half_span_ns + search.max_skew_ns;
  if (!ref_info.exit_span_ns) {  // the reference recorded no call: nothing to centre on, nothing to bound
    middle = 0;
    half = reach = INT64_MAX / 2;
  }
  auto reference = releases_of(nodes[0], middle - half, middle + half);
  if (!reference) return reference.error();
  for (size_t i = 1; i < nodes.size(); ++i) {
    const auto& span = nodes[i].info.exit_span_ns;
    if (span && (static_cast<int64_t>(span->second) + nodes[i].to_wall_ns < middle - reach ||
                 static_cast<int64_t>(span->first) + nodes[i].to_wall_ns > middle + reach)) {
      nodes[i].unknown_reason = fmt::format(
          "its recording ends or starts more than {} from the middle of the reference's on its own clock: the "
          "recordings do not overlap, or its clock is further off than analyze searches",
          format_ns(static_cast<double>(reach)));
      continue;
    }
    auto mine = releases_of(nodes[i], middle - reach, middle + reach);
    if (!mine) return mine.error();
    for (auto& [lane, series] : *mine) {
      auto ref = reference->find(lane);
      if (ref == reference->end() || series.release_ns.empty() || ref->second.release_ns.empty()) continue;
      series = section_near(series, overlap_center(series, ref->second), search.node_releases);
    }
    auto offset = estimate_clock_offset(*reference, *mine, search);
    if (offset) {
      nodes[i].offset = *offset;
      widest_spread = std::max(widest_spread, offset->spread_ns);
    } else {
      nodes[i].unknown_reason = offset.error().message;
    }
  }
  return {};
}

Result<std::vector<Node>> read_nodes(const AnalyzeOptions& options) {
  auto paths = recordings_in(options.inputs);
  if (!paths) return paths.error();
  std::vector<Node> nodes;
  std::map<std::string, std::set<std::string>> jobs;  // job -> hosts
  for (const auto& path : *paths) {
    auto info = read_recording_info(path);
    if (!info) return info.error();
    for (const Node& other : nodes)
      if (other.info.host == info->host)
        return make_error("{} and {} both come from host '{}': give each tracer its own --host",
                          other.info.path.string(), path.string(), info->host);
    for (const RankIdentity& r : info->ranks) jobs[r.job].insert(info->host);
    Node node;
    node.info = std::move(*info);
    node.to_wall_ns = node.info.anchor_realtime_ns - node.info.anchor_monotonic_ns;
    nodes.push_back(std::move(node));
  }
  std::string job;
  if (options.job) {
    if (!jobs.contains(*options.job)) {
      std::string known;
      for (const auto& [j, hosts] : jobs) known += (known.empty() ? "" : ", ") + (j.empty() ? "(no job id)" : j);
      return make_error("no rank of job '{}' in these recordings (they hold: {})", *options.job, known);
    }
    job = *options.job;
  } else if (jobs.size() > 1) {
    std::string list;
    for (const auto& [j, hosts] : jobs)
      list += fmt::format("{}{} on {} node(s)", list.empty() ? "" : "; ", j.empty() ? "(no job id)" : j, hosts.size());
    return make_error("these recordings hold {} jobs ({}): pick one with --job", jobs.size(), list);
  } else if (!jobs.empty()) {
    job = jobs.begin()->first;
  }
  // Merged pids: a node's own where no other node used it, else a fresh one.
  std::set<int32_t> used;
  int32_t fresh = 1 << 23;  // above the kernel's pid_max
  for (Node& node : nodes)
    for (RankIdentity& r : node.info.ranks) {
      if (r.job != job) continue;
      node.pids.insert(r.pid);
      int32_t merged = used.contains(r.pid) ? fresh++ : r.pid;
      used.insert(merged);
      node.merged_pid[r.pid] = merged;
    }
  // Recordings without a rank of the job are not its nodes (nor its clock reference).
  std::erase_if(nodes, [](const Node& n) { return n.pids.empty(); });
  if (nodes.empty()) return make_error("no recording holds a rank of the job");
  return nodes;
}

// Communicators matched across nodes by key; the job-wide one keeps id 0.
std::map<std::string, CommunicatorRef> merge_communicators(const std::vector<Node*>& nodes) {
  std::map<std::string, std::shared_ptr<CommunicatorInfo>> merged;
  uint32_t next_id = 1;
  for (const Node* node : nodes)
    for (const auto& [id, c] : node->info.communicators) {
      auto& m = merged[c.key];
      if (!m) {
        m = std::make_shared<CommunicatorInfo>();
        m->id = c.source == CommSource::job ? 0 : next_id++;
        m->key = c.key;
        m->label = c.label;
        m->backend = c.backend;
        m->source = c.source;
        m->size = c.size;
        m->members = c.members;
        m->seq_from_creation = c.seq_from_creation;
        if (c.local_pids) m->local_pids.emplace();
      }
      for (int r : c.members)
        if (std::find(m->members.begin(), m->members.end(), r) == m->members.end()) m->members.push_back(r);
      std::sort(m->members.begin(), m->members.end());
      if (!c.local_pids) m->local_pids.reset();
      if (m->local_pids)
        for (int32_t pid : *c.local_pids)
          if (auto it = node->merged_pid.find(pid); it != node->merged_pid.end()) m->local_pids->insert(it->second);
    }
  return {merged.begin(), merged.end()};
}

// Findings name their node: "rank 3 (pid 4242 on node-b)".
void name_node(const RankIdentity& id, std::string& text) {
  if (id.host.empty()) return;
  std::string label = rank_label(id);
  if (auto at = text.find(label); at != std::string::npos) text.replace(at, label.size(), rank_node_label(id));
}
void name_node(Finding& f) { name_node(f.culprit, f.summary); }

}  // namespace

Result<std::vector<std::filesystem::path>> recordings_in(const std::vector<std::filesystem::path>& inputs) {
  std::vector<std::filesystem::path> out;
  for (const auto& input : inputs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(input, ec)) {
      out.push_back(input);
      continue;
    }
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::directory_iterator(input, ec))
      if (entry.is_regular_file() && entry.path().extension() == ".sbr") found.push_back(entry.path());
    if (found.empty()) return make_error("{}: no recordings (*.sbr) in this directory", input.string());
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  if (out.empty()) return make_error("no recordings given");
  return out;
}

Result<AnalyzeResult> run_analyze(const AnalyzeOptions& options, Sink& sink) {
  auto read = read_nodes(options);
  if (!read) return read.error();
  std::vector<Node>& nodes = *read;
  AnalyzeResult result;

  // Pass 1: the clocks, one node at a time against the reference's
  // releases, on a bounded stretch of each recording (place_nodes).
  DetectorConfig config = options.detector;
  int64_t widest_spread = 0;
  nodes[0].offset = ClockOffset{};
  if (auto placed = place_nodes(nodes, options.offsets, widest_spread); !placed) return placed.error();
  config.clock_tolerance_ns = static_cast<uint64_t>(std::max(kToleranceFloorNs, kToleranceSpreads * widest_spread));
  std::vector<Node*> judged;
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node& node = nodes[i];
    NodeClock clock;
    clock.host = node.info.host;
    clock.recording = node.info.path.string();
    for (const RankIdentity& r : node.info.ranks)
      if (node.pids.contains(r.pid)) clock.ranks.push_back(r.rank);
    clock.reference = i == 0;
    if (node.offset) {
      clock.offset_ns = node.offset->offset_ns;
      clock.spread_ns = node.offset->spread_ns;
      clock.matched = node.offset->matched;
      clock.lane = node.offset->lane;
      judged.push_back(&node);
    } else {
      clock.unknown_reason = node.unknown_reason;
    }
    sink.node_clock(clock);
    result.nodes.push_back(std::move(clock));
  }

  // Pass 2: one detector, every call on the reference's clock.
  std::vector<ProbeInfo> probes;
  std::set<uint32_t> probe_ids;
  for (const Node* node : judged)
    for (const auto& [id, name] : node->info.probes)
      if (const ProbeSpec* spec = find_probe(name); spec && probe_ids.insert(spec->id).second)
        probes.push_back({spec->id, spec->name, spec->kind});
  StragglerDetector detector(config, probes);
  // Clock-free blame beside the clocks': the waits of every cross-node instance.
  ClockCheckBuilder clock_check(config.min_blame_share);
  detector.set_instance_tap([&clock_check](const CollectiveInstance& instance) { clock_check.add(instance); });
  for (Node* node : judged)
    for (RankIdentity r : node->info.ranks) {
      if (!node->pids.contains(r.pid)) continue;
      r.pid = node->merged_pid.at(r.pid);
      r.host = node->info.host;
      detector.add_rank(r);
      clock_check.add_rank(r);
      if (options.timeline) options.timeline->rank(r);
    }
  for (Node* node : judged)
    for (const auto& [probe, pid] : node->info.attached)
      if (const ProbeSpec* spec = find_probe(probe); spec && node->pids.contains(pid))
        detector.add_participant(spec->id, node->merged_pid.at(pid));
  auto comms = merge_communicators(judged);

  struct Stream {
    Node* node;
    CallCursor cursor;
    RecordedCall next;
    int64_t shift_ns;  // node's monotonic -> the reference's
  };
  std::vector<Stream> streams;
  for (Node* node : judged) {
    auto cursor = CallCursor::open(node->info.path);
    if (!cursor) return cursor.error();
    int64_t shift = node->to_wall_ns + node->offset->offset_ns - nodes[0].to_wall_ns;
    streams.push_back({node, std::move(*cursor), {}, shift});
  }
  auto at = [](const Stream& s) { return static_cast<int64_t>(s.next.exit_ns) + s.shift_ns; };
  auto later = [&](size_t a, size_t b) { return at(streams[a]) > at(streams[b]); };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heads(later);
  auto advance_stream = [&](size_t i) -> Result<void> {
    auto more = streams[i].cursor.next(streams[i].next);
    if (!more) return more.error();
    if (*more) heads.push(i);
    return {};
  };
  for (size_t i = 0; i < streams.size(); ++i)
    if (auto ok = advance_stream(i); !ok) return ok.error();

  // The culprit's node's recorded events, judged as trace judges its own:
  // likely causes named in the same words.
  auto explain = [&](Finding& f) {
    name_node(f);
    for (const Node& node : nodes)
      if (node.info.host == f.culprit.host) attach_likely_causes(f, node.info.device_events);
  };
  auto emit = [&](DetectorOutput out) {
    for (const std::string& note : out.notes) sink.note(note);
    for (const WindowReport& w : out.windows) sink.window(w);
    for (Finding& f : out.findings) {
      explain(f);
      sink.finding(f);
    }
  };
  uint32_t next_lone_id = 1;
  for (const auto& [key, comm] : comms) next_lone_id = std::max(next_lone_id, comm->id + 1);
  std::map<std::pair<const Node*, uint32_t>, uint32_t> tids;
  uint32_t next_tid = 1u << 30;
  uint64_t first_ns = 0, last_ns = 0, next_advance = 0;
  while (!heads.empty()) {
    size_t i = heads.top();
    heads.pop();
    Stream& s = streams[i];
    const RecordedCall& c = s.next;
    const ProbeSpec* spec = spec_of(s.node->info, c.probe_id);
    if (s.node->pids.contains(c.pid) && spec) {
      CallEvent e;
      e.pid = static_cast<uint32_t>(s.node->merged_pid.at(c.pid));
      auto [tid, fresh] = tids.try_emplace({s.node, c.tid}, c.tid == static_cast<uint32_t>(c.pid) ? e.pid : next_tid);
      if (fresh && tid->second == next_tid) ++next_tid;
      e.tid = tid->second;
      e.probe_id = spec->id;
      // The kernel's per-thread number counts lost records; a schema-1
      // recording kept only the communicator's (0: not counted).
      e.seq = c.thread_seq.value_or(0);
      e.entry_ns = static_cast<uint64_t>(static_cast<int64_t>(c.entry_ns) + s.shift_ns);
      e.exit_ns = static_cast<uint64_t>(static_cast<int64_t>(c.exit_ns) + s.shift_ns);
      CallComm comm;
      comm.comm = comms[comm_key(s.node->info, c.comm_id)];
      if (!comm.comm) {  // its row was never written: its calls stand alone
        auto lone = std::make_shared<CommunicatorInfo>();
        lone->id = next_lone_id++;
        lone->key = comm_key(s.node->info, c.comm_id);
        lone->label = lone->key;
        lone->source = CommSource::inferred;
        comm.comm = comms[lone->key] = lone;
      }
      comm.comm_rank = c.comm_rank;
      comm.seq = c.seq;
      comm.seq_absolute = c.seq_absolute;
      detector.ingest(e, comm);
      if (options.timeline) options.timeline->call(e, comm, spec->name);
      if (first_ns == 0) first_ns = e.exit_ns;
      last_ns = std::max(last_ns, e.exit_ns);
      if (e.exit_ns >= next_advance) {
        emit(detector.advance(e.exit_ns));
        next_advance = e.exit_ns + kAdvancePeriodNs;
      }
    }
    if (auto ok = advance_stream(i); !ok) return ok.error();
  }
  // Hangs across nodes: what was still inside a collective when each node
  // last looked, judged at the earliest of those readings (a later entry on
  // one node is not yet a wait on another's).
  std::optional<uint64_t> read_at;
  std::vector<InFlightCall> in_flight;
  for (const Stream& s : streams) {
    const RecordingInfo& info = s.node->info;
    if (!info.in_flight_read_ns) continue;
    auto read = static_cast<uint64_t>(static_cast<int64_t>(*info.in_flight_read_ns) + s.shift_ns);
    read_at = read_at ? std::min(*read_at, read) : read;
    for (const RecordedInFlight& c : info.in_flight) {
      const ProbeSpec* spec = spec_of(info, c.probe_id);
      if (!spec || !s.node->pids.contains(c.pid)) continue;
      InFlightCall call;
      call.tgid = static_cast<uint32_t>(s.node->merged_pid.at(c.pid));
      call.tid = c.tid;
      call.probe_id = spec->id;
      call.entry_ns = static_cast<uint64_t>(static_cast<int64_t>(c.entry_ns) + s.shift_ns);
      auto comm = comms.find(comm_key(info, c.comm_id));
      if (comm != comms.end()) call.communicator = comm->second;
      in_flight.push_back(std::move(call));
    }
  }
  if (read_at) {
    last_ns = std::max(last_ns, *read_at);
    emit(detector.check_in_flight(*read_at, in_flight));
  }
  emit(detector.finish(last_ns));

  for (const auto& [key, comm] : comms) result.communicators.push_back(comm);
  std::sort(result.communicators.begin(), result.communicators.end(),
            [](const CommunicatorRef& a, const CommunicatorRef& b) { return a->id < b->id; });
  sink.communicators(result.communicators);
  const DetectorCounters& counters = detector.counters();
  result.summary.traced_seconds = last_ns > first_ns ? static_cast<double>(last_ns - first_ns) / 1e9 : 0;
  result.summary.calls = counters.calls;
  result.summary.unknown_process = counters.unknown_process;
  result.summary.late_calls = counters.late_calls;
  result.summary.sequence_gaps = counters.sequence_gaps;
  result.summary.discarded_calls = counters.discarded_calls;
  result.summary.instances = counters.instances;
  result.summary.aligned_by_sequence = counters.aligned_by_sequence;
  result.summary.order_mismatches = counters.order_mismatches;
  result.summary.communicators = result.communicators.size();
  // What the tracers lost on their nodes: the judged nodes' loss counters.
  for (const Node* node : judged) {
    auto count = [&](const char* key) {
      auto it = node->info.counters.find(key);
      return it == node->info.counters.end() ? uint64_t{0} : it->second;
    };
    result.summary.ringbuf_drops += count("ringbuf_drops");
    result.summary.decode_rejected += count("decode_rejected");
    result.summary.orphan_returns += count("orphan_returns");
    result.summary.untimed_calls += count("untimed_calls");
    result.summary.recording_dropped += count("record_dropped_calls");
  }
  result.summary.findings = detector.findings();
  for (Finding& f : result.summary.findings) explain(f);
  sink.summary(result.summary);
  result.verdict = detector.verdict(last_ns);
  for (Finding& f : result.verdict.stragglers) explain(f);
  for (Finding& f : result.verdict.hangs) explain(f);
  for (Episode& e : result.verdict.episodes) {
    explain(e.finding);
    name_node(e.finding.culprit, e.summary);
  }
  for (const Node& node : nodes)
    if (!node.offset) result.verdict.nodes_left_out.push_back(node.info.host);
  if (judged.size() < nodes.size() && result.verdict.judged)
    result.verdict.reason = fmt::format("{} of {} nodes left out (their clock offsets are unknown; see the node table)",
                                        nodes.size() - judged.size(), nodes.size());
  if (judged.size() > 1) {
    result.verdict.clock_check = clock_check.finish(static_cast<double>(last_ns - std::min(last_ns, first_ns)));
  }
  for (const Node* node : judged) {
    result.device_events.insert(result.device_events.end(), node->info.device_events.begin(),
                                node->info.device_events.end());
    for (ProbeStatus s : node->info.sources) {
      s.detail = node->info.host + (s.detail.empty() ? "" : ": " + s.detail);
      result.sources.push_back(std::move(s));
    }
  }
  sink.verdict(result.verdict);
  return result;
}

}  // namespace slowburn
