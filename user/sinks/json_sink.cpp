#include "sinks/json_sink.h"

#include <nlohmann/json.hpp>

#include "core/clock.h"

namespace slowburn {

using nlohmann::json;

namespace {

json optional_number(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

void put_identity(json& j, const RankIdentity& id) {
  j["rank"] = id.rank;
  j["pid"] = id.pid;
  j["local_rank"] = id.local_rank ? json(*id.local_rank) : json(nullptr);
  j["world_size"] = id.world_size ? json(*id.world_size) : json(nullptr);
  j["job"] = id.job;
  j["launcher"] = id.launcher;
  // The rank's node (in analyze, the recording's; `host` is who printed the line).
  if (!id.host.empty()) j["node"] = id.host;
  // Its pid on that node, where analyze gave it another (two nodes' pids collided).
  if (id.node_pid) j["node_pid"] = id.node_pid;
}

// {"id":3,"key":"mpi:job:cid=3:ranks=2,3","label":"cid 3 (ranks 2,3)","library":"mpi","size":2,
//  "source":"memory","rank":1}: the communicator, and the rank's position in it.
json communicator_json(const CommunicatorRef& comm, const std::optional<int>& comm_rank) {
  if (!comm) return nullptr;
  json j{{"id", comm->id},
         {"key", comm->key},
         {"label", comm->label},
         {"library", comm_backend_name(comm->backend)},
         {"source", comm_source_name(comm->source)}};
  j["size"] = comm->size ? json(*comm->size) : json(nullptr);
  j["rank"] = comm_rank ? json(*comm_rank) : json(nullptr);
  if (!comm->members.empty()) j["members"] = comm->members;
  return j;
}

}  // namespace

JsonSink::JsonSink(LineHandler on_line, std::string host, int64_t wall_offset_ns)
    : on_line_(std::move(on_line)), host_(std::move(host)), wall_offset_ns_(wall_offset_ns) {}

void JsonSink::write(const json& line, bool flush) {
  if (on_line_) {
    on_line_(line);
    return;
  }
  *out_ << line.dump() << '\n';
  if (flush) out_->flush();
}

void JsonSink::probe_status(const ProbeStatus& s) {
  json j{{"kind", "status"}, {"event", "probe"}, {"ts", unix_now_s()},
         {"host", host_},    {"probe", s.probe}, {"state", probe_state_name(s.state)}};
  if (s.rank)
    put_identity(j, *s.rank);
  else
    j["pid"] = s.pid > 0 ? json(s.pid) : json(nullptr);
  if (s.state == ProbeState::attached) {
    j["library"] = s.library;
    json sites = json::array();
    for (const AttachSite& site : s.sites)
      sites.push_back({{"symbol", site.symbol}, {"offset", site.file_offset}, {"address", site.address}});
    j["sites"] = std::move(sites);
  } else {
    j["reason"] = s.detail;
  }
  write(j, false);
}

void JsonSink::probes_done(size_t attached, size_t processes) {
  write({{"kind", "status"},
         {"event", "tracing"},
         {"ts", unix_now_s()},
         {"host", host_},
         {"attached", attached},
         {"processes", processes}},
        true);
}

void JsonSink::note(const std::string& text) {
  write({{"kind", "status"}, {"event", "note"}, {"ts", unix_now_s()}, {"host", host_}, {"message", text}}, false);
}

void JsonSink::device_event(const DeviceEvent& e) {
  json j{{"kind", "event"},
         {"type", e.type},
         {"ts", static_cast<double>(static_cast<int64_t>(e.ts_ns) + wall_offset_ns_) / 1e9},
         {"host", host_},
         {"device", e.device.empty() ? json(nullptr) : json(e.device)},
         {"role", e.role.empty() ? json(nullptr) : json(e.role)},
         {"label", e.label},
         {"ranks", e.ranks},
         {"summary", e.summary}};
  // The payload's fields sit at the top level, as in {"type":"xid","code":79,...}.
  j.update(e.fields);
  write(j, true);
}

void JsonSink::window(const WindowReport& r) {
  double start = static_cast<double>(static_cast<int64_t>(r.start_ns) + wall_offset_ns_) / 1e9;
  double end = static_cast<double>(static_cast<int64_t>(r.end_ns) + wall_offset_ns_) / 1e9;
  for (const RankWindowStats& s : r.ranks) {
    json j{{"kind", "window"},
           {"ts", end},
           {"host", host_},
           {"probe", r.probe},
           {"window_start", start},
           {"window_end", end},
           {"communicator", communicator_json(r.comm, s.comm_rank)},
           {"calls", s.calls},
           {"wait_p50_ns", optional_number(s.wait_p50_ns)},
           {"wait_p99_ns", optional_number(s.wait_p99_ns)}};
    put_identity(j, s.identity);
    if (r.aligned) {
      j["instances"] = s.instances;
      j["lateness_median_ns"] = optional_number(s.lateness_median_ns);
      j["lateness_p90_ns"] = optional_number(s.lateness_p90_ns);
      j["blame_dominance"] = s.blame_dominance;
      j["blame_leaving_share"] = s.blame_leaving_share;
      j["z_lateness_tail"] = optional_number(s.z_lateness_tail);
      j["gap_median_ns"] = optional_number(s.gap_median_ns);
      j["blame_ns"] = s.blame_ns;
      j["blame_share"] = s.blame_share;
      j["last_fraction"] = s.last_fraction;
      j["z_lateness"] = optional_number(s.z_lateness);
      j["z_gap"] = optional_number(s.z_gap);
      j["cusum_gap"] = s.cusum_gap;
      j["flagged"] = s.flagged;
      if (s.held_by_data_path) j["held_by_data_path"] = true;
      if (s.sequential_statistic) j["sequential_statistic"] = *s.sequential_statistic;
      if (s.inside_oncpu_share) {
        j["inside_oncpu_share"] = *s.inside_oncpu_share;
        j["inside_runq_share"] = optional_number(s.inside_runq_share);
      }
      if (!s.inside_transport.empty()) j["inside_transport"] = s.inside_transport;
      if (s.inside_oncpu_share || !s.inside_transport.empty()) {
        j["inside_cost_share"] = s.inside_cost_share;
        j["inside_flagged"] = s.inside_flagged;
      }
      j["after_last_arrival_ns"] = optional_number(r.after_last_arrival_ns);
    }
    write(j, false);
  }
}

void JsonSink::tick(uint64_t) {
  if (out_) out_->flush();
}

namespace {
// analyze: clock-free blame per rank, and whether it backs the merged clocks.
json clock_check_json(const ClockCheck& c) {
  json ranks = json::array();
  for (const ClockFreeRank& r : c.ranks) {
    json j{{"rank", r.identity.rank},
           {"pid", r.identity.pid},
           {"node", r.identity.host},
           {"instances", r.instances},
           {"least_waits", r.least_waits},
           {"blame_share_by_wait", c.traced_ns > 0 ? r.blame_by_wait_ns / c.traced_ns : 0.0},
           {"blame_share_by_clock", c.traced_ns > 0 ? r.blame_by_clock_ns / c.traced_ns : 0.0}};
    ranks.push_back(std::move(j));
  }
  json j{{"instances", c.instances},  {"agreed", c.agreed},  {"agreed_blame_share", c.agreed_blame_share},
         {"disagrees", c.disagrees},  {"culprit", nullptr},  {"culprit_blame_share", c.culprit_blame_share},
         {"ranks", std::move(ranks)}, {"summary", c.summary}};
  if (c.culprit) {
    j["culprit"] = json{{"rank", c.culprit->rank}, {"pid", c.culprit->pid}, {"node", c.culprit->host}};
    if (c.culprit->node_pid) j["culprit"]["node_pid"] = c.culprit->node_pid;
  }
  return j;
}

json process_json(const ProcessView& p) {
  auto text = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  return json{{"state", process_state_name(p.state)},
              {"syscall", text(p.syscall)},
              {"waits_on", text(p.waits_on)},
              {"wchan", text(p.wchan)},
              {"kernel_stack", text(p.kernel_stack)},
              {"threads", p.threads},
              {"on_cpu_ns", p.on_cpu_ns},
              {"off_cpu_ns", p.off_cpu_ns},
              {"signal", p.signal ? json(signal_name(*p.signal)) : json(nullptr)},
              {"exit_code", p.exit_code ? json(*p.exit_code) : json(nullptr)},
              {"oom_killed", p.oom_killed},
              {"summary", describe_process(p)}};
}

// A slow burn's start, `at` as a Unix time on the session's clock as `found_at`.
json began_json(const std::optional<CostOnset>& onset, int64_t wall_offset_ns) {
  if (!onset) return nullptr;
  if (onset->from_start)
    return {{"from_start", true},
            {"at", nullptr},
            {"into_ns", 0},
            {"before_cost_share", nullptr},
            {"since_cost_share", onset->since_share}};
  return {{"from_start", false},
          {"at", static_cast<double>(static_cast<int64_t>(onset->at_ns) + wall_offset_ns) / 1e9},
          {"into_ns", onset->into_ns},
          {"before_cost_share", onset->before_share},
          {"since_cost_share", onset->since_share}};
}

// `found_at`: when the detector raised it, as a Unix time on the session's
// clock (analyze: the reference node's), so a replay measures detection delay.
json finding_json(const Finding& f, int64_t wall_offset_ns) {
  json evidence{{"detector", f.detector}, {"probe", f.probe}};
  if (f.type == "hang" || f.type == "mismatch") {
    evidence["waiting_ranks"] = f.waiting_ranks;
    evidence["waited_ns"] = f.waited_ns;
    evidence["position"] = f.position ? json{{"communicator", f.comm ? json(f.comm->label) : json(nullptr)},
                                             {"position", *f.position},
                                             {"by", f.position_by_sequence ? "sequence" : "instance"}}
                                      : json(nullptr);
    evidence["blocked_behind"] = f.blocked_behind;
    evidence["process"] = f.process ? process_json(*f.process) : json(nullptr);
    if (f.type == "mismatch") {
      json calls = json::array();
      for (const MemberCall& c : f.calls)
        calls.push_back({{"rank", c.rank}, {"probe", c.probe}, {"position", c.position}});
      evidence["calls"] = std::move(calls);
    }
  } else if (f.type == "failure") {
    evidence["process"] = f.process ? process_json(*f.process) : json(nullptr);
    evidence["ended_ns"] = f.ended_ns;
    evidence["followed_by"] = f.followed_by;
    evidence["followed_within_ns"] = f.followed_within_ns;
  } else {
    evidence["where"] = f.where;
    evidence["lateness_median_ns"] = f.lateness_median_ns;
    evidence["blame_share"] = f.blame_share;
    evidence["last_fraction"] = f.last_fraction;
    evidence["z_lateness"] = optional_number(f.z_lateness);
    evidence["z_gap"] = optional_number(f.z_gap);
    evidence["windows_flagged"] = f.windows_flagged;
    evidence["windows_considered"] = f.windows_considered;
    evidence["blame_dominance"] = f.blame_dominance;
    evidence["blame_leaving_share"] = f.blame_leaving_share;
    evidence["lateness_p90_ns"] = optional_number(f.lateness_p90_ns);
    evidence["z_lateness_tail"] = optional_number(f.z_lateness_tail);
    if (f.detector == "sequential") {
      evidence["statistic"] = f.sequential_statistic;
      evidence["threshold"] = f.sequential_threshold;
      evidence["arl0_instances"] = f.sequential_arl0;
      evidence["lead_share"] = f.sequential_lead_share;
      evidence["instances_considered"] = f.instances_considered;
      evidence["instances_flagged"] = f.instances_flagged;
    }
    if (f.inside) {
      evidence["oncpu_share"] = f.inside->cpu_read ? nlohmann::json(f.inside->oncpu_share) : nlohmann::json(nullptr);
      evidence["runq_share"] = f.inside->cpu_read ? nlohmann::json(f.inside->runq_share) : nlohmann::json(nullptr);
      evidence["transport"] =
          f.inside->transport.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.inside->transport);
      evidence["peers_oncpu_share"] = optional_number(f.inside->peers_oncpu_share);
      evidence["peers_runq_share"] = optional_number(f.inside->peers_runq_share);
      evidence["after_last_arrival_ns"] = optional_number(f.inside->after_last_arrival_ns);
      evidence["after_last_arrival_ratio"] = optional_number(f.inside->after_last_arrival_ratio);
      evidence["inside_cost_share"] = f.inside->cost_share;
    }
    if (f.session_cost) {
      evidence["next_cost_share"] = f.session_cost->next_cost_share;
      evidence["expected_last_fraction"] = f.session_cost->expected_last_fraction;
      evidence["last_z"] = f.session_cost->last_z;
      evidence["lasts"] = f.instances_flagged;
      evidence["instances"] = f.instances_considered;
      evidence["traced_ns"] = f.session_cost->traced_ns;
      evidence["over"] = f.session_cost->latest ? "latest" : "session";
      evidence["drift"] = f.session_cost->drift;
      evidence["began"] = began_json(f.session_cost->onset, wall_offset_ns);
    }
  }
  json j{{"type", f.type},
         {"evidence", std::move(evidence)},
         {"communicator", communicator_json(f.comm, f.comm_rank)},
         {"cost_ns", f.cost_ns},
         {"cost_share", f.cost_share},
         {"severity", f.severity.empty() ? json(nullptr) : json(f.severity)},
         {"likely_causes", f.likely_causes},
         {"sdc_activity", f.sdc_activity ? json(*f.sdc_activity) : json(nullptr)},
         {"summary", f.summary}};
  j["found_at"] = f.detected_ns ? json(static_cast<double>(static_cast<int64_t>(f.detected_ns) + wall_offset_ns) / 1e9)
                                : json(nullptr);
  put_identity(j, f.culprit);
  return j;
}
}  // namespace

void JsonSink::finding(const Finding& f) {
  json j = finding_json(f, wall_offset_ns_);
  j["kind"] = "finding";
  j["ts"] = unix_now_s();
  j["host"] = host_;
  write(j, true);
}

void JsonSink::node_clock(const NodeClock& n) {
  json j{{"kind", "node"},
         {"host", n.host},
         {"recording", n.recording},
         {"ranks", n.ranks},
         {"reference", n.reference},
         {"clock_offset_ns", n.offset_ns ? json(*n.offset_ns) : json(nullptr)},
         {"clock_offset_spread_ns", n.offset_ns ? json(n.spread_ns) : json(nullptr)},
         {"clock_drift_ppm", n.offset_ns && !n.reference ? json(n.drift_ppm) : json(nullptr)},
         {"matched", n.matched},
         {"prompt_matched", n.prompt_matched},
         {"clock_offset_bound_ns", n.offset_ns && n.bound_ns > 0 ? json(n.bound_ns) : json(nullptr)},
         {"from", n.lane.empty() ? json(nullptr) : json(n.lane)},
         {"reason", n.unknown_reason.empty() ? json(nullptr) : json(n.unknown_reason)},
         {"closed", n.closed}};
  write(j, true);
}

void JsonSink::communicators(const std::vector<CommunicatorRef>& comms) {
  for (const CommunicatorRef& c : comms) {
    json j{{"kind", "status"}, {"event", "communicator"}, {"ts", unix_now_s()}, {"host", host_}};
    j.update(communicator_json(c, std::nullopt));
    j.erase("rank");
    write(j, false);
  }
}

void JsonSink::verdict(const SessionVerdict& v) {
  json stragglers = json::array(), hangs = json::array(), episodes = json::array();
  for (const Finding& f : v.stragglers) stragglers.push_back(finding_json(f, wall_offset_ns_));
  for (const Finding& f : v.hangs) hangs.push_back(finding_json(f, wall_offset_ns_));
  json failures = json::array(), pending = json::array();
  for (const Finding& f : v.failures) failures.push_back(finding_json(f, wall_offset_ns_));
  for (const PendingHang& p : v.pending_hangs)
    pending.push_back({{"probe", p.probe},
                       {"communicator", communicator_json(p.comm, std::nullopt)},
                       {"position", p.position},
                       {"waiting_ranks", p.waiting_ranks},
                       {"behind_ranks", p.behind_ranks},
                       {"since", static_cast<double>(static_cast<int64_t>(p.since_ns) + wall_offset_ns_) / 1e9},
                       {"waited_ns", p.waited_ns},
                       {"summary", p.summary}});
  for (const Episode& e : v.episodes) {
    json j = finding_json(e.finding, wall_offset_ns_);
    j["start"] = static_cast<double>(static_cast<int64_t>(e.start_ns) + wall_offset_ns_) / 1e9;
    j["end"] = static_cast<double>(static_cast<int64_t>(e.end_ns) + wall_offset_ns_) / 1e9;
    j["duration_s"] = static_cast<double>(e.end_ns - std::min(e.end_ns, e.start_ns)) / 1e9;
    j["windows_flagged"] = e.windows_flagged;
    j["windows_evaluated"] = e.windows_evaluated;
    j["cost_ns"] = e.cost_ns;
    j["summary"] = e.summary;
    episodes.push_back(std::move(j));
  }
  json withheld = json::array();
  for (const Withheld& w : v.withheld) {
    json j = finding_json(w.finding, wall_offset_ns_);
    j["reason"] = w.reason;
    j["summary"] = w.summary;
    withheld.push_back(std::move(j));
  }
  json j{{"kind", "verdict"},
         {"ts", unix_now_s()},
         {"host", host_},
         {"judged", v.judged},
         {"reason", v.judged ? json(nullptr) : json(v.reason)},
         {"instances", v.instances},
         {"windows_judged", v.windows_judged},
         {"stragglers", std::move(stragglers)},
         {"hangs", std::move(hangs)},
         {"failures", std::move(failures)},
         {"pending_hang", std::move(pending)},
         {"episodes", std::move(episodes)},
         {"withheld", std::move(withheld)}};
  if (!v.nodes_left_out.empty()) j["nodes_left_out"] = v.nodes_left_out;
  if (v.clock_check) j["clock_check"] = clock_check_json(*v.clock_check);
  write(j, true);
}

void JsonSink::histogram(const HistogramReport& h) {
  json buckets = json::array();
  const auto& slots = h.hist.slots();
  size_t last = 0;
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i]) last = i;
  for (size_t i = 0; i <= last && i < slots.size(); ++i)
    buckets.push_back(
        {{"low", Log2Histogram::slot_low(i)}, {"high", Log2Histogram::slot_high(i)}, {"count", slots[i]}});
  json j{{"kind", "hist"},        {"ts", unix_now_s()},      {"host", host_},          {"probe", h.probe},
         {"unit", h.hist.unit()}, {"count", h.hist.count()}, {"total_ns", h.total_ns}, {"buckets", std::move(buckets)}};
  if (h.rank)
    put_identity(j, *h.rank);
  else
    j["pid"] = h.pid;
  if (h.comm) j["communicator"] = communicator_json(h.comm, h.comm_rank);
  write(j, false);
}

void JsonSink::summary(const SessionSummary& s) {
  json j{{"kind", "status"},
         {"event", "summary"},
         {"ts", unix_now_s()},
         {"host", host_},
         {"traced_seconds", s.traced_seconds},
         {"calls", s.detector.calls},
         {"instances", s.detector.instances},
         {"ringbuf_drops", s.ringbuf_drops},
         {"decode_rejected", s.decode_rejected},
         {"sequence_gaps", s.detector.sequence_gaps},
         {"discarded_calls", s.detector.discarded_calls},
         {"aligned_by_sequence", s.detector.aligned_by_sequence},
         {"order_mismatches", s.detector.order_mismatches},
         {"communicators", s.communicators},
         {"orphan_returns", s.orphan_returns},
         {"untimed_calls", s.untimed_calls},
         {"unknown_process", s.detector.unknown_process},
         {"late_calls", s.detector.late_calls},
         {"recording_dropped", s.recording_dropped},
         {"findings", s.findings.size()}};
  write(j, true);
}

}  // namespace slowburn
