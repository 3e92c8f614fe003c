// Windows out: per-lane statistics, the tests, persistence and CUSUM
// findings, each finding's run, and the session's verdict.
#include <fmt/format.h>

#include <algorithm>

#include "core/format.h"
#include "detect/straggler.h"
#include "detect/straggler_internal.h"
#include "detect/verdict.h"
#include "stats/peer_sample.h"
#include "stats/robust.h"

namespace slowburn {

namespace {
constexpr double kCusumInputCap = 5.0;  // one wild window must not alarm on its own
constexpr double kTailQuantile = 0.9;

}  // namespace

WindowReport StragglerDetector::evaluate(const Window& window, const LaneKey& key, const LaneAccum& accum,
                                         const PeerPool& pool, uint64_t elapsed_ns) {
  Lane& lane = *lanes_.at(key);
  WindowReport report;
  report.start_ns = window.index * config_.window_ns;
  report.end_ns = report.start_ns + config_.window_ns;
  report.probe_id = key.probe_id;
  report.probe = lane.info.name;
  report.kind = lane.info.kind;
  report.comm = lane.comm;
  report.aligned = lane.aligner.has_value();
  report.instances = accum.instances;

  for (const auto& [pid, rank] : accum.ranks) {
    RankWindowStats stats;
    stats.identity = identity(pid);
    if (auto r = lane.comm_ranks.find(pid); r != lane.comm_ranks.end()) stats.comm_rank = r->second;
    stats.calls = rank.calls;
    stats.wait_p50_ns = quantile(rank.waits_ns, 0.50);
    stats.wait_p99_ns = quantile(rank.waits_ns, 0.99);
    stats.instances = rank.instances;
    stats.lateness_median_ns = median(rank.lateness_ns);
    stats.lateness_p90_ns = quantile(rank.lateness_ns, kTailQuantile);
    stats.gap_median_ns = median(rank.gaps_ns);
    stats.blame_ns = rank.blame_ns;
    stats.blame_share = elapsed_ns ? rank.blame_ns / static_cast<double>(elapsed_ns) : 0;
    stats.blame_leaving_share = rank.blame_ns > 0 ? rank.blame_leaving_ns / rank.blame_ns : 0;
    stats.last_fraction =
        rank.instances ? static_cast<double>(rank.last_count) / static_cast<double>(rank.instances) : 0;
    stats.sequential_statistic = rank.sequential_max;
    stats.sequential_alarm = rank.sequential_alarm;
    report.ranks.push_back(std::move(stats));
  }
  if (!report.aligned || report.ranks.size() < 2) return report;

  // Robust z of each rank's median (and tail) against its peers' per-call
  // values: with a handful of ranks, a MAD over one median per rank mostly
  // measures how the healthy ranks happen to spread; the peers' calls
  // measure how much a rank's arrival normally varies. The peers are every
  // other rank calling this probe in the window, on any communicator. Fewer
  // than 3 such ranks: no z at all.
  const PeerSample& peer_gaps = *pool.gaps;
  const PeerSample& peer_lateness = *pool.lateness;
  size_t aligned_count = 0;
  for (const RankWindowStats& stats : report.ranks) aligned_count += stats.lateness_median_ns.has_value();
  size_t pool_ranks = pool.lateness_ns.size();
  if (pool_ranks >= 3) {
    for (size_t i = 0; i < report.ranks.size(); ++i) {
      RankWindowStats& stats = report.ranks[i];
      int32_t pid = stats.identity.pid;
      if (stats.lateness_median_ns) stats.z_lateness = peer_lateness.z_against_peers(*stats.lateness_median_ns, pid);
      if (stats.lateness_p90_ns) stats.z_lateness_tail = peer_lateness.z_against_peers(*stats.lateness_p90_ns, pid);
      if (stats.gap_median_ns) stats.z_gap = peer_gaps.z_against_peers(*stats.gap_median_ns, pid);
    }
  }

  bool enough = accum.instances >= config_.min_instances && aligned_count >= 2;
  if (enough) flag_straggler(report, config_, pool_ranks);

  // CUSUM input: how much longer this rank computes than its peers, as a
  // share of the step period, in units of cusum_unit_share. Normalising by
  // the step, not by the peers' spread, keeps a microsecond-scale gap before
  // a back-to-back collective (tiny, but with a tinier MAD) from alarming.
  double step_ns = accum.instances ? static_cast<double>(elapsed_ns) / static_cast<double>(accum.instances) : 0;
  for (size_t i = 0; enough && step_ns > 0 && i < report.ranks.size(); ++i) {
    RankWindowStats& stats = report.ranks[i];
    auto peer_median = peer_gaps.peer_median(stats.identity.pid);
    if (!stats.gap_median_ns || !peer_median) continue;
    Cusum& cusum =
        lane.cusum.try_emplace(stats.identity.pid, config_.cusum_allowance, config_.cusum_decision).first->second;
    double excess_share = (*stats.gap_median_ns - *peer_median) / step_ns;
    cusum.add(std::clamp(excess_share / config_.cusum_unit_share, -kCusumInputCap, kCusumInputCap));
    stats.cusum_gap = cusum.statistic();
    std::deque<double>& recent = lane.gap_cusum_recent[stats.identity.pid];
    recent.push_back(cusum.statistic());
    if (recent.size() > kGapRiseWindows + 1) recent.pop_front();
  }
  judge_lane_inside(lane, accum, report, elapsed_ns);
  return report;
}

void StragglerDetector::close_window(Window& window, uint64_t now_ns, DetectorOutput& out) {
  uint64_t start = window.index * config_.window_ns;
  uint64_t end = start + config_.window_ns;
  // Traced time inside this window: the first and last windows are partial.
  uint64_t from = std::max(start, first_ns_);
  uint64_t to = std::min(end, std::max(last_ns_, from));  // not now: a stalled tail is not traced time
  uint64_t elapsed = to > from ? to - from : 0;

  // Per (probe, communicator size): lanes that do the same step.
  auto pool_key = [&](const LaneKey& key) {
    const Lane& lane = *lanes_.at(key);
    int size = lane.comm && lane.comm->size ? *lane.comm->size : 0;
    return std::make_pair(key.probe_id, size);
  };
  std::map<std::pair<uint32_t, int>, PeerPool> pools;
  for (const auto& [key, accum] : window.lanes)
    for (const auto& [pid, rank] : accum.ranks) {
      PeerPool& pool = pools[pool_key(key)];
      if (rank.lateness_ns.empty()) continue;
      auto& lateness = pool.lateness_ns[pid];
      lateness.insert(lateness.end(), rank.lateness_ns.begin(), rank.lateness_ns.end());
      auto& gaps = pool.gaps_ns[pid];
      gaps.insert(gaps.end(), rank.gaps_ns.begin(), rank.gaps_ns.end());
    }
  for (auto& [key, pool] : pools) {
    pool.lateness.emplace(pool.lateness_ns);
    pool.gaps.emplace(pool.gaps_ns);
  }
  size_t first_report = out.windows.size();
  for (const auto& [key, accum] : window.lanes)
    out.windows.push_back(evaluate(window, key, accum, pools[pool_key(key)], elapsed));
  clear_held_by_data_path(out.windows, first_report);

  std::map<int32_t, WindowBest> ranks;
  bool judged = false;
  for (size_t i = first_report; i < out.windows.size(); ++i) {
    const WindowReport& report = out.windows[i];
    if (!report.aligned || report.instances < config_.min_instances) continue;
    judged = true;
    const RankWindowStats* worst = nullptr;
    for (const RankWindowStats& stats : report.ranks)
      if (!worst || stats.blame_ns > worst->blame_ns) worst = &stats;
    for (const RankWindowStats& stats : report.ranks) {
      WindowBest& best = ranks[stats.identity.pid];
      best.mark.start_ns = start;
      best.mark.sequential = best.mark.sequential || stats.sequential_alarm;
      best.mark.blame_ns += stats.blame_ns;
      best.mark.inside_cost_ns += stats.inside_cost_ns;
      if (stats.flagged) {
        ++lanes_.at({report.probe_id, report.comm ? report.comm->id : 0})->total_flagged[stats.identity.pid];
        best.mark.flagged = true;
        if (!best.evidence || stats.blame_share > best.evidence->blame_share) {
          best.report = &report;
          best.evidence = &stats;
        }
      }
      if (stats.inside_flagged) {
        best.mark.inside = true;
        if (!best.inside_evidence || stats.inside_cost_share > best.inside_evidence->inside_cost_share) {
          best.inside_report = &report;
          best.inside_evidence = &stats;
        }
      }
      // The slow-onset test: the unique worst above the lower floor.
      bool unique = &stats == worst && std::all_of(report.ranks.begin(), report.ranks.end(), [&](const auto& o) {
        return &o == &stats || stats.blame_ns >= config_.uniqueness_ratio * o.blame_ns;
      });
      bool often =
          stats.last_fraction >= config_.min_last_fraction || stats.blame_dominance >= config_.min_blame_dominance;
      // Not a rank held inside by another's data path: its lateness is that path's.
      if (unique && often && !stats.held_by_data_path && stats.blame_ns > 0 &&
          stats.blame_share >= config_.cusum_min_blame_share) {
        best.mark.cusum_worst = true;
        auto cusum = lanes_.at({report.probe_id, report.comm ? report.comm->id : 0})->cusum.find(stats.identity.pid);
        bool alarmed = cusum != lanes_.at({report.probe_id, report.comm ? report.comm->id : 0})->cusum.end() &&
                       cusum->second.alarmed();
        if (alarmed && (!best.cusum_evidence || stats.blame_share > best.cusum_evidence->blame_share)) {
          best.cusum_report = &report;
          best.cusum_evidence = &stats;
        }
      }
    }
  }
  if (judged) ++windows_judged_;
  for (std::string& note : inside_notes_) out.notes.push_back(std::move(note));
  inside_notes_.clear();
  // Ranks held up inside first: a rank late because another's data path
  // held it (held_inside_by_path) is judged beside that rank's finding,
  // whichever pid is lower.
  for (const auto& [pid, best] : ranks)
    if (best.mark.inside) update_persistence(pid, best, now_ns, out);
  for (const auto& [pid, best] : ranks)
    if (!best.mark.inside) update_persistence(pid, best, now_ns, out);
  release_held(now_ns, out);
}

void StragglerDetector::update_persistence(int32_t pid, const WindowBest& best, uint64_t now_ns, DetectorOutput& out) {
  const Mark& mark = best.mark;
  std::deque<Mark>& history = history_[pid];
  history.push_back(mark);
  while (history.size() > static_cast<size_t>(config_.persistence_n)) history.pop_front();
  int flagged =
      static_cast<int>(std::count_if(history.begin(), history.end(), [](const Mark& m) { return m.flagged; }));
  int worst =
      static_cast<int>(std::count_if(history.begin(), history.end(), [](const Mark& m) { return m.cusum_worst; }));
  int sequential =
      static_cast<int>(std::count_if(history.begin(), history.end(), [](const Mark& m) { return m.sequential; }));
  int inside = static_cast<int>(std::count_if(history.begin(), history.end(), [](const Mark& m) { return m.inside; }));
  // Cleared once no test holds any more, for persistence_n windows: a
  // recurrence is a new finding. (A sequential finding can be raised before
  // the rank has that many windows: a short history is not a clear one.)
  bool cleared = history.size() >= static_cast<size_t>(config_.persistence_n) && flagged == 0 && worst == 0 &&
                 sequential == 0 && inside == 0;
  // A sequential finding raised by instances after this window (its run
  // began later) is not cleared, nor its run judged, by this window.
  auto runs = runs_.find(pid);
  if (runs != runs_.end() && !runs->second.empty() && runs->second.back().open &&
      runs->second.back().start_ns >= mark.start_ns + config_.window_ns)
    return;
  // Late before, on time now and holding everyone up inside by its data
  // path (the node named it): its late spell ends before this window, and
  // the inside finding is raised with this window its first. Guest
  // tcp_delay.sh: rank 0, late in a healthy stretch on a node with more
  // spinning ranks than vCPUs, kept that finding open through the delay on
  // its link, which was never named.
  if (active_findings_.contains(pid) && best.inside_evidence && !best.inside_evidence->inside_transport.empty() &&
      inside >= config_.persistence_m && flagged < config_.persistence_m && worst < config_.persistence_m &&
      runs != runs_.end() && !runs->second.empty() && runs->second.back().open &&
      findings_.at(runs->second.back().finding).where != "inside") {
    runs->second.back().open = false;
    active_findings_.erase(pid);
  }
  track_runs(pid, mark, cleared);
  if (cleared) active_findings_.erase(pid);
  if (active_findings_.contains(pid)) return;

  if (best.evidence && flagged >= config_.persistence_m) {
    Finding f = straggler_finding("persistence", *best.report, *best.evidence, now_ns);
    f.windows_flagged = flagged;
    f.windows_considered = static_cast<int>(history.size());
    raise_finding(std::move(f), pid, out);
  } else if (best.cusum_evidence && worst >= config_.persistence_m) {
    // A slow onset below the main floor, named as it grows; never from one window.
    Finding f = straggler_finding("cusum", *best.cusum_report, *best.cusum_evidence, now_ns);
    f.windows_flagged = worst;
    f.windows_considered = static_cast<int>(history.size());
    raise_finding(std::move(f), pid, out);
  } else if (best.inside_evidence && inside >= config_.persistence_m) {
    Finding f = inside_finding(*best.inside_report, *best.inside_evidence, now_ns);
    f.windows_flagged = inside;
    f.windows_considered = static_cast<int>(history.size());
    raise_finding(std::move(f), pid, out);
  }
}

void StragglerDetector::raise_finding(Finding finding, int32_t pid, DetectorOutput& out) {
  active_findings_.insert(pid);
  const std::deque<Mark>& history = history_[pid];
  Run run;
  run.finding = findings_.size();
  // The run begins at the first window of the evidence, after the windows
  // a run of the rank before it counted (a late spell that became an inside
  // one: its windows' cost is that run's).
  const auto& before = runs_[pid];
  uint64_t counted_ns = before.empty() ? 0 : before.back().tracked_end_ns;
  auto marked = [counted_ns](const Mark& m) {
    return (m.flagged || m.cusum_worst || m.inside) && m.start_ns >= counted_ns;
  };
  auto first = std::find_if(history.begin(), history.end(), marked);
  for (auto it = first; it != history.end(); ++it) {
    ++run.evaluated;
    run.flagged += marked(*it);
    run.cost_ns += it->blame_ns + it->inside_cost_ns;
    if (marked(*it)) run.last_flagged_end_ns = it->start_ns + config_.window_ns;
  }
  run.start_ns = first != history.end() ? first->start_ns : history.back().start_ns;
  run.tracked_end_ns = history.back().start_ns + config_.window_ns;
  runs_[pid].push_back(run);
  findings_.push_back(std::move(finding));
  // Cost and summary as of now; current() refreshes both later.
  emit_or_hold(findings_.size() - 1, current(findings_.size() - 1), out);
}

void StragglerDetector::track_runs(int32_t pid, const Mark& mark, bool cleared) {
  auto it = runs_.find(pid);
  if (it == runs_.end() || it->second.empty() || !it->second.back().open) return;
  Run& run = it->second.back();
  run.tracked_end_ns = mark.start_ns + config_.window_ns;
  ++run.evaluated;
  run.cost_ns += mark.blame_ns + mark.inside_cost_ns;
  if (mark.flagged || mark.cusum_worst || mark.sequential || mark.inside) {
    ++run.flagged;
    run.last_flagged_end_ns = mark.start_ns + config_.window_ns;
  }
  if (cleared) run.open = false;
}

void StragglerDetector::close_windows(uint64_t now_ns, bool all, DetectorOutput& out) {
  bool closed = false;
  while (!windows_.empty()) {
    auto it = windows_.begin();
    uint64_t end = (it->first + 1) * config_.window_ns;
    if (!all && end + config_.grace_ns > now_ns) break;
    close_window(*it->second, now_ns, out);
    closed_before_index_ = it->first + 1;
    windows_.erase(it);
    closed = true;
  }
  if (closed && !all) live_session_cost(now_ns, out);  // at the end, the verdict judges the session
}

Finding StragglerDetector::current(size_t index) const {
  Finding f = findings_.at(index);
  if (f.type != "straggler" || f.session_cost) return f;  // a slow burn's cost is its own lateness, as judged
  uint64_t traced_ns = last_ns_ > first_ns_ ? last_ns_ - first_ns_ : 0;
  for (const auto& [id, info] : probes_)
    if (info.name == f.probe)
      f.cost_ns =
          f.where == "inside" ? sum_lanes(id, f.culprit.pid, &Lane::total_inside_cost_ns) : blame_ns(id, f.culprit.pid);
  f.cost_share = traced_ns ? static_cast<double>(f.cost_ns) / static_cast<double>(traced_ns) : 0;
  f.summary = straggler_summary(f);
  return f;
}

std::vector<Finding> StragglerDetector::all_findings() const {
  std::vector<Finding> result;
  for (size_t i = 0; i < findings_.size(); ++i) result.push_back(current(i));
  return result;
}

std::vector<Finding> StragglerDetector::findings() const {
  std::vector<Finding> result;
  for (size_t i : emitted_) result.push_back(current(i));
  return result;
}

SessionVerdict StragglerDetector::verdict(uint64_t now_ns) const {
  SessionVerdict v;
  v.instances = counters_.instances;
  v.windows_judged = windows_judged_;
  std::vector<Finding> all = all_findings();
  for (const Finding& f : all)
    if (f.type == "hang" || f.type == "mismatch") v.hangs.push_back(f);
  for (size_t i : failures_) v.failures.push_back(all[i]);
  for (const auto& [comm_id, pending] : pending_) v.pending_hangs.push_back(pending);
  for (const auto& [pid, runs] : runs_) {
    const Run* held = nullptr;
    for (const Run& spell : runs) {
      const Run* run = &spell;
      if (run->evaluated > 0 && (run->flagged >= config_.sustained_fraction * run->evaluated || still_slower(*run))) {
        // The latest that held is judged below; one before it is a spell of
        // the session (a late spell that turned into an inside one).
        std::swap(held, run);
        if (!run) continue;
      }
      Episode e;
      e.finding = all[run->finding];
      e.start_ns = run->start_ns;
      e.end_ns = run->last_flagged_end_ns ? run->last_flagged_end_ns : now_ns;
      e.windows_flagged = run->flagged;
      e.windows_evaluated = run->evaluated;
      e.cost_ns = static_cast<uint64_t>(run->cost_ns);
      v.episodes.push_back(std::move(e));
    }
    // Who is late alternates: the node's (a scheduler, a shared CPU), not
    // one rank's (a healthy 2-rank PyTorch job on gloo on 2 CPUs: rank 0
    // flagged in 19 windows, rank 1 in 20, and rank 1 named minor at 9.9%).
    auto flagged = held ? alternating_rival(all[held->finding]) : std::nullopt;
    if (flagged) {
      Finding f = all[held->finding];
      f.severity = severity_of(f.cost_share, config_.session_cost_thresholds);
      v.withheld.push_back(alternating_withheld(std::move(f), flagged->first, flagged->second));
    } else if (held) {
      v.stragglers.push_back(all[held->finding]);
    }
  }
  withhold_held_by_data_path(v, held_by_path_);
  for (Withheld& w : v.withheld)
    if (w.finding.severity.empty())
      w.finding.severity = severity_of(w.finding.cost_share, config_.session_cost_thresholds);
  // Before the slow burn: it may name on another lane a rank whose
  // finding here is withheld (and then the rank is named).
  withhold_schedulers_choices(v);
  if (config_.session_cost) session_cost_findings(v);
  slow_burn_episodes(v, all, now_ns);
  // The run of a rank the slow-burn rule named (or withheld) that is still
  // open is that finding's, not an episode beside it: its cost is in it.
  std::erase_if(v.episodes, [&](const Episode& e) {
    int32_t pid = e.finding.culprit.pid;
    auto runs = runs_.find(pid);
    bool open = runs != runs_.end() && !runs->second.empty() && runs->second.back().open &&
                e.start_ns == runs->second.back().start_ns;
    auto slow_burn = [&](const Finding& f) { return f.culprit.pid == pid && f.session_cost.has_value(); };
    if (in_slow_burn(e, v)) return true;
    return open &&
           (std::any_of(v.stragglers.begin(), v.stragglers.end(), slow_burn) ||
            std::any_of(v.withheld.begin(), v.withheld.end(), [&](const Withheld& w) { return slow_burn(w.finding); }));
  });
  // The window runs' episodes, said once the verdict's names are known.
  for (Episode& e : v.episodes) {
    if (!e.summary.empty()) continue;  // the slow burn's, said where made
    bool named = std::any_of(v.stragglers.begin(), v.stragglers.end(),
                             [&](const Finding& f) { return f.culprit.pid == e.finding.culprit.pid; });
    e.summary = fmt::format(
        "{} was {} {}{} for {} (flagged in {} of {} windows) and cost {}; it did not hold, {}",
        rank_label(e.finding.culprit), e.finding.where == "inside" ? "the straggler inside" : "late on",
        e.finding.probe, communicator_phrase(e.finding),
        format_ns(static_cast<double>(e.end_ns - std::min(e.end_ns, e.start_ns))), e.windows_flagged,
        e.windows_evaluated, format_ns(static_cast<double>(e.cost_ns)),
        named ? "and the verdict names the rank for more than it (its finding)" : "so the verdict does not name it");
  }
  for (Finding& f : v.stragglers) {
    f.severity = severity_of(f.cost_share, config_.session_cost_thresholds);
    if (f.session_cost) f.summary = straggler_summary(f);  // it names its severity
  }
  std::sort(v.stragglers.begin(), v.stragglers.end(),
            [](const Finding& a, const Finding& b) { return a.cost_ns > b.cost_ns; });
  v.judged = windows_judged_ >= config_.persistence_m || !v.stragglers.empty() || !v.withheld.empty() ||
             !v.hangs.empty() || !v.failures.empty();
  if (!v.judged)
    v.reason = fmt::format(
        "only {} window(s) had {} or more aligned collective instances ({} instances in all); {} are needed to "
        "judge",
        windows_judged_, config_.min_instances, counters_.instances, config_.persistence_m);
  return v;
}

}  // namespace slowburn
