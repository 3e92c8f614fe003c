// The inside test's part of the detector: each aligned instance's CPU times
// into its window, and per lane and window who waited for a CPU inside the
// collective while its peers did not (detect/inside.h).
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <numeric>
#include <set>

#include "core/format.h"
#include "detect/inside.h"
#include "detect/straggler.h"
#include "detect/straggler_internal.h"
#include "detect/verdict.h"
#include "stats/robust.h"

namespace slowburn {

namespace {
bool by_path(const RankWindowStats& s) { return s.inside_flagged && !s.inside_transport.empty(); }

// Whether a rank flagged late owes it to a rank flagged by its data path
// (that rank's lane's report: `path`): its lateness came mostly from
// leaving its previous collective late, and no later than the path held it
// there: the path lane's time beyond the usual after the last arrival (every
// member waited) and its own stays after the release in that lane's stalled
// instances (a lost frame's receiver waits for the retransmission after the
// sender, who does not wait, has left: the UCX guest's receiver, 1 s a stall,
// RESULTS 43). A rank that left late elsewhere (descheduled at another
// release, its CPU quota spent) keeps its flag.
bool held_by_path(const RankWindowStats& late, const WindowReport& path) {
  if (late.blame_leaving_share < kMostlyLeaving) return false;
  double leaving_ns = late.blame_ns * late.blame_leaving_share;
  auto there = std::find_if(path.ranks.begin(), path.ranks.end(),
                            [&](const RankWindowStats& s) { return s.identity.pid == late.identity.pid; });
  double stayed_ns = there != path.ranks.end() ? there->stall_stay_ns : 0;
  return leaving_ns <= path.after_last_arrival_excess_ns + stayed_ns;
}

// A rank flagged late in a window where another rank is flagged by its data
// path on a lane of the same communicator (this one or another: the
// receiver held inside the lossy all-reduce arrives late at the all-gather
// after it), held by that path: the victim, not a straggler of its own.
// Lanes without a communicator are matched only with themselves. Counted
// per rank in `held` for the verdict. `reports`: the window's lanes.
void clear_held(std::vector<WindowReport>& reports, size_t first, std::map<int32_t, HeldByPath>& held) {
  auto same_comm = [&](size_t a, size_t b) {
    return a == b || (reports[a].comm && reports[b].comm && reports[a].comm->key == reports[b].comm->key);
  };
  for (size_t i = first; i < reports.size(); ++i) {
    for (RankWindowStats& s : reports[i].ranks) {
      if (!s.flagged) continue;
      // A rank flagged by its own path on any lane of the communicator is not another's victim.
      bool own_path = false;
      for (size_t p = first; p < reports.size(); ++p)
        if (same_comm(i, p))
          for (const RankWindowStats& o : reports[p].ranks)
            own_path = own_path || (o.identity.pid == s.identity.pid && by_path(o));
      if (own_path) continue;
      bool beside = false;
      for (size_t p = first; p < reports.size() && s.flagged; ++p) {
        if (!same_comm(i, p) || !std::any_of(reports[p].ranks.begin(), reports[p].ranks.end(),
                                             [](const RankWindowStats& o) { return by_path(o); }))
          continue;
        beside = true;
        if (!held_by_path(s, reports[p])) continue;
        s.flagged = false;
        s.held_by_data_path = true;
      }
      if (s.held_by_data_path)
        ++held[s.identity.pid].held;
      else if (beside)
        ++held[s.identity.pid].flagged_beside;
    }
  }
}
}  // namespace

void StragglerDetector::clear_held_by_data_path(std::vector<WindowReport>& reports, size_t first) {
  clear_held(reports, first, held_by_path_);
}

void StragglerDetector::account_inside(LaneAccum& accum, const CollectiveInstance& instance, uint64_t last_arrival_ns) {
  uint64_t after = instance.release_ns > last_arrival_ns ? instance.release_ns - last_arrival_ns : 0;
  uint64_t size = instance.calls.empty() ? 0 : instance.calls.front().size_arg;
  accum.after_last_arrival_ns[size].push_back(static_cast<double>(after));
  std::vector<std::pair<int32_t, double>>& stays = accum.stays_after_release_ns[size].emplace_back();
  for (const RankCall& call : instance.calls)
    if (call.exit_ns > instance.release_ns)
      stays.emplace_back(call.pid, static_cast<double>(call.exit_ns - instance.release_ns));
  accum.after_last_arrival_total_ns += after;
  for (const RankCall& call : instance.calls)
    if (call.oncpu_ns) accum.ranks[call.pid].inside.add(call.exit_ns - call.entry_ns, *call.oncpu_ns, call.runq_ns);
}

void StragglerDetector::judge_lane_inside(Lane& lane, const LaneAccum& accum, WindowReport& report,
                                          uint64_t elapsed_ns) {
  if (!config_.inside || lane.info.kind != CallKind::synchronizing || accum.instances < config_.min_instances) return;
  // The collective's own time, for the size that takes most of it (a
  // step's large all-reduce, not the 16-byte one beside it on the same
  // communicator).
  auto total = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); };
  auto most = std::max_element(accum.after_last_arrival_ns.begin(), accum.after_last_arrival_ns.end(),
                               [&](const auto& a, const auto& b) { return total(a.second) < total(b.second); });
  if (most != accum.after_last_arrival_ns.end() && most->second.size() >= config_.min_instances) {
    report.after_last_arrival_ns = median(most->second);
    report.after_last_arrival_size = most->first;
    report.after_last_arrival_ratio = lane.inside_baselines[most->first].observe(*report.after_last_arrival_ns);
  }
  std::map<int32_t, InsideSums> sums;
  for (const auto& [pid, rank] : accum.ranks)
    if (rank.inside.calls) sums[pid] = rank.inside;
  std::vector<InsideJudgement> judged =
      sums.size() < 2 ? std::vector<InsideJudgement>{}
                      : judge_inside(sums, accum.after_last_arrival_total_ns, elapsed_ns, config_.inside_thresholds);
  // Before the late rank outweighs it: a rank's CPU wait that stretched
  // the time after the last arrival is no "slower for everyone".
  bool anyone_apart = std::any_of(judged.begin(), judged.end(), [](const InsideJudgement& j) { return j.apart; });
  double excess = 0;                      // the instances' time beyond the usual
  double stalled = 0;                     // the part of it in stalls
  std::map<int32_t, double> stall_stays;  // each rank's stays after the release in them
  if (!anyone_apart && most != accum.after_last_arrival_ns.end() && report.after_last_arrival_ratio &&
      *report.after_last_arrival_ratio > 0) {
    // The usual, and what the instances took beyond it.
    double usual = *report.after_last_arrival_ns / *report.after_last_arrival_ratio;
    const auto& stays = accum.stays_after_release_ns.at(most->first);
    for (size_t i = 0; i < most->second.size(); ++i) {
      double v = most->second[i];
      excess += std::max(0.0, v - usual);
      if (v < config_.inside_thresholds.stall_times * usual) continue;
      stalled += v - usual;
      for (const auto& [pid, stay] : stays[i]) stall_stays[pid] += stay;
    }
    for (InsideJudgement& t :
         judge_transport(transport_in(accum, report), accum.ranks.size(), report.after_last_arrival_ratio, excess,
                         stalled, elapsed_ns, config_.inside_thresholds)) {
      auto cpu = std::find_if(judged.begin(), judged.end(), [&](const InsideJudgement& j) { return j.pid == t.pid; });
      if (cpu == judged.end()) {
        judged.push_back(std::move(t));
        continue;
      }
      // Its CPU shares stay said beside what its path did.
      cpu->cost_ns = t.cost_ns;
      cpu->cost_share = t.cost_share;
      cpu->apart = true;
      cpu->transport = std::move(t.transport);
    }
    anyone_apart = std::any_of(judged.begin(), judged.end(), [](const InsideJudgement& j) { return j.apart; });
  }
  outweigh_by_late_arrivals(judged, late_blame_ns(report));
  report.after_last_arrival_excess_ns = excess;
  for (RankWindowStats& s : report.ranks)
    if (auto stay = stall_stays.find(s.identity.pid); stay != stall_stays.end()) s.stall_stay_ns = stay->second;
  for (const InsideJudgement& j : judged)
    if (j.apart && !j.transport.empty())
      path_flagged_end_ns_[report.comm ? report.comm->key : std::string()][j.pid] = report.end_ns;
  for (const InsideJudgement& j : judged) {
    auto stats = std::find_if(report.ranks.begin(), report.ranks.end(),
                              [&](const RankWindowStats& s) { return s.identity.pid == j.pid; });
    if (stats == report.ranks.end()) continue;
    if (j.cpu_read) {
      stats->inside_oncpu_share = j.oncpu_share;
      stats->inside_runq_share = j.runq_share;
    }
    stats->inside_transport = j.transport;
    stats->inside_peers_oncpu_share = j.peers_oncpu_share;
    stats->inside_peers_runq_share = j.peers_runq_share;
    stats->inside_cost_ns = static_cast<double>(j.cost_ns);
    stats->inside_cost_share = j.cost_share;
    stats->inside_flagged = j.apart;
    lane.total_inside_cost_ns[j.pid] += j.cost_ns;
  }
  // Without the CPU times of two members nobody's CPU was judged: the
  // collective is not said slower "for everyone".
  if (sums.size() >= 2) judge_slow_for_all(lane, report, anyone_apart);
}

void StragglerDetector::transport_evidence(int32_t pid, TransportEvidence evidence) {
  uint64_t ts = evidence.ts_ns;
  transport_[pid].emplace(ts, std::move(evidence));
}

std::map<int32_t, std::string> StragglerDetector::transport_in(const LaneAccum& accum, const WindowReport& report) {
  const uint64_t after = config_.inside_thresholds.transport_after_ns;
  std::map<int32_t, std::string> out;
  for (const auto& [pid, rank] : accum.ranks) {
    auto kept = transport_.find(pid);
    if (kept == transport_.end()) continue;
    std::multimap<uint64_t, TransportEvidence>& said = kept->second;
    // Windows close in order: one that ended before this one began is past.
    while (!said.empty() && said.begin()->first + after < report.start_ns) said.erase(said.begin());
    // The latest said by the time the window was judged (a replay is
    // handed every event at once; live, a later one had not come).
    auto judged = said.upper_bound(report.end_ns + config_.grace_ns);
    if (judged != said.begin()) out[pid] = std::prev(judged)->second.summary;
  }
  return out;
}

void StragglerDetector::judge_slow_for_all(Lane& lane, const WindowReport& report, bool anyone_apart) {
  constexpr double kSlower = 2.0;  // after the last arrival, against the lane's usual
  bool slow = !anyone_apart && report.after_last_arrival_ratio && *report.after_last_arrival_ratio >= kSlower;
  lane.slow_for_all.push_back(slow);
  while (lane.slow_for_all.size() > static_cast<size_t>(config_.persistence_n)) lane.slow_for_all.pop_front();
  auto count = std::count(lane.slow_for_all.begin(), lane.slow_for_all.end(), true);
  if (count == 0) lane.slow_for_all_said = false;
  if (count < config_.persistence_m || lane.slow_for_all_said) return;
  lane.slow_for_all_said = true;
  // Nobody to name: the fabric, a switch, or every member alike.
  inside_notes_.push_back(fmt::format(
      "{}{}: the collective itself is slower for everyone: each instance took {} from its last arrival to its "
      "release, {:.1f}x its usual, and no member's CPU sets it apart (look at the fabric: the NICs' "
      "counters, the links, the switch)",
      lane.info.name, lane.comm ? " on " + lane.comm->label : std::string(), format_ns(*report.after_last_arrival_ns),
      *report.after_last_arrival_ratio));
}

bool StragglerDetector::held_inside_by_path(const Finding& f, uint64_t now_ns) const {
  // As the verdict judges it (verdict.cpp withhold_held_by_data_path), live,
  // but without the count of its held windows against those it kept its
  // flag in: which wins is known at the end, and a victim's line is worse
  // than a late one (guest tcp_delay.sh: the delayed rank's receiver was
  // raised "late" beside that rank's inside finding in 4 of 6 runs, its
  // flag kept in windows its late exits outran the time measured to the
  // first exit). It waits while the path's finding holds, or while a rank
  // is flagged by its path on the communicator before it is named (its
  // finding may come windows after the victim's); the verdict judges it.
  if (f.type != "straggler" || f.where == "inside" || f.blame_leaving_share < kMostlyLeaving) return false;
  if (auto comm = path_flagged_end_ns_.find(f.comm ? f.comm->key : std::string()); comm != path_flagged_end_ns_.end())
    for (const auto& [pid, end_ns] : comm->second)
      if (pid != f.culprit.pid && end_ns + static_cast<uint64_t>(config_.persistence_n) * config_.window_ns >= now_ns)
        return true;
  auto same_comm = [&f](const Finding& g) {
    return f.comm && g.comm ? f.comm->key == g.comm->key : !f.comm && !g.comm;
  };
  for (const auto& [pid, runs] : runs_) {
    if (pid == f.culprit.pid) continue;
    for (const Run& r : runs) {
      const Finding& g = findings_.at(r.finding);
      // A run the verdict would name: open, holding, its rank alive (a run
      // of a rank that ended is closed by no window).
      bool holding =
          r.open && alive_.contains(pid) && r.evaluated > 0 && r.flagged >= config_.sustained_fraction * r.evaluated;
      if (holding && g.where == "inside" && g.inside && !g.inside->transport.empty() && same_comm(g)) return true;
    }
  }
  return false;
}

}  // namespace slowburn
