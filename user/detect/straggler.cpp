#include "detect/straggler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/format.h"
#include "core/strings.h"
#include "detect/verdict.h"
#include "stats/robust.h"

namespace slowburn {

namespace {
constexpr double kCusumInputCap = 5.0;  // one wild window must not alarm on its own

// Every value of every accumulator but one: a rank's peers.
std::vector<double> peers_of(const std::vector<const std::vector<double>*>& per_rank, size_t except) {
  std::vector<double> values;
  for (size_t j = 0; j < per_rank.size(); ++j)
    if (j != except) values.insert(values.end(), per_rank[j]->begin(), per_rank[j]->end());
  return values;
}

}  // namespace

struct StragglerDetector::RankAccum {
  uint64_t calls = 0;
  std::vector<double> waits_ns;
  uint64_t instances = 0;
  std::vector<double> lateness_ns;
  std::vector<double> gaps_ns;
  double blame_ns = 0;
  uint64_t last_count = 0;
};

struct StragglerDetector::ProbeAccum {
  uint64_t instances = 0;
  std::map<int32_t, RankAccum> ranks;
};

struct StragglerDetector::Window {
  uint64_t index = 0;
  std::map<uint32_t, ProbeAccum> probes;
};

struct StragglerDetector::ProbeState {
  ProbeInfo info;
  std::set<int32_t> attached;  // ranks this probe is attached in
  CollectiveAligner aligner;
  std::map<int32_t, Cusum> cusum;
  std::map<int32_t, uint64_t> total_blame_ns;
};

StragglerDetector::StragglerDetector(DetectorConfig config, std::vector<ProbeInfo> probes) : config_(config) {
  for (ProbeInfo& info : probes) {
    auto state = std::make_unique<ProbeState>();
    state->info = std::move(info);
    probes_.emplace(state->info.id, std::move(state));
  }
}

StragglerDetector::~StragglerDetector() = default;
StragglerDetector::StragglerDetector(StragglerDetector&&) noexcept = default;
StragglerDetector& StragglerDetector::operator=(StragglerDetector&&) noexcept = default;

void StragglerDetector::add_rank(const RankIdentity& rank) {
  identities_[rank.pid] = rank;
  alive_.insert(rank.pid);
}

void StragglerDetector::add_participant(uint32_t probe_id, int32_t pid) {
  auto probe = probes_.find(probe_id);
  if (probe == probes_.end() || !identities_.contains(pid)) return;
  probe->second->attached.insert(pid);
  if (probe->second->info.kind == CallKind::synchronizing) probe->second->aligner.add_participant(pid);
}

const RankIdentity& StragglerDetector::identity(int32_t pid) const { return identities_.at(pid); }

void StragglerDetector::remove_rank(int32_t pid, DetectorOutput& out) {
  if (!alive_.erase(pid)) return;
  out.notes.push_back(fmt::format("{} exited", rank_label(identity(pid))));
  for (auto& [id, state] : probes_) state->aligner.remove_participant(pid);
}

StragglerDetector::Window* StragglerDetector::window_for(uint64_t ts_ns) {
  uint64_t index = ts_ns / config_.window_ns;
  if (index < closed_before_index_) {
    // Its window was evaluated already; adding it to a later one would
    // inflate that window's blame. Cumulative costs still count it.
    ++counters_.late_calls;
    return nullptr;
  }
  auto& slot = windows_[index];
  if (!slot) {
    slot = std::make_unique<Window>();
    slot->index = index;
  }
  return slot.get();
}

void StragglerDetector::ingest(const CallEvent& call) {
  int32_t pid = static_cast<int32_t>(call.pid);
  auto probe = probes_.find(call.probe_id);
  if (!identities_.contains(pid) || probe == probes_.end()) {
    ++counters_.unknown_process;
    return;
  }
  ++counters_.calls;
  if (first_ns_ == 0 || call.entry_ns < first_ns_) first_ns_ = call.entry_ns;
  last_ns_ = std::max(last_ns_, call.exit_ns);

  // seq 0: the kernel could not number it (its counter map was full).
  uint64_t seq_key = (uint64_t{call.tid} << 32) | call.probe_id;
  auto [seq_it, first_call] = last_seq_.try_emplace(seq_key, call.seq);
  if (!first_call && call.seq != 0) {
    if (call.seq > seq_it->second + 1) counters_.sequence_gaps += call.seq - seq_it->second - 1;
    seq_it->second = call.seq;
  }

  std::optional<uint64_t> gap_ns;
  auto [exit_it, first_exit] = last_exit_by_tid_.try_emplace(call.tid, call.exit_ns);
  if (!first_exit) {
    if (call.entry_ns >= exit_it->second) gap_ns = call.entry_ns - exit_it->second;
    exit_it->second = call.exit_ns;
  }

  if (Window* window = window_for(call.exit_ns)) {
    RankAccum& accum = window->probes[call.probe_id].ranks[pid];
    ++accum.calls;
    accum.waits_ns.push_back(static_cast<double>(call.duration_ns()));
  }

  ProbeState& state = *probe->second;
  if (state.info.kind != CallKind::synchronizing) return;
  // A rank left out as idle rejoins when it calls again.
  if (!state.aligner.has_participant(pid)) {
    if (!alive_.contains(pid) || !state.attached.contains(pid)) return;
    state.aligner.add_participant(pid);
  }
  state.aligner.add({pid, call.entry_ns, call.exit_ns, gap_ns});
  for (const CollectiveInstance& instance : state.aligner.take_ready()) account_instance(call.probe_id, instance);
}

void StragglerDetector::account_instance(uint32_t probe_id, const CollectiveInstance& instance) {
  ++counters_.instances;
  ProbeState& state = *probes_.at(probe_id);

  // The last to arrive is blamed for how much later than the second-to-last
  // it came: how much sooner the collective would have started without it.
  const RankCall* last = nullptr;
  const RankCall* second = nullptr;
  for (const RankCall& call : instance.calls) {
    if (!last || call.entry_ns > last->entry_ns) {
      second = last;
      last = &call;
    } else if (!second || call.entry_ns > second->entry_ns) {
      second = &call;
    }
  }
  uint64_t blame = last && second ? last->entry_ns - second->entry_ns : 0;
  if (last && second) state.total_blame_ns[last->pid] += blame;

  Window* window = window_for(instance.release_ns);
  if (!window) return;
  ProbeAccum& accum = window->probes[probe_id];
  ++accum.instances;
  std::vector<double> entries;
  entries.reserve(instance.calls.size());
  for (const RankCall& call : instance.calls) entries.push_back(static_cast<double>(call.entry_ns));
  double median_entry = *median(entries);
  for (const RankCall& call : instance.calls) {
    RankAccum& rank = accum.ranks[call.pid];
    ++rank.instances;
    rank.lateness_ns.push_back(static_cast<double>(call.entry_ns) - median_entry);
    if (call.gap_ns) rank.gaps_ns.push_back(static_cast<double>(*call.gap_ns));
  }
  if (last && second) {
    RankAccum& rank = accum.ranks[last->pid];
    rank.blame_ns += static_cast<double>(blame);
    ++rank.last_count;
  }
}

WindowReport StragglerDetector::evaluate(const Window& window, uint32_t probe_id, const ProbeAccum& accum,
                                         uint64_t elapsed_ns) {
  ProbeState& state = *probes_.at(probe_id);
  WindowReport report;
  report.start_ns = window.index * config_.window_ns;
  report.end_ns = report.start_ns + config_.window_ns;
  report.probe_id = probe_id;
  report.probe = state.info.name;
  report.kind = state.info.kind;
  report.instances = accum.instances;

  for (const auto& [pid, rank] : accum.ranks) {
    RankWindowStats stats;
    stats.identity = identity(pid);
    stats.calls = rank.calls;
    stats.wait_p50_ns = quantile(rank.waits_ns, 0.50);
    stats.wait_p99_ns = quantile(rank.waits_ns, 0.99);
    stats.instances = rank.instances;
    stats.lateness_median_ns = median(rank.lateness_ns);
    stats.gap_median_ns = median(rank.gaps_ns);
    stats.blame_ns = rank.blame_ns;
    stats.blame_share = elapsed_ns ? rank.blame_ns / static_cast<double>(elapsed_ns) : 0;
    stats.last_fraction =
        rank.instances ? static_cast<double>(rank.last_count) / static_cast<double>(rank.instances) : 0;
    report.ranks.push_back(std::move(stats));
  }
  if (state.info.kind != CallKind::synchronizing || report.ranks.size() < 2) return report;

  // Robust z of each rank's median against its peers' per-call values: with
  // a handful of ranks, a MAD over one median per rank mostly measures how
  // the healthy ranks happen to spread; the peers' calls measure how much a
  // rank's arrival normally varies. Fewer than 3 ranks: no z at all.
  std::vector<const std::vector<double>*> lateness_by_rank, gaps_by_rank;
  for (const auto& [pid, rank] : accum.ranks) {
    lateness_by_rank.push_back(&rank.lateness_ns);
    gaps_by_rank.push_back(&rank.gaps_ns);
  }
  std::vector<std::vector<double>> peer_gaps(report.ranks.size());
  for (size_t i = 0; i < report.ranks.size(); ++i) peer_gaps[i] = peers_of(gaps_by_rank, i);
  size_t aligned_count = 0;
  for (const RankWindowStats& stats : report.ranks) aligned_count += stats.lateness_median_ns.has_value();
  if (aligned_count >= 3) {
    for (size_t i = 0; i < report.ranks.size(); ++i) {
      RankWindowStats& stats = report.ranks[i];
      if (stats.lateness_median_ns)
        stats.z_lateness = robust_z_against(*stats.lateness_median_ns, peers_of(lateness_by_rank, i));
      if (stats.gap_median_ns) stats.z_gap = robust_z_against(*stats.gap_median_ns, peer_gaps[i]);
    }
  }

  bool enough = accum.instances >= config_.min_instances && aligned_count >= 2;
  if (enough) flag_straggler(report, config_, aligned_count);

  // CUSUM input: how much longer this rank computes than its peers, as a
  // share of the step period, in units of cusum_unit_share. Normalising by
  // the step, not by the peers' spread, keeps a microsecond-scale gap before
  // a back-to-back collective (tiny, but with a tinier MAD) from alarming.
  double step_ns = accum.instances ? static_cast<double>(elapsed_ns) / static_cast<double>(accum.instances) : 0;
  for (size_t i = 0; enough && step_ns > 0 && i < report.ranks.size(); ++i) {
    RankWindowStats& stats = report.ranks[i];
    auto peer_median = median(peer_gaps[i]);
    if (!stats.gap_median_ns || !peer_median) continue;
    Cusum& cusum =
        state.cusum.try_emplace(stats.identity.pid, config_.cusum_allowance, config_.cusum_decision).first->second;
    double excess_share = (*stats.gap_median_ns - *peer_median) / step_ns;
    cusum.add(std::clamp(excess_share / config_.cusum_unit_share, -kCusumInputCap, kCusumInputCap));
    stats.cusum_gap = cusum.statistic();
  }

  return report;
}

void StragglerDetector::close_window(Window& window, uint64_t now_ns, DetectorOutput& out) {
  uint64_t start = window.index * config_.window_ns;
  uint64_t end = start + config_.window_ns;
  // Traced time inside this window: the first and last windows are partial.
  uint64_t from = std::max(start, first_ns_);
  uint64_t to = std::min(end, std::max(last_ns_, from));  // not now: a stalled tail is not traced time
  uint64_t elapsed = to > from ? to - from : 0;

  std::map<int32_t, std::pair<const WindowReport*, const RankWindowStats*>> flagged;
  std::set<int32_t> evaluated_ranks;
  size_t first_report = out.windows.size();
  for (const auto& [probe_id, accum] : window.probes) out.windows.push_back(evaluate(window, probe_id, accum, elapsed));

  for (size_t i = first_report; i < out.windows.size(); ++i) {
    const WindowReport& report = out.windows[i];
    if (report.kind != CallKind::synchronizing || report.instances < config_.min_instances) continue;
    for (const RankWindowStats& stats : report.ranks) {
      evaluated_ranks.insert(stats.identity.pid);
      if (!stats.flagged) continue;
      auto& best = flagged[stats.identity.pid];
      if (!best.second || stats.blame_share > best.second->blame_share) best = {&report, &stats};
    }
    // Slow onset: CUSUM alarm on a unique worst rank above the lower floor.
    ProbeState& state = *probes_.at(report.probe_id);
    for (const RankWindowStats& stats : report.ranks) {
      auto cusum = state.cusum.find(stats.identity.pid);
      if (cusum == state.cusum.end() || !cusum->second.alarmed() || stats.flagged ||
          active_findings_.contains(stats.identity.pid))
        continue;
      bool worst = std::all_of(report.ranks.begin(), report.ranks.end(), [&](const RankWindowStats& o) {
        return &o == &stats || stats.blame_ns >= config_.uniqueness_ratio * o.blame_ns;
      });
      if (!worst || stats.blame_share < config_.cusum_min_blame_share ||
          stats.last_fraction < config_.min_last_fraction)
        continue;
      active_findings_.insert(stats.identity.pid);
      raise_finding(straggler_finding("cusum", report, stats, now_ns), out);
    }
  }
  for (int32_t pid : evaluated_ranks) {
    auto it = flagged.find(pid);
    update_persistence(pid, it != flagged.end(), it != flagged.end() ? it->second.first : nullptr,
                       it != flagged.end() ? it->second.second : nullptr, now_ns, out);
  }
}

void StragglerDetector::update_persistence(int32_t pid, bool flagged, const WindowReport* report,
                                           const RankWindowStats* evidence, uint64_t now_ns, DetectorOutput& out) {
  std::deque<bool>& history = history_[pid];
  history.push_back(flagged);
  while (history.size() > static_cast<size_t>(config_.persistence_n)) history.pop_front();
  int count = static_cast<int>(std::count(history.begin(), history.end(), true));
  // Cleared once neither test holds any more: a recurrence is a new finding.
  bool onset = std::any_of(probes_.begin(), probes_.end(), [&](const auto& probe) {
    auto it = probe.second->cusum.find(pid);
    return it != probe.second->cusum.end() && it->second.alarmed();
  });
  if (count == 0 && !onset) active_findings_.erase(pid);
  if (!flagged || count < config_.persistence_m || active_findings_.contains(pid)) return;

  Finding f = straggler_finding("persistence", *report, *evidence, now_ns);
  f.windows_flagged = count;
  f.windows_considered = static_cast<int>(history.size());
  active_findings_.insert(pid);
  raise_finding(std::move(f), out);
}

uint64_t StragglerDetector::blame_ns(uint32_t probe_id, int32_t pid) const {
  auto probe = probes_.find(probe_id);
  if (probe == probes_.end()) return 0;
  auto it = probe->second->total_blame_ns.find(pid);
  return it == probe->second->total_blame_ns.end() ? 0 : it->second;
}

void StragglerDetector::raise_finding(Finding finding, DetectorOutput& out) {
  findings_.push_back(std::move(finding));
  // Cost and summary as of now; findings() refreshes both later.
  out.findings.push_back(findings().back());
}

std::vector<Finding> StragglerDetector::findings() const {
  std::vector<Finding> result = findings_;
  uint64_t traced_ns = last_ns_ > first_ns_ ? last_ns_ - first_ns_ : 0;
  for (Finding& f : result) {
    if (f.type != "straggler") continue;
    for (const auto& [id, state] : probes_) {
      if (state->info.name != f.probe) continue;
      f.cost_ns = blame_ns(id, f.culprit.pid);
    }
    f.cost_share = traced_ns ? static_cast<double>(f.cost_ns) / static_cast<double>(traced_ns) : 0;
    f.summary = straggler_summary(f);
  }
  return result;
}

DetectorOutput StragglerDetector::advance(uint64_t now_ns) {
  DetectorOutput out;
  // Ranks that others completed collectives without: not in this
  // communicator (or not attached). They stop holding instances back.
  if (now_ns > config_.idle_ns) {
    for (auto& [id, state] : probes_) {
      if (state->info.kind != CallKind::synchronizing) continue;
      for (int32_t pid : state->aligner.idle_participants(now_ns - config_.idle_ns)) {
        state->aligner.remove_participant(pid);
        out.notes.push_back(
            fmt::format("{} made no {} call while the other ranks completed theirs for {}: aligning without it "
                        "(another communicator?)",
                        rank_label(identity(pid)), state->info.name, format_ns(static_cast<double>(config_.idle_ns))));
      }
      for (const CollectiveInstance& instance : state->aligner.take_ready()) account_instance(id, instance);
    }
  }
  close_windows(now_ns, false, out);
  counters_.discarded_calls = 0;
  for (const auto& [id, state] : probes_) counters_.discarded_calls += state->aligner.discarded_calls();
  return out;
}

void StragglerDetector::close_windows(uint64_t now_ns, bool all, DetectorOutput& out) {
  while (!windows_.empty()) {
    auto it = windows_.begin();
    uint64_t end = (it->first + 1) * config_.window_ns;
    if (!all && end + config_.grace_ns > now_ns) break;
    close_window(*it->second, now_ns, out);
    closed_before_index_ = it->first + 1;
    windows_.erase(it);
  }
}

DetectorOutput StragglerDetector::finish(uint64_t now_ns) {
  DetectorOutput out = advance(now_ns);
  close_windows(now_ns, true, out);
  return out;
}

DetectorOutput StragglerDetector::check_in_flight(uint64_t now_ns, const std::vector<InFlightCall>& calls) {
  DetectorOutput out;
  for (const auto& [id, state] : probes_) {
    if (state->info.kind != CallKind::synchronizing || state->attached.size() < 2) continue;
    std::map<int32_t, uint64_t> waiting_since;  // rank pid -> earliest entry still inside
    for (const InFlightCall& call : calls) {
      int32_t pid = static_cast<int32_t>(call.tgid);
      // A call entered after now_ns was read is not waiting yet (and would underflow).
      if (call.probe_id != id || call.entry_ns > now_ns || !alive_.contains(pid)) continue;
      auto [it, inserted] = waiting_since.try_emplace(pid, call.entry_ns);
      if (!inserted) it->second = std::min(it->second, call.entry_ns);
    }
    // Among the ranks this probe is attached in: who has waited inside it for
    // hang_ns, who is not inside at all (alive elsewhere, or exited).
    std::set<int32_t> stuck, absent;
    uint64_t longest = 0;
    for (int32_t pid : state->attached) {
      auto it = waiting_since.find(pid);
      if (it == waiting_since.end()) {
        absent.insert(pid);
      } else if (now_ns - it->second >= config_.hang_ns) {
        stuck.insert(pid);
        longest = std::max(longest, now_ns - it->second);
      }
    }
    // A hang: everyone else waits inside the collective for the absent ranks.
    bool hang = !stuck.empty() && !absent.empty() && stuck.size() + absent.size() == state->attached.size();
    if (!hang) {
      reported_hangs_.erase(id);  // resolved: a later hang is reported again
      continue;
    }
    if (reported_hangs_[id] == absent) continue;
    reported_hangs_[id] = absent;
    std::vector<std::string> waiting;
    std::vector<int> waiting_ranks;
    for (int32_t pid : stuck) {
      waiting_ranks.push_back(identity(pid).rank);
      waiting.push_back(std::to_string(identity(pid).rank));
    }
    for (int32_t pid : absent) {
      Finding f;
      f.type = "hang";
      f.detector = "in-flight";
      f.culprit = identity(pid);
      f.probe = state->info.name;
      f.detected_ns = now_ns;
      f.waited_ns = longest;
      f.waiting_ranks = waiting_ranks;
      f.summary = fmt::format("{} {} {}: rank(s) {} have waited inside it for {}", rank_label(f.culprit),
                              alive_.contains(pid) ? "never entered" : "exited and will never enter", f.probe,
                              join(waiting), format_ns(static_cast<double>(longest)));
      findings_.push_back(f);
      out.findings.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace slowburn
