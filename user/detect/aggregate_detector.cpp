#include "detect/aggregate_detector.h"

#include <algorithm>
#include <optional>

#include "detect/verdict.h"
#include "slowburn/collagg.h"
#include "stats/robust.h"

namespace slowburn {

namespace {
constexpr size_t kKeptFindings = 1000;
constexpr uint64_t kBaselineIdle = 720;  // windows: an hour of 5 s windows

double mean(uint64_t sum, uint64_t count) { return static_cast<double>(sum) / static_cast<double>(count); }

std::vector<double> peers_of(const std::map<int32_t, double>& values, int32_t self) {
  std::vector<double> peers;
  for (const auto& [pid, v] : values)
    if (pid != self) peers.push_back(v);
  return peers;
}

int comm_size(const CommunicatorRef& comm) { return comm && comm->size ? *comm->size : 0; }
uint32_t comm_id(const CommunicatorRef& comm) { return comm ? comm->id : 0; }

// The collective slower than its usual, and what the node said of ranks'
// data paths in the window (detect/inside.h judge_transport).
struct TransportInput {
  std::map<int32_t, std::string> evidence;
  std::optional<double> ratio;
  double excess_ns = 0;
};

// The inside test on the kernel's sums (detect/inside.h): each rank's CPU
// times inside its synchronizing calls against its peers'. The kernel keeps
// no instance's time after its last arrival, so a rank's cost is its
// run-queue wait beyond the peers' median, uncapped. Where nobody's CPU is
// set apart, by the data path the node named.
void judge_inside_window(WindowReport& report, const std::vector<const AggWindowInput*>& ranks, uint64_t elapsed_ns,
                         const InsideThresholds& thresholds, const TransportInput& transport) {
  std::map<int32_t, InsideSums> sums;
  for (const AggWindowInput* in : ranks) {
    if (!in->cpu_calls || !in->cpu_wait_ns) continue;
    InsideSums& s = sums[in->identity.pid];
    s.calls = in->cpu_calls;
    s.duration_ns = in->cpu_wait_ns;
    s.oncpu_ns = std::min(in->oncpu_ns, in->cpu_wait_ns);
    s.has_runq = in->runq_calls == in->cpu_calls;
    s.runq_ns = s.has_runq ? std::min(in->runq_ns, in->cpu_wait_ns) : 0;
  }
  std::vector<InsideJudgement> judged;
  if (sums.size() >= 2) judged = judge_inside(sums, UINT64_MAX, elapsed_ns, thresholds);
  bool anyone_apart = std::any_of(judged.begin(), judged.end(), [](const InsideJudgement& j) { return j.apart; });
  if (!anyone_apart && transport.ratio && !transport.evidence.empty())
    for (InsideJudgement& t : judge_transport(transport.evidence, ranks.size(), transport.ratio, transport.excess_ns, 0,
                                              elapsed_ns, thresholds)) {
      auto cpu = std::find_if(judged.begin(), judged.end(), [&](const InsideJudgement& j) { return j.pid == t.pid; });
      if (cpu == judged.end()) {
        judged.push_back(std::move(t));
        continue;
      }
      cpu->cost_ns = t.cost_ns;  // its CPU shares stay said beside what its path did
      cpu->cost_share = t.cost_share;
      cpu->apart = true;
      cpu->transport = std::move(t.transport);
    }
  outweigh_by_late_arrivals(judged, late_blame_ns(report));
  for (const InsideJudgement& j : judged)
    for (RankWindowStats& stats : report.ranks) {
      if (stats.identity.pid != j.pid) continue;
      if (j.cpu_read) {
        stats.inside_oncpu_share = j.oncpu_share;
        stats.inside_runq_share = j.runq_share;
        stats.inside_peers_oncpu_share = j.peers_oncpu_share;
        stats.inside_peers_runq_share = j.peers_runq_share;
      }
      stats.inside_cost_ns = static_cast<double>(j.cost_ns);
      stats.inside_cost_share = j.cost_share;
      stats.inside_flagged = j.apart;
      stats.inside_transport = j.apart ? j.transport : std::string();
    }
}

// The collective's own time in a window, from the kernel's sums: the least
// mean wait of its ranks (the rank that arrives last waits for the
// collective alone; where arrivals take turns, a little more, alike in
// every window). Unlike trace's median instance it is a mean: a few
// instances stalled for a retransmission raise it.
std::optional<double> least_mean_wait(const std::vector<const AggWindowInput*>& ranks, uint64_t min_calls) {
  std::optional<double> least;
  for (const AggWindowInput* in : ranks)
    if (in->calls >= min_calls) {
      double w = mean(in->wait_ns, in->calls);
      if (!least || w < *least) least = w;
    }
  return least;
}
}  // namespace

AggregateDetector::AggregateDetector(DetectorConfig config, std::vector<ProbeInfo> probes)
    : config_(config), slow_burn_(config, probes) {
  for (ProbeInfo& p : probes) probes_.emplace(p.id, std::move(p));
}

void AggregateDetector::record(Finding f, DetectorOutput& out) {
  // Every straggler carries its severity, as trace's do (minor below 10% of the time).
  if (f.type == "straggler" && f.severity.empty())
    f.severity = severity_of(f.cost_share, config_.session_cost_thresholds);
  active_[f.culprit.pid] = f;
  findings_.push_back(f);
  // A service runs for months: keep the recent findings, the metrics count them all.
  if (findings_.size() > kKeptFindings) findings_.erase(findings_.begin());
  out.findings.push_back(std::move(f));
}

bool AggregateDetector::slow_burn_standing(int32_t pid) const {
  auto f = active_.find(pid);
  return f != active_.end() && f->second.detector == "session-cost";
}

// The slow burn: a rank whose cost over the lane's baseline passes the
// floor stands while the rule holds. A window's or the sequential test's
// finding on it (a straggler grown strong) replaces it.
void AggregateDetector::judge_slow_burn(uint64_t start_ns, uint64_t end_ns, const std::vector<AggWindowInput>& inputs,
                                        DetectorOutput& out) {
  if (!config_.session_cost) return;
  slow_burn_.add(start_ns, end_ns, inputs);
  slow_burn_.judge(end_ns);
  const std::map<int32_t, Finding>& named = slow_burn_.named();
  for (auto it = active_.begin(); it != active_.end();)
    it = it->second.detector == "session-cost" && !named.contains(it->first) ? active_.erase(it) : std::next(it);
  std::erase_if(slow_burn_said_, [&](int32_t pid) { return !named.contains(pid); });
  for (const auto& [pid, f] : named) {
    auto standing = active_.find(pid);
    if (standing != active_.end() && standing->second.detector != "session-cost") continue;  // a stronger rule's
    if (slow_burn_said_.insert(pid).second) {
      // Said once while the rule names it, also when it comes back from
      // under another rule's finding (it was not said then).
      record(f, out);
    } else {
      // Its evidence now (the cost grows: minor may turn major).
      Finding now = f;
      now.severity = severity_of(now.cost_share, config_.session_cost_thresholds);
      active_[pid] = std::move(now);
    }
  }
  // Withheld as the scheduler's choice: not a finding, but said (a note,
  // once a rank), as trace's verdict lists it: nothing found is dropped
  // unsaid, and an operator who gives the ranks their CPUs sees it go.
  for (const auto& [pid, w] : slow_burn_.withheld())
    if (withheld_said_.insert(pid).second) out.notes.push_back("withheld: " + w.summary);
}

WindowReport AggregateDetector::report_for(uint32_t probe_id, uint64_t start_ns, uint64_t end_ns,
                                           const std::vector<const AggWindowInput*>& ranks, const Pool& pool) const {
  const ProbeInfo& info = probes_.at(probe_id);
  WindowReport report;
  report.start_ns = start_ns;
  report.end_ns = end_ns;
  report.probe_id = probe_id;
  report.probe = info.name;
  report.kind = info.kind;
  report.comm = ranks.front()->comm;
  report.aligned = info.kind == CallKind::synchronizing;
  uint64_t elapsed_ns = end_ns > start_ns ? end_ns - start_ns : 0;
  for (const AggWindowInput* in : ranks) report.instances += in->instances;

  std::vector<std::optional<double>> lateness, gaps;
  for (const AggWindowInput* in : ranks) {
    RankWindowStats stats;
    stats.identity = in->identity;
    stats.comm_rank = in->comm_rank;
    stats.calls = in->calls;
    if (in->calls) stats.wait_mean_ns = mean(in->wait_ns, in->calls);
    if (in->gaps) stats.gap_median_ns = mean(in->gap_ns, in->gaps);
    stats.instances = in->arrivals;
    stats.blame_ns = static_cast<double>(in->blame_ns);
    stats.blame_share = elapsed_ns ? stats.blame_ns / static_cast<double>(elapsed_ns) : 0;
    stats.blame_leaving_share =
        in->blame_ns ? std::min(1.0, static_cast<double>(in->blame_leaving_ns) / static_cast<double>(in->blame_ns)) : 0;
    stats.last_fraction =
        report.instances ? std::min(1.0, static_cast<double>(in->lasts) / static_cast<double>(report.instances)) : 0;
    lateness.push_back(in->arrivals ? std::optional(mean(in->lateness_ns, in->arrivals)) : std::nullopt);
    gaps.push_back(stats.gap_median_ns);
    report.ranks.push_back(std::move(stats));
  }
  if (info.kind != CallKind::synchronizing) return report;

  // The kernel measures lateness after the instance's first arrival; the
  // report's is after the median rank's, as in the per-call detector.
  std::vector<double> present;
  for (const auto& l : lateness)
    if (l) present.push_back(*l);
  auto median_lateness = median(present);
  for (size_t i = 0; i < report.ranks.size(); ++i)
    if (lateness[i] && median_lateness) report.ranks[i].lateness_median_ns = *lateness[i] - *median_lateness;

  // With per-rank means only, each rank is judged against its peers' means
  // (the ranks doing the same step on communicators of its size).
  if (pool.lateness_ns.size() >= 3) {
    for (size_t i = 0; i < report.ranks.size(); ++i) {
      RankWindowStats& stats = report.ranks[i];
      int32_t pid = stats.identity.pid;
      if (lateness[i]) stats.z_lateness = robust_z_against(*lateness[i], peers_of(pool.lateness_ns, pid));
      if (gaps[i]) stats.z_gap = robust_z_against(*gaps[i], peers_of(pool.gap_ns, pid));
    }
  }
  return report;
}

// (job, communicator, probe): a job's groups are separate collectives.
void AggregateDetector::group(uint64_t start_ns, const std::vector<AggWindowInput>& inputs,
                              std::map<GroupKey, std::vector<const AggWindowInput*>>& groups,
                              std::map<PoolKey, Pool>& pools) {
  for (const AggWindowInput& in : inputs) {
    if (!probes_.contains(in.probe_id)) continue;
    first_seen_ns_.try_emplace(in.identity.pid, start_ns);
    if (!in.calls) continue;
    groups[{in.identity.job, comm_id(in.comm), in.probe_id}].push_back(&in);
    Pool& pool = pools[{in.identity.job, in.probe_id, comm_size(in.comm)}];
    if (in.arrivals) pool.lateness_ns[in.identity.pid] = mean(in.lateness_ns, in.arrivals);
    if (in.gaps) pool.gap_ns[in.identity.pid] = mean(in.gap_ns, in.gaps);
  }
}

bool AggregateDetector::sequential_alarm(int32_t pid) const {
  for (const auto& [key, test] : sequential_)
    if (key.second == pid && test.alarmed()) return true;
  return false;
}

Finding AggregateDetector::sequential_finding(const WindowReport& report, const RankWindowStats& evidence,
                                              const BernoulliCusum& test, uint64_t end_ns) {
  int32_t pid = evidence.identity.pid;
  Finding f = straggler_finding("sequential", report, evidence, end_ns);
  set_sequential_evidence(f, test, config_);
  // The windows' blame so far and this interval's (the window in progress is
  // not summed yet).
  f.cost_ns = total_blame_ns_[{pid, report.probe_id}] + static_cast<uint64_t>(evidence.blame_ns);
  uint64_t traced_ns = end_ns - std::min(end_ns, first_seen_ns_[pid]);
  f.cost_share = traced_ns ? static_cast<double>(f.cost_ns) / static_cast<double>(traced_ns) : 0;
  f.summary = straggler_summary(f);
  return f;
}

DetectorOutput AggregateDetector::observe_interval(uint64_t start_ns, uint64_t end_ns,
                                                   const std::vector<AggWindowInput>& inputs) {
  DetectorOutput out;
  if (!config_.sequential) return out;
  std::map<GroupKey, std::vector<const AggWindowInput*>> groups;
  std::map<PoolKey, Pool> pools;
  group(start_ns, inputs, groups, pools);
  const SequentialParams params{config_.seq_p0, config_.seq_p1, config_.seq_arl0};
  for (const auto& [key, ranks] : groups) {
    const auto& [job, comm, probe] = key;
    if (probes_.at(probe).kind != CallKind::synchronizing) continue;
    // Instances are judged per communicator: calls of handles not named yet
    // (slot 0) may mix several communicators' instances.
    if (comm == 0) continue;
    // Between two ranks "last" is a coin one of them always wins: as in trace, pairs are the windows'.
    size_t members = 0;
    for (const AggWindowInput* in : ranks) members += in->arrivals > 0;
    if (members < SB_SEQ_MIN_RANKS) continue;
    for (const AggWindowInput* in : ranks) {
      int32_t pid = in->identity.pid;
      BernoulliCusum& test = sequential_.try_emplace({key, pid}, params).first->second;
      bool was_alarmed = test.alarmed();
      test.add_counts(in->arrivals, in->seq_events);
      if (!test.alarmed() || was_alarmed || (active_.contains(pid) && !slow_burn_standing(pid))) continue;
      const Pool& pool = pools[{job, probe, comm_size(ranks.front()->comm)}];
      out.windows.push_back(report_for(probe, start_ns, end_ns, ranks, pool));
      WindowReport& report = out.windows.back();
      auto evidence = std::find_if(report.ranks.begin(), report.ranks.end(),
                                   [pid](const RankWindowStats& r) { return r.identity.pid == pid; });
      double all_blame = 0;
      for (const RankWindowStats& r : report.ranks) all_blame += r.blame_ns;
      evidence->blame_dominance = all_blame > 0 ? evidence->blame_ns / all_blame : 0;
      record(sequential_finding(report, *evidence, test, end_ns), out);
    }
  }
  return out;
}

DetectorOutput AggregateDetector::evaluate(uint64_t start_ns, uint64_t end_ns,
                                           const std::vector<AggWindowInput>& inputs) {
  DetectorOutput out;
  std::map<GroupKey, std::vector<const AggWindowInput*>> groups;
  std::map<PoolKey, Pool> pools;
  group(start_ns, inputs, groups, pools);
  for (const AggWindowInput& in : inputs)
    if (probes_.contains(in.probe_id)) total_blame_ns_[{in.identity.pid, in.probe_id}] += in.blame_ns;

  std::map<int32_t, std::pair<size_t, size_t>> flagged;  // pid -> (report, rank) with the most blame
  std::map<int32_t, std::pair<size_t, size_t>> inside;   // pid -> (report, rank) its CPU cost the most
  std::set<int32_t> evaluated;
  for (const auto& [key, ranks] : groups) {
    const auto& [job, comm, probe] = key;
    const Pool& pool = pools[{job, probe, comm_size(ranks.front()->comm)}];
    out.windows.push_back(report_for(probe, start_ns, end_ns, ranks, pool));
    WindowReport& report = out.windows.back();
    if (report.kind != CallKind::synchronizing || report.instances < config_.min_instances) continue;
    size_t aligned = 0;
    for (const RankWindowStats& s : report.ranks) aligned += s.lateness_median_ns.has_value();
    if (aligned < 2) continue;
    flag_straggler(report, config_, pool.lateness_ns.size());
    if (config_.inside) {
      TransportInput transport;
      if (auto least = least_mean_wait(ranks, config_.min_instances)) {
        auto& [baseline, seen] = inside_baselines_[key];
        seen = window_index_;
        transport.ratio = baseline.observe(*least);
        // No more than the window: what the collective waited beyond its usual.
        if (transport.ratio && *transport.ratio > 0)
          transport.excess_ns =
              std::min(std::max(0.0, *least - *least / *transport.ratio) * static_cast<double>(report.instances),
                       static_cast<double>(end_ns - std::min(end_ns, start_ns)));
        transport.evidence = transport_in(ranks, start_ns, end_ns);
      }
      judge_inside_window(report, ranks, end_ns - std::min(end_ns, start_ns), config_.inside_thresholds, transport);
    }
    for (size_t i = 0; i < report.ranks.size(); ++i) {
      const RankWindowStats& s = report.ranks[i];
      evaluated.insert(s.identity.pid);
      total_inside_cost_ns_[{s.identity.pid, probe}] += static_cast<uint64_t>(s.inside_cost_ns);
      if (s.inside_flagged) {
        auto in = inside.find(s.identity.pid);
        if (in == inside.end() ||
            s.inside_cost_share > out.windows[in->second.first].ranks[in->second.second].inside_cost_share)
          inside[s.identity.pid] = {out.windows.size() - 1, i};
      }
      if (!s.flagged) continue;
      auto it = flagged.find(s.identity.pid);
      if (it == flagged.end() || s.blame_share > out.windows[it->second.first].ranks[it->second.second].blame_share)
        flagged[s.identity.pid] = {out.windows.size() - 1, i};
    }
  }

  // A standing finding on a rank that no window judged for N windows (idle,
  // checkpointing, or gone without remove_rank) is stale: cleared, and its
  // history restarts.
  ++window_index_;
  // A communicator not judged for an hour of windows (its job ended: ids
  // are not reused) takes its baseline with it; a service runs for months.
  std::erase_if(inside_baselines_, [this](const auto& kv) { return window_index_ - kv.second.second > kBaselineIdle; });
  for (int32_t pid : evaluated) last_evaluated_[pid] = window_index_;
  for (auto it = last_evaluated_.begin(); it != last_evaluated_.end();) {
    if (window_index_ - it->second < static_cast<uint64_t>(config_.persistence_n)) {
      ++it;
      continue;
    }
    active_.erase(it->first);
    history_.erase(it->first);
    std::erase_if(sequential_, [pid = it->first](const auto& kv) { return kv.first.second == pid; });
    it = last_evaluated_.erase(it);
  }

  for (int32_t pid : evaluated) {
    std::deque<bool>& history = history_[pid];
    auto arrival_hit = flagged.find(pid);
    auto inside_hit = inside.find(pid);
    bool arrival = arrival_hit != flagged.end();
    bool on_time = !arrival && inside_hit != inside.end();  // and the collective waited for its CPU
    history.push_back(arrival || on_time);
    while (history.size() > static_cast<size_t>(config_.persistence_n)) history.pop_front();
    int count = static_cast<int>(std::count(history.begin(), history.end(), true));
    // Cleared, unless its sequential test still holds it: a recurrence is a new finding.
    if (count == 0 && !sequential_alarm(pid) && !slow_burn_standing(pid)) active_.erase(pid);
    if (!(arrival || on_time) || count < config_.persistence_m || (active_.contains(pid) && !slow_burn_standing(pid)))
      continue;

    auto [report_index, rank_index] = arrival ? arrival_hit->second : inside_hit->second;
    const WindowReport& report = out.windows[report_index];
    const RankWindowStats& evidence = report.ranks[rank_index];
    Finding f =
        arrival ? straggler_finding("persistence", report, evidence, end_ns) : inside_finding(report, evidence, end_ns);
    f.windows_flagged = count;
    f.windows_considered = static_cast<int>(history.size());
    f.cost_ns = arrival ? total_blame_ns_[{pid, report.probe_id}] : total_inside_cost_ns_[{pid, report.probe_id}];
    uint64_t traced_ns = end_ns - std::min(end_ns, first_seen_ns_[pid]);
    f.cost_share = traced_ns ? static_cast<double>(f.cost_ns) / static_cast<double>(traced_ns) : 0;
    f.summary = straggler_summary(f);
    record(std::move(f), out);
  }
  judge_slow_burn(start_ns, end_ns, inputs, out);
  return out;
}

void AggregateDetector::device_event(const DeviceEvent& event, const std::vector<RankIdentity>& ranks,
                                     const ConcernsCulprit& concerns) {
  for (auto& [pid, evidence] : transport_evidence_of(event, event.ts_ns, ranks, concerns))
    transport_evidence(pid, std::move(evidence));
  for (const OwnCpuCause& cause : own_cpu_cause_of(event, event.ts_ns, ranks, concerns)) own_cpu_cause(cause);
}

void AggregateDetector::transport_evidence(int32_t pid, TransportEvidence evidence) {
  if (!config_.inside) return;
  uint64_t ts = evidence.ts_ns;
  std::multimap<uint64_t, TransportEvidence>& said = transport_[pid];
  // Kept for the windows it weighs in only: a node says a standing cause
  // again every 30 s, for as long as the rank runs.
  uint64_t keep_ns = config_.inside_thresholds.transport_after_ns + 2 * config_.window_ns;
  while (!said.empty() && said.begin()->first + keep_ns < ts) said.erase(said.begin());
  said.emplace(ts, std::move(evidence));
}

std::map<int32_t, std::string> AggregateDetector::transport_in(const std::vector<const AggWindowInput*>& ranks,
                                                               uint64_t start_ns, uint64_t end_ns) {
  const uint64_t after = config_.inside_thresholds.transport_after_ns;
  std::map<int32_t, std::string> out;
  for (const AggWindowInput* in : ranks) {
    auto kept = transport_.find(in->identity.pid);
    if (kept == transport_.end()) continue;
    std::multimap<uint64_t, TransportEvidence>& said = kept->second;
    // Windows close in order: what was said before this one by more than
    // its hold is past (said again every 30 s while it holds).
    while (!said.empty() && said.begin()->first + after < start_ns) said.erase(said.begin());
    auto judged = said.upper_bound(end_ns);
    if (judged != said.begin()) out[in->identity.pid] = std::prev(judged)->second.summary;
  }
  return out;
}

void AggregateDetector::remove_rank(int32_t pid) {
  transport_.erase(pid);
  slow_burn_.remove_rank(pid);
  slow_burn_said_.erase(pid);
  withheld_said_.erase(pid);
  history_.erase(pid);
  last_evaluated_.erase(pid);
  active_.erase(pid);
  first_seen_ns_.erase(pid);
  std::erase_if(total_blame_ns_, [pid](const auto& kv) { return kv.first.first == pid; });
  std::erase_if(total_inside_cost_ns_, [pid](const auto& kv) { return kv.first.first == pid; });
  std::erase_if(sequential_, [pid](const auto& kv) { return kv.first.second == pid; });
}

}  // namespace slowburn
