// The slow burn (detect/session_cost.h) in the detector: judged on each
// lane's session totals at the verdict, and live once a minute is traced,
// over the session so far and over its latest minute.
#include <fmt/format.h>

#include <algorithm>

#include "core/format.h"
#include "detect/straggler.h"
#include "detect/straggler_internal.h"
#include "detect/verdict.h"

namespace slowburn {

namespace {
// How often the slow-burn rule is judged live, on the job's clock: its
// totals change slowly, and each look is a test that could alarm by chance.
constexpr uint64_t kSlowBurnEveryNs = 2'000'000'000;
// The latest stretch judged beside the whole session, and how often its
// starting totals are kept (each lane keeps ~7 snapshots of its ranks).
constexpr uint64_t kSlowBurnLatestNs = 60'000'000'000;
constexpr uint64_t kSlowBurnSnapshotEveryNs = 10'000'000'000;
// A drift's floor on the latest stretch, as a share of --min-cost.
constexpr double kDriftFloorShare = 0.5;
}  // namespace

struct StragglerDetector::SlowBurn {
  Finding finding;
  SessionCostJudgement judgement;
};

LaneSnapshot StragglerDetector::session_totals(const Lane& lane, uint64_t now_ns) const {
  return {now_ns, last_ns_ > first_ns_ ? last_ns_ - first_ns_ : 0, lane.total_judged_instances, lane_totals(lane)};
}

// At most this many points per lane (~42 minutes at 10 s); past it every
// other point goes and the lane's stride doubles, so the points stay evenly
// spaced (a day's session keeps one in 5 to 11 minutes). A point holds 16
// bytes a rank: 2 MiB for a lane of 512 ranks.
constexpr size_t kCostPointsKept = 256;

void StragglerDetector::keep_cost_point(const LaneKey& key, const LaneSnapshot& now) {
  CostHistory& h = slow_burn_history_[key];
  if (!h.points.empty() &&
      (now.instances == h.points.back().instances || now.at_ns < h.points.back().at_ns + h.stride_ns))
    return;  // quiet since (nothing to date), or within its stride
  CostPoint point{now.at_ns, last_ns_, now.instances, {}};
  for (const auto& [pid, t] : now.ranks) point.own_ns.emplace_back(pid, t.own_ns());
  h.points.push_back(std::move(point));
  thin_cost_history(h.points, h.stride_ns, kCostPointsKept);
}

std::optional<CostOnset> StragglerDetector::onset_of(const LaneKey& key, const Lane& lane, const LaneSnapshot& now,
                                                     int32_t pid, double floor_share) const {
  // From the lane's first call, where its ranks had cost nothing yet (a
  // communicator made late, or idle through a warm-up, is not cheap
  // before). Traced time from the session's start as it stands now: the
  // start can still move earlier (a long first call seen late).
  uint64_t from_ns = std::max(lane.first_call_ns, first_ns_);
  std::vector<CumulativeCost> samples{{from_ns, from_ns - first_ns_, 0}};
  if (auto kept = slow_burn_history_.find(key); kept != slow_burn_history_.end())
    for (const CostPoint& p : kept->second.points)
      if (p.at_ns < now.at_ns && p.last_ns > from_ns)
        samples.push_back({p.at_ns, p.last_ns - first_ns_, own_cost_at(p.own_ns, pid)});
  auto rank = now.ranks.find(pid);
  samples.push_back({now.at_ns, now.traced_ns, rank != now.ranks.end() ? rank->second.own_ns() : 0});
  CostOnsetThresholds thresholds;
  thresholds.floor_share = floor_share;
  return cost_onset(samples, thresholds);
}

std::optional<StragglerDetector::SlowBurn> StragglerDetector::slow_burn(const LaneKey& key, const Lane& lane,
                                                                        const LaneSnapshot& session,
                                                                        const LaneSnapshot* before) const {
  if (lane.info.kind != CallKind::synchronizing) return std::nullopt;
  const LaneSnapshot totals = before ? totals_since(session, *before) : session;
  const uint64_t since_ns = before ? before->at_ns : 0;
  // A drift (issue 30: a ramp named before it passes 1.04x) is judged on
  // the latest stretch against a lower floor, and holds only as one below.
  SessionCostThresholds thresholds = config_.session_cost_thresholds;
  if (before) thresholds.min_cost_share *= kDriftFloorShare;
  auto j = judge_session_cost(totals.ranks, totals.instances, lane.seen.size(), totals.traced_ns, thresholds);
  if (!j) return std::nullopt;
  // Not the scheduler's where the rank's typical step is longer than its
  // peers' as it stands (withhold_schedulers_choices says why): a 4-rank
  // MPI job on 2 CPUs, one rank computing 1.1x, was withheld at 4.4-5.7%
  // in 2 of 3 runs, its compute-gap CUSUM alarmed.
  bool own_step_longer = gap_excess_sustained(lane, j->pid);
  // Under the floor, a drift only: its step grows against its peers' (the
  // compute-gap CUSUM alarmed and rising) and its cost began at a dated
  // moment, cheap before it. At 512 ranks the peers' noise hides most of a
  // ramping rank's lateness: a ramp to 1.10x over 10 minutes passed the 1%
  // floor on its latest minute at 1.045x (bench/RESULTS.md 26b). A rank as
  // slow from the start, however often last, stays under the floor.
  std::optional<CostOnset> drift_onset;
  if (j->cost_share < config_.session_cost_thresholds.min_cost_share) {
    if (!own_step_longer) return std::nullopt;
    drift_onset = onset_of(key, lane, session, j->pid, thresholds.min_cost_share);
    if (!drift_onset || drift_onset->from_start) return std::nullopt;
  }
  // Nor where the node said its cgroup throttled it: throttled time is off
  // the run queue, and a busy node's peers wait for a CPU as much as it.
  if (j->scheduler_noise &&
      (own_step_longer || own_cpu_causes_.over_half(j->pid, before ? before->at_ns : first_ns_, session.at_ns)))
    j->scheduler_noise = false;
  // A spell that ended is an episode, not a slow burn: what it cost
  // outside its episodes (those since since_ns) must pass the floor on its
  // own. A run still open at the end never ended (flagged in under half
  // its windows, yet never clear for persistence_n of them): its cost is
  // the slow burn's. Nor did one whose rank still computes longer than
  // its peers (CI, stop 50: a 4-rank job on 2 CPUs, rank 1 computing 1.1x,
  // flagged in 6 of 14 windows of a run that closed; its cost outside it
  // fell under the floor, and nothing named it): its episodes are spells
  // of the slow burn.
  double episodes_ns = 0;
  if (auto runs = runs_.find(j->pid); runs != runs_.end())
    for (const Run& run : runs->second)
      if (!run.open && run.last_flagged_end_ns >= since_ns && !(own_step_longer && spell_of(run, lane)))
        episodes_ns += run.cost_ns;
  double outside_ns = std::max(0.0, static_cast<double>(j->cost_ns) - episodes_ns);
  // Against the floor the rank was judged by: half of it for a drift only
  // (a finding at the floor on the latest stretch keeps the whole floor).
  double floor_share = drift_onset ? thresholds.min_cost_share : config_.session_cost_thresholds.min_cost_share;
  if (outside_ns < floor_share * static_cast<double>(totals.traced_ns)) return std::nullopt;
  Finding f = session_cost_finding(lane_finding(lane, j->pid, "straggler", "session-cost"), *j, totals.traced_ns);
  f.session_cost->latest = since_ns > 0;
  f.session_cost->drift = drift_onset.has_value();
  // Dated on the whole session, whichever stretch named it (a drift against
  // its own floor: the full one dates no cost that has not reached it).
  f.session_cost->onset =
      drift_onset ? drift_onset : onset_of(key, lane, session, j->pid, config_.session_cost_thresholds.min_cost_share);
  f.severity = severity_of(j->cost_share, config_.session_cost_thresholds);
  f.summary = straggler_summary(f);
  if (auto found = slow_burn_found_ns_.find(j->pid); found != slow_burn_found_ns_.end()) f.detected_ns = found->second;
  return SlowBurn{std::move(f), *j};
}

void StragglerDetector::live_session_cost(uint64_t now_ns, DetectorOutput& out) {
  // Not before a stretch of kSlowBurnLatestNs: on a shorter one a spike
  // (a spell under the window rule's persistence) is a few percent of the
  // time, and the window, sequential and CUSUM rules judge strong stragglers.
  if (!config_.session_cost || now_ns < slow_burn_checked_ns_ + kSlowBurnEveryNs) return;
  slow_burn_checked_ns_ = now_ns;
  for (const auto& [key, lane] : lanes_) {
    // A lane too thin to judge keeps no snapshots (communicators made and
    // dropped every step would each keep seven).
    if (lane->info.kind != CallKind::synchronizing ||
        lane->total_judged_instances < config_.session_cost_thresholds.min_instances)
      continue;
    LaneSnapshot now = session_totals(*lane, now_ns);
    std::deque<LaneSnapshot>& kept = slow_burn_snapshots_[key];
    // None while the lane is quiet (it keeps its last few, no more); one
    // that resumes after a pause longer than the stretch starts afresh, so
    // the stretch does not span the pause.
    bool moved = kept.empty() || now.instances != kept.back().instances;
    if (moved && !kept.empty() && kept.back().at_ns + kSlowBurnLatestNs + kSlowBurnSnapshotEveryNs <= now_ns)
      kept.clear();
    if (moved && (kept.empty() || now_ns >= kept.back().at_ns + kSlowBurnSnapshotEveryNs)) {
      kept.push_back(now);
      keep_cost_point(key, now);
    }
    while (kept.size() >= 2 && kept[1].at_ns + kSlowBurnLatestNs <= now_ns) kept.pop_front();
    if (now.traced_ns < kSlowBurnLatestNs) continue;
    // The session so far, then its latest stretch (kSlowBurnLatestNs or a
    // little more; up to twice that across a pause of the lane shorter
    // than it): a cost that began late, or grows (a ramp), passes the
    // floor there long before it does over the whole session.
    auto found = slow_burn(key, *lane, now, nullptr);
    if ((!found || found->judgement.scheduler_noise) && kept.front().at_ns + kSlowBurnLatestNs <= now_ns)
      found = slow_burn(key, *lane, now, &kept.front());
    if (!found || found->judgement.scheduler_noise) continue;
    int32_t pid = found->judgement.pid;
    // A rank that ended is not raised now (the verdict still weighs its session).
    if (!alive_.contains(pid) || (active_findings_.contains(pid) && !held_back(pid)) ||
        slow_burn_found_ns_.contains(pid))
      continue;
    slow_burn_found_ns_[pid] = now_ns;
    found->finding.detected_ns = now_ns;
    emitted_.push_back(findings_.size());
    findings_.push_back(found->finding);
    out.findings.push_back(std::move(found->finding));
  }
}

void StragglerDetector::session_cost_findings(SessionVerdict& v) const {
  // Per rank, its costliest lane the rank is named on, and apart from that
  // its costliest lane whose cost is the scheduler's: withheld only when no
  // lane names it (a busy lane on the node beside a quiet one across nodes).
  std::map<int32_t, Finding> named_on, noise_on;
  std::map<int32_t, SessionCostJudgement> noise;
  for (const auto& [key, lane] : lanes_) {
    LaneSnapshot session = session_totals(*lane, last_ns_);
    auto found = slow_burn(key, *lane, session, nullptr);
    // Else its latest stretch, as the live rule judges it: a cost that began late.
    // A withheld judgement of the session (the scheduler's) stays unless
    // the stretch names the rank outright.
    auto kept = slow_burn_snapshots_.find(key);
    if ((!found || found->judgement.scheduler_noise) && kept != slow_burn_snapshots_.end() && !kept->second.empty() &&
        kept->second.front().at_ns + kSlowBurnLatestNs <= last_ns_)
      if (auto latest = slow_burn(key, *lane, session, &kept->second.front());
          latest && (!found || !latest->judgement.scheduler_noise))
        found = std::move(latest);
    if (!found) continue;
    const SessionCostJudgement& j = found->judgement;
    bool named =
        std::any_of(v.stragglers.begin(), v.stragglers.end(), [&](const Finding& f) { return f.culprit.pid == j.pid; });
    auto& best = j.scheduler_noise ? noise_on : named_on;
    if (named || (best.contains(j.pid) && best[j.pid].cost_ns >= j.cost_ns)) continue;
    best[j.pid] = std::move(found->finding);
    if (j.scheduler_noise) noise[j.pid] = j;
  }
  // A rank withheld on one lane (withhold_schedulers_choices) and named by
  // the slow burn on another is named; one withheld there already is not
  // listed twice.
  auto withheld = [&](int32_t pid) {
    return std::any_of(v.withheld.begin(), v.withheld.end(),
                       [&](const Withheld& w) { return w.finding.culprit.pid == pid; });
  };
  std::erase_if(v.withheld, [&](const Withheld& w) { return named_on.contains(w.finding.culprit.pid); });
  for (auto& [pid, f] : named_on) v.stragglers.push_back(std::move(f));
  for (auto& [pid, f] : noise_on)
    if (!named_on.contains(pid) && !withheld(pid)) {
      const SessionCostJudgement& j = noise.at(pid);
      v.withheld.push_back(scheduler_noise_withheld(std::move(f), {j.runq_share, j.peers_runq_share}));
    }
}

std::optional<RunqShares> StragglerDetector::schedulers_choice_of(const Finding& f) const {
  // The window, burst and sequential rules judge arrivals: on a node with
  // more runnable threads than CPUs a victim can pass them by chance at a
  // minor cost (CI, MpiRamp: a rank with no slowness of its own named "late
  // in bursts" at 3.8% beside the culprit). The scheduler's choice there
  // falls on a few instances at a time: a rank late in bursts (on time in
  // its typical instance) is judged by its lane's run-queue shares, as the
  // slow burn is, and so is any finding under half the major floor. One
  // last in most of its instances at 5% or more stays named (a 2x-slower
  // rank of a triple on 2 CPUs, every rank waiting for one 90% of its time
  // inside: last in 82%, cost 10.0%); a pair the scheduler orders the same way step
  // after step is the slow burn's, withheld there. The inside rule judges
  // run-queue waits itself.
  // Late in bursts as its summary says it (detect/verdict.h), or a cost
  // under half the major floor whatever its pattern: a victim on 2 CPUs
  // was also named last in 60% of a triple's instances at 3.5% (CI,
  // MpiRamp); the 2x-slower rank of a triple there costs 10%.
  // A rank the node said its own cgroup throttled, over at least half of
  // the session, is late of its own cause: throttled, it is off the run
  // queue, and on a busy node its peers wait for a CPU as much as it (CI,
  // stop 58: CpuQuota's throttled rank withheld as the scheduler's choice,
  // 72.5% of the CPU to others). A finding's own windows are not kept
  // here: the session is its stretch, as the slow burn's.
  if (own_cpu_causes_.over_half(f.culprit.pid, first_ns_, last_ns_)) return std::nullopt;
  bool bursts_or_small = late_in_bursts_or_small(f);
  const Lane* lane = lane_of(f);
  // Or one of a pair, judged with no z (no third rank to tell the rank's
  // own lateness from the node's), whose cost net of leaving its previous
  // collective late over the session (the scheduler's, as the slow burn
  // and the sequential test count it) is minor, both ranks waiting for a
  // CPU. A healthy 2-rank gloo job on 2 CPUs had rank 1 named minor at
  // 8.4% and 9.8% in 2 of 10 runs, and raised live at 10.6%; in another,
  // rank 1 was flagged in 45 windows to rank 0's 8, each rank waiting for a
  // CPU 35% of its time inside, 45% of rank 1's blame from leaving late
  // (its windows' median) and its compute gap rank 0's (bench/RESULTS.md
  // 31b).
  std::optional<PairCost> pair = pair_own_cost(f);
  double judged_cost = pair ? pair->own_cost_share : f.cost_share;
  if (f.type != "straggler" || f.session_cost || f.where == "inside" || !(bursts_or_small || pair)) return std::nullopt;
  // Not the scheduler's where its typical step is still longer than its
  // peers': the CUSUM of its window-median compute gap stands alarmed and
  // rises. The scheduler's choice falls on a few instances at a time and
  // moves the median of none (MpiRamp at 1.4x: the ramping rank, last in
  // 47-57% of its triple's instances at 4.9-8%, was withheld in 5 of 8
  // runs, as late in bursts or under 5%; eight healthy runs of that job
  // alarmed no CUSUM).
  if (!lane || gap_excess_sustained(*lane, f.culprit.pid)) return std::nullopt;
  RunqShares shares = runq_shares(lane_totals(*lane), f.culprit.pid);
  if (!schedulers_choice(shares, judged_cost, config_.session_cost_thresholds)) return std::nullopt;
  // Both, where only the pair rule brought it here: a rank of a pair that
  // does not wait for a CPU itself is not late by the scheduler's choice
  // (the rule above asks it only to wait no more than its peers).
  if (pair && !bursts_or_small && shares.rank.value_or(0) < config_.session_cost_thresholds.busy_runq_share)
    return std::nullopt;
  return shares;
}

bool StragglerDetector::late_in_bursts_or_small(const Finding& f) const {
  bool bursts = f.last_fraction < kLateInBurstsBelow && f.lateness_p90_ns;
  bool small = f.cost_share < 0.5 * config_.session_cost_thresholds.major_cost_share;
  return bursts || small;
}

std::optional<StragglerDetector::PairCost> StragglerDetector::pair_own_cost(const Finding& f) const {
  const Lane* lane = lane_of(f);
  if (!lane || lane->seen.size() != 2 || f.z_lateness || f.z_gap) return std::nullopt;
  // Over the session on its lane, as the finding's cost is (not the one
  // window that raised it, which had the most blame and often the most
  // leaving late).
  auto totals = lane_totals(*lane);
  auto own = totals.find(f.culprit.pid);
  if (own == totals.end() || own->second.blame_ns == 0) return std::nullopt;
  PairCost cost;
  cost.leaving_share =
      std::min(1.0, static_cast<double>(own->second.blame_leaving_ns) / static_cast<double>(own->second.blame_ns));
  cost.own_cost_share = f.cost_share * (1 - cost.leaving_share);
  return cost;
}

void StragglerDetector::withhold_schedulers_choices(SessionVerdict& v) const {
  std::vector<Finding> kept;
  for (Finding& f : v.stragglers) {
    if (auto shares = schedulers_choice_of(f)) {
      f.severity = severity_of(f.cost_share, config_.session_cost_thresholds);
      // The pair's reason only where the pair rule alone withheld it.
      std::optional<PairCost> pair = late_in_bursts_or_small(f) ? std::nullopt : pair_own_cost(f);
      v.withheld.push_back(pair ? pair_noise_withheld(std::move(f), *shares, pair->leaving_share, pair->own_cost_share)
                                : scheduler_noise_withheld(std::move(f), *shares));
    } else {
      kept.push_back(std::move(f));
    }
  }
  v.stragglers = std::move(kept);
}

void StragglerDetector::emit_or_hold(size_t index, const Finding& f, DetectorOutput& out) {
  // Live as at the verdict: a finding there would withhold is no `finding`
  // line yet (CI, MpiRamp: a victim of the other triple raised live "late
  // in bursts" at 3.5% before the ramping rank, then an episode).
  if (schedulers_choice_of(f) || held_inside_by_path(f, f.detected_ns)) {
    held_back_.push_back(index);
  } else {
    emitted_.push_back(index);
    out.findings.push_back(f);
  }
}

void StragglerDetector::release_held(uint64_t now_ns, DetectorOutput& out) {
  std::erase_if(held_back_, [&](size_t i) {
    int32_t pid = findings_[i].culprit.pid;
    auto runs = runs_.find(pid);
    bool standing = runs != runs_.end() && std::any_of(runs->second.begin(), runs->second.end(),
                                                       [i](const Run& r) { return r.finding == i && r.open; });
    // Its run ended (the verdict names, withholds or lists it as an episode),
    // or the slow burn named the rank live since: no line of its own.
    if (!standing) return true;
    if (auto named = slow_burn_found_ns_.find(pid);
        named != slow_burn_found_ns_.end() && named->second >= findings_[i].detected_ns)
      return true;
    if (!alive_.contains(pid)) return false;  // a rank that ended is not raised now; the verdict judges it
    Finding f = current(i);
    if (schedulers_choice_of(f) || held_inside_by_path(f, now_ns)) return false;
    findings_[i].detected_ns = f.detected_ns = now_ns;
    emitted_.push_back(i);
    out.findings.push_back(std::move(f));
    return true;
  });
}

const StragglerDetector::Lane* StragglerDetector::lane_of(const Finding& f) const {
  for (const auto& [key, lane] : lanes_)
    if (lane->info.name == f.probe && lane->comm == f.comm) return lane.get();
  return nullptr;
}

bool StragglerDetector::spell_of(const Run& run, const Lane& lane) const {
  const Finding& f = findings_.at(run.finding);
  return f.probe == lane.info.name && f.comm == lane.comm;
}

bool StragglerDetector::still_slower(const Run& run) const {
  // The window rule flags a window where the rank is the unique worst; on
  // a node whose scheduler makes its peers late in turn it is that in
  // fewer windows than not, while its typical step stays longer (CI,
  // MpiRamp at 1.4x: the ramping rank flagged in 5 of 14 windows of a run
  // still open at the end, named live, then by nothing). An inside run is
  // judged by its CPU waits, not its compute gap. A rank whose longer step
  // costs the job little is the job's structure, not a straggler: its own
  // lateness on the lane over the session (less its part from leaving late)
  // passes the slow burn's floor. Open at the end, not when its rank
  // exited: a rank gone mid-session keeps its run open and its CUSUM as
  // it was, judged no further.
  if (!run.open || run.tracked_end_ns + config_.persistence_n * config_.window_ns < last_ns_) return false;
  const Finding& f = findings_.at(run.finding);
  const Lane* lane = lane_of(f);
  if (f.type != "straggler" || f.where == "inside" || f.session_cost || !lane ||
      !gap_excess_sustained(*lane, f.culprit.pid))
    return false;
  auto totals = lane_totals(*lane);
  auto own = totals.find(f.culprit.pid);
  uint64_t traced_ns = last_ns_ > first_ns_ ? last_ns_ - first_ns_ : 0;
  return own != totals.end() && traced_ns > 0 &&
         static_cast<double>(own->second.own_ns()) >=
             config_.session_cost_thresholds.min_cost_share * static_cast<double>(traced_ns);
}

bool StragglerDetector::in_slow_burn(const Episode& e, const SessionVerdict& v) const {
  // Of the whole session only: one named on its latest stretch counts no
  // spell before it, which stays listed.
  const Lane* lane = lane_of(e.finding);
  return lane && gap_excess_sustained(*lane, e.finding.culprit.pid) &&
         std::any_of(v.stragglers.begin(), v.stragglers.end(), [&](const Finding& f) {
           return f.session_cost && !f.session_cost->latest && f.culprit.pid == e.finding.culprit.pid &&
                  lane_of(f) == lane;
         });
}

std::optional<std::pair<int, int>> StragglerDetector::alternating_rival(const Finding& f) const {
  // With 3 or more ranks to compare, the robust z tells a rank's own
  // lateness from the node's noise; between the two ranks of a pair with
  // no others in its pool, the window rule rests on blame alone, and a
  // node that delays each in turn gives each its spells. (The sequential
  // test sets no z: it judges lanes of 3 or more only, which the pair test
  // below leaves out.) Over the session, not the run: a run raised late
  // holds on its few windows while the other rank's spells came before it.
  // A pair whose straggler changed once, for good, is withheld too: said.
  if (f.type != "straggler" || f.where == "inside" || f.session_cost || f.z_lateness || f.z_gap) return std::nullopt;
  const Lane* lane = lane_of(f);
  if (!lane || lane->seen.size() != 2) return std::nullopt;
  auto own = lane->total_flagged.find(f.culprit.pid);
  if (own == lane->total_flagged.end()) return std::nullopt;
  int rival = 0;
  for (const auto& [pid, flagged] : lane->total_flagged)
    if (pid != f.culprit.pid) rival = std::max(rival, flagged);
  if (rival == 0 || 2 * rival < own->second) return std::nullopt;
  return std::pair{own->second, rival};
}

bool StragglerDetector::held_back(int32_t pid) const {
  return std::any_of(held_back_.begin(), held_back_.end(), [&](size_t i) { return findings_[i].culprit.pid == pid; });
}

void StragglerDetector::slow_burn_episodes(SessionVerdict& v, const std::vector<Finding>& all, uint64_t now_ns) const {
  for (const auto& [pid, found_ns] : slow_burn_found_ns_) {
    auto about = [pid](const Finding& f) { return f.culprit.pid == pid; };
    if (std::any_of(v.stragglers.begin(), v.stragglers.end(), about) ||
        std::any_of(v.withheld.begin(), v.withheld.end(), [&](const Withheld& w) { return about(w.finding); }))
      continue;
    auto live = std::find_if(all.begin(), all.end(),
                             [&](const Finding& f) { return about(f) && f.session_cost && f.detected_ns == found_ns; });
    if (live == all.end()) continue;
    Episode e;
    e.finding = *live;
    e.start_ns = found_ns;
    e.end_ns = now_ns;
    e.cost_ns = live->cost_ns;
    e.summary = fmt::format(
        "{} was named live as a slow burn (its cost {} when found) and no longer costs the job the floor over the "
        "session: the verdict does not name it",
        rank_label(live->culprit), format_ns(static_cast<double>(live->cost_ns)));
    v.episodes.push_back(std::move(e));
  }
}

bool StragglerDetector::gap_excess_sustained(const Lane& lane, int32_t pid) {
  // Alarmed, and rising in most of its latest windows: the statistic
  // drains by the allowance a window only, so a rank back in line stays
  // alarmed for minutes after a spell, and a burst of descheduled windows
  // (each a capped step up) lifts it in one window of several; one noisy
  // window (a partial last one) neither makes nor breaks it.
  auto cusum = lane.cusum.find(pid);
  auto recent = lane.gap_cusum_recent.find(pid);
  if (cusum == lane.cusum.end() || !cusum->second.alarmed() || recent == lane.gap_cusum_recent.end() ||
      recent->second.size() != kGapRiseWindows + 1)
    return false;
  size_t rises = 0;
  for (size_t i = 1; i < recent->second.size(); ++i) rises += recent->second[i] > recent->second[i - 1];
  return rises >= kGapRisesNeeded;
}

std::map<int32_t, LaneRankTotals> StragglerDetector::lane_totals(const Lane& lane) {
  std::map<int32_t, LaneRankTotals> totals;
  for (int32_t pid : lane.seen) {
    LaneRankTotals& t = totals[pid];
    auto at = [pid](const std::map<int32_t, uint64_t>& m) { return m.contains(pid) ? m.at(pid) : 0; };
    t.lasts = at(lane.total_lasts);
    t.blame_ns = at(lane.total_blame_ns);
    t.blame_leaving_ns = at(lane.total_blame_leaving_ns);
    if (auto inside = lane.total_inside.find(pid); inside != lane.total_inside.end()) {
      t.inside_ns = inside->second.duration_ns;
      if (inside->second.has_runq) t.runq_ns = inside->second.runq_ns;
    }
  }
  return totals;
}

}  // namespace slowburn
