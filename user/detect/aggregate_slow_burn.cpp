#include "detect/aggregate_slow_burn.h"

#include <algorithm>

#include "detect/cost_onset.h"
#include "detect/verdict.h"
#include "stats/cusum.h"
#include "stats/peer_sample.h"

namespace slowburn {

namespace {
// Each look is a test that could alarm by chance, and a service's totals
// change slowly: one a minute.
constexpr uint64_t kLookEveryNs = 60'000'000'000;
// Not before a lane has been traced this long: on a shorter stretch a
// spell under the windows' persistence is a few percent of the time.
constexpr uint64_t kMinTracedNs = 120'000'000'000;
// The latest stretch judged beside the whole baseline, and how often its
// starting totals are kept (each lane keeps ~11 snapshots of its ranks).
constexpr uint64_t kLatestNs = 600'000'000'000;
constexpr uint64_t kSnapshotEveryNs = 60'000'000'000;
// At most this many history points per lane; past it every other point
// goes and the stride doubles (a day keeps one in 6 to 12 minutes).
constexpr size_t kPointsKept = 256;
constexpr uint64_t kFirstStrideNs = 60'000'000'000;
// A lane quiet this long is forgotten: a communicator that is gone (jobs
// that make and drop them would otherwise grow the state without end).
constexpr uint64_t kForgetQuietNs = 3600'000'000'000;
// A drift's floor, as a share of --min-cost (trace's: straggler_slow_burn.cpp).
constexpr double kDriftFloorShare = 0.5;
// A drift is judged on a shorter stretch than the latest ten minutes, as
// trace's on its latest minute: over ten minutes a ramp's early minutes
// dilute its cost (a ramp to 1.10x over ten minutes, judged on the whole
// baseline, passed half the floor at 1.041x).
constexpr uint64_t kDriftStretchNs = 120'000'000'000;
// A window's gap excess enters the CUSUM where the window holds this many
// instances (a step of up to half a second in a 5 s window), capped. The
// statistic grows per second of the job's time, whatever the window (5 s
// by default, --window-ms): a 4%-of-step excess alarms in 15 s, 2% in 45 s.
// One wild window can lift it past the decision alone, but not rise in
// kGapRisesNeeded of the latest windows.
constexpr uint64_t kGapMinInstances = 10;
constexpr double kGapInputCap = 5.0;
constexpr double kGapUnitNs = 1e9;
// Rising: in 4 of its latest 5 windows (25 s). The statistic drains by the
// allowance a window only, so a rank back in line stays alarmed for
// minutes; one noisy window neither makes nor breaks it.
constexpr size_t kGapRiseWindows = 5;
constexpr size_t kGapRisesNeeded = 4;

// The kernel keeps run-queue waits for every call or for none of a
// window's (runq_calls == cpu_calls): a rank's total has them only while
// every window did.
void add_counts(LaneRankTotals& t, const AggWindowInput& in) {
  t.lasts += in.lasts;
  t.blame_ns += in.blame_ns;
  t.blame_leaving_ns += in.blame_leaving_ns;
  t.inside_ns += in.cpu_wait_ns;
  if (!in.cpu_calls) return;
  if (t.runq_ns && in.runq_calls == in.cpu_calls)
    *t.runq_ns += in.runq_ns;
  else
    t.runq_ns.reset();
}
}  // namespace

AggregateSlowBurn::AggregateSlowBurn(const DetectorConfig& config, std::vector<ProbeInfo> probes)
    : thresholds_(config.session_cost_thresholds),
      gap_unit_share_(config.cusum_unit_share),
      gap_allowance_(config.cusum_allowance),
      gap_decision_(config.cusum_decision) {
  for (ProbeInfo& p : probes) probes_.emplace(p.id, std::move(p));
}

void AggregateSlowBurn::add(uint64_t start_ns, uint64_t end_ns, const std::vector<AggWindowInput>& inputs) {
  if (!watched_from_ns_) watched_from_ns_ = start_ns;
  std::map<Key, std::vector<const AggWindowInput*>> windows;
  for (const AggWindowInput& in : inputs) {
    auto probe = probes_.find(in.probe_id);
    // Calls of handles not named yet may mix several communicators' instances.
    if (probe == probes_.end() || probe->second.kind != CallKind::synchronizing || !in.comm || in.comm->key.empty() ||
        !in.arrivals)
      continue;
    windows[{in.identity.job, in.comm->key, probe->second.name}].push_back(&in);
  }
  for (const auto& [key, ranks] : windows) {
    Lane& lane = lanes_[key];
    AggSlowBurnLane& s = lane.saved;
    if (s.probe.empty()) {
      std::tie(s.job, s.comm_key, s.probe) = key;
      s.first_ns = start_ns;
      s.stride_ns = kFirstStrideNs;
    }
    lane.comm = ranks.front()->comm;
    s.totals.at_ns = end_ns;
    s.totals.traced_ns += end_ns > start_ns ? end_ns - start_ns : 0;
    for (const AggWindowInput* in : ranks) {
      int32_t pid = in->identity.pid;
      lane.identities[pid] = in->identity;
      if (in->comm_rank) lane.comm_ranks[pid] = *in->comm_rank;
      // A rank new to the lane keeps run-queue waits until a window lacks them.
      auto [at, fresh] = s.totals.ranks.try_emplace(pid);
      if (fresh) at->second.runq_ns = 0;
      add_counts(at->second, *in);
      s.totals.instances += in->instances;  // each instance is closed by one rank's return
    }
    add_gap_excess(lane, end_ns, end_ns > start_ns ? end_ns - start_ns : 0, ranks);
    keep_history(lane);
  }
}

void AggregateSlowBurn::add_gap_excess(Lane& lane, uint64_t end_ns, uint64_t elapsed_ns,
                                       const std::vector<const AggWindowInput*>& ranks) const {
  // How much longer each rank computed than its peers this window, as a
  // share of the step, in units of unit_share: normalised by the step, not
  // by the peers' spread, as trace's (straggler_windows.cpp).
  uint64_t instances = 0;
  std::map<int32_t, std::vector<double>> gap_ns;  // one mean a rank
  for (const AggWindowInput* in : ranks) {
    instances += in->instances;
    if (in->gaps) gap_ns[in->identity.pid] = {static_cast<double>(in->gap_ns) / static_cast<double>(in->gaps)};
  }
  if (instances < kGapMinInstances || gap_ns.size() < 2 || !elapsed_ns) return;
  const double step_ns = static_cast<double>(elapsed_ns) / static_cast<double>(instances);
  const PeerSample peers(gap_ns);
  for (const auto& [pid, gap] : gap_ns) {
    const double units = (gap.front() - *peers.peer_median(pid)) / step_ns / gap_unit_share_;
    double& statistic = lane.saved.gap_cusum[pid];
    const double seconds = static_cast<double>(elapsed_ns) / kGapUnitNs;
    Cusum cusum(gap_allowance_ * seconds, gap_decision_);
    cusum.resume(statistic);
    const bool was_alarmed = cusum.alarmed();
    cusum.add(std::clamp(units, -kGapInputCap, kGapInputCap) * seconds);
    statistic = cusum.statistic();
    if (!cusum.alarmed())
      lane.saved.gap_alarmed_ns.erase(pid);
    else if (!was_alarmed)
      lane.saved.gap_alarmed_ns[pid] = end_ns;
    std::deque<double>& recent = lane.gap_recent[pid];
    recent.push_back(statistic);
    if (recent.size() > kGapRiseWindows + 1) recent.pop_front();
  }
}

bool AggregateSlowBurn::gap_grows_since(const Lane& lane, int32_t pid, uint64_t onset_ns, bool named_so) const {
  // Its step began to grow near the cost's onset: a step longer than its
  // peers' for hours before (a rank its collective lets go first, that
  // computes longer and arrives on time) is structure, and a stall of it
  // then is no drift.
  auto alarmed = lane.saved.gap_alarmed_ns.find(pid);
  if (alarmed == lane.saved.gap_alarmed_ns.end() || alarmed->second + kLatestNs < onset_ns) return false;
  // Still rising (kGapRisesNeeded of the latest windows); once named, still
  // alarmed: a drift does not come and go with the rises of one window.
  if (named_so) return true;
  auto recent = lane.gap_recent.find(pid);
  if (recent == lane.gap_recent.end() || recent->second.size() != kGapRiseWindows + 1) return false;
  size_t rises = 0;
  for (size_t i = 1; i < recent->second.size(); ++i) rises += recent->second[i] > recent->second[i - 1];
  return rises >= kGapRisesNeeded;
}

void AggregateSlowBurn::keep_history(Lane& lane) {
  AggSlowBurnLane& s = lane.saved;
  const LaneSnapshot& now = s.totals;
  // The latest stretch's starts: one a minute while the lane moves; a lane
  // that resumes after a pause longer than the stretch starts afresh.
  if (!s.kept.empty() && s.kept.back().instances != now.instances &&
      s.kept.back().at_ns + kLatestNs + kSnapshotEveryNs <= now.at_ns) {
    s.kept.clear();
    lane.gap_recent.clear();  // its rises are judged on windows in a row
  }
  if (s.kept.empty() || now.at_ns >= s.kept.back().at_ns + kSnapshotEveryNs) s.kept.push_back(now);
  while (s.kept.size() >= 2 && s.kept[1].at_ns + kLatestNs <= now.at_ns) s.kept.pop_front();

  if (!s.points.empty() && now.at_ns < s.points.back().at_ns + s.stride_ns) return;
  AggCostPoint point{now.at_ns, now.traced_ns, {}};
  for (const auto& [pid, t] : now.ranks) point.own_ns.emplace_back(pid, t.own_ns());
  s.points.push_back(std::move(point));
  thin_cost_history(s.points, s.stride_ns, kPointsKept);
}

std::optional<CostOnset> AggregateSlowBurn::onset_of(const Lane& lane, int32_t pid, double floor_share) const {
  const AggSlowBurnLane& s = lane.saved;
  std::vector<CumulativeCost> samples{{s.first_ns, 0, 0}};
  for (const AggCostPoint& p : s.points)
    if (p.at_ns > s.first_ns && p.at_ns < s.totals.at_ns)
      samples.push_back({p.at_ns, p.traced_ns, own_cost_at(p.own_ns, pid)});
  // After the history's last point, the latest ten minutes' snapshots (one
  // a minute): after hours the points are minutes apart, and a change in
  // the latest of them would be dated at the point before it, its cost
  // since averaged over the flat minutes between.
  const uint64_t last_point_ns = samples.back().at_ns;
  for (const LaneSnapshot& k : s.kept)
    if (k.at_ns > last_point_ns && k.at_ns < s.totals.at_ns) {
      auto at = k.ranks.find(pid);
      samples.push_back({k.at_ns, k.traced_ns, at != k.ranks.end() ? at->second.own_ns() : 0});
    }
  auto rank = s.totals.ranks.find(pid);
  samples.push_back({s.totals.at_ns, s.totals.traced_ns, rank != s.totals.ranks.end() ? rank->second.own_ns() : 0});
  CostOnsetThresholds thresholds;
  thresholds.floor_share = floor_share;
  return cost_onset(samples, thresholds);
}

std::optional<AggregateSlowBurn::Judged> AggregateSlowBurn::judge_lane(const Lane& lane, uint64_t now_ns) const {
  const AggSlowBurnLane& s = lane.saved;
  // A restored lane is judged once this process has seen it again.
  // Nor a lane quiet for two looks: a paused job's rank stops standing.
  if (!lane.comm || s.totals.traced_ns < kMinTracedNs || s.totals.instances < thresholds_.min_instances ||
      s.totals.at_ns + 2 * kLookEveryNs < now_ns)
    return std::nullopt;
  const size_t members = s.totals.ranks.size();
  // Not the scheduler's where the node said the rank's own cgroup
  // throttled it over at least half of the stretch judged, of the part
  // this process watched (a restored baseline's earlier days were not).
  // That part must be ten minutes or the whole stretch: a throttling that
  // began just after a restart does not speak for days of baseline.
  auto own_cause = [&](std::optional<SessionCostJudgement>& x, uint64_t from_ns) {
    uint64_t from = from_ns;
    if (watched_from_ns_ && *watched_from_ns_ > from_ns && s.totals.at_ns > *watched_from_ns_ &&
        s.totals.at_ns - *watched_from_ns_ >= kLatestNs)
      from = *watched_from_ns_;
    if (x && x->scheduler_noise && own_cpu_causes_.over_half(x->pid, from, s.totals.at_ns)) x->scheduler_noise = false;
  };
  LaneSnapshot judged = s.totals;
  auto j = judge_session_cost(judged.ranks, judged.instances, members, judged.traced_ns, thresholds_);
  own_cause(j, s.first_ns);
  bool latest = false;
  // Else its latest stretch: a cost that began late, or grows (a ramp),
  // passes the floor there long before it does over days of baseline.
  if ((!j || j->scheduler_noise) && !s.kept.empty() && s.kept.front().at_ns + kLatestNs <= now_ns) {
    LaneSnapshot stretch = totals_since(s.totals, s.kept.front());
    auto l = judge_session_cost(stretch.ranks, stretch.instances, members, stretch.traced_ns, thresholds_);
    own_cause(l, s.kept.front().at_ns);
    // Across a restart or a pause its traced time can be short: a spell
    // is then a few percent of it.
    if (l && !l->scheduler_noise && stretch.traced_ns >= kLatestNs / 2) {
      j = l;
      judged = std::move(stretch);
      latest = true;
    }
  }
  // Else a drift: on its latest two to three minutes (the newest snapshot
  // two minutes old) against half the floor, where the rank's step grows
  // against its peers' since a dated onset. A rank
  // as slow from the start, however often last, is no drift; nor is a
  // cost that is the scheduler's.
  std::optional<CostOnset> drift_onset;
  const LaneSnapshot* drift_from = nullptr;
  for (auto k = s.kept.rbegin(); !j && k != s.kept.rend() && !drift_from; ++k)
    if (k->at_ns + kDriftStretchNs <= now_ns) drift_from = &*k;
  if (drift_from) {
    SessionCostThresholds half = thresholds_;
    half.min_cost_share *= kDriftFloorShare;
    LaneSnapshot stretch = totals_since(s.totals, *drift_from);
    auto d = judge_session_cost(stretch.ranks, stretch.instances, members, stretch.traced_ns, half);
    own_cause(d, drift_from->at_ns);
    // Across a restart or a pause the stretch can be short, as above.
    if (d && !d->scheduler_noise && stretch.traced_ns >= kDriftStretchNs / 2) {
      drift_onset = onset_of(lane, d->pid, half.min_cost_share);
      // Named at the last look on this lane (at the floor or as a drift).
      auto named = named_.find(d->pid);
      const bool named_so = named != named_.end() && named->second.probe == s.probe && named->second.comm &&
                            named->second.comm->key == s.comm_key;
      if (drift_onset && !drift_onset->from_start && gap_grows_since(lane, d->pid, drift_onset->at_ns, named_so)) {
        j = d;
        judged = std::move(stretch);
        latest = true;
      } else {
        drift_onset.reset();
      }
    }
  }
  // A minor cost where every member waits for a CPU is the scheduler's:
  // withheld, and said so.
  if (!j) return std::nullopt;
  auto identity = lane.identities.find(j->pid);
  if (identity == lane.identities.end()) return std::nullopt;  // not seen since the restore
  Finding f;
  f.type = "straggler";
  f.detector = "session-cost";
  f.culprit = identity->second;
  f.probe = s.probe;
  f.comm = lane.comm;
  if (auto r = lane.comm_ranks.find(j->pid); r != lane.comm_ranks.end()) f.comm_rank = r->second;
  f = session_cost_finding(std::move(f), *j, judged.traced_ns);
  f.session_cost->latest = latest;
  f.session_cost->drift = drift_onset.has_value();
  // Dated on the whole baseline (a drift against its own floor: the full
  // one dates no cost that has not reached it).
  f.session_cost->onset = drift_onset ? drift_onset : onset_of(lane, j->pid, thresholds_.min_cost_share);
  f.severity = severity_of(j->cost_share, thresholds_);
  f.detected_ns = now_ns;
  f.summary = straggler_summary(f);
  return Judged{std::move(f), j->scheduler_noise, {j->runq_share, j->peers_runq_share}};
}

void AggregateSlowBurn::judge(uint64_t now_ns) {
  if (looked_ns_ && now_ns < looked_ns_ + kLookEveryNs) return;
  looked_ns_ = now_ns;
  std::erase_if(lanes_, [&](const auto& kv) { return kv.second.saved.totals.at_ns + kForgetQuietNs < now_ns; });
  // Per rank, its costliest lane; withheld only where no lane names it.
  std::map<int32_t, Finding> named;
  std::map<int32_t, Withheld> withheld;
  for (const auto& [key, lane] : lanes_) {
    auto judged = judge_lane(lane, now_ns);
    if (!judged) continue;
    Finding& f = judged->finding;
    int32_t pid = f.culprit.pid;
    if (judged->withheld) {
      if (auto at = withheld.find(pid); at == withheld.end() || at->second.finding.cost_ns < f.cost_ns)
        withheld[pid] = scheduler_noise_withheld(std::move(f), judged->shares);
    } else if (auto at = named.find(pid); at == named.end() || at->second.cost_ns < f.cost_ns) {
      named[pid] = std::move(f);
    }
  }
  for (auto& [pid, f] : named)
    if (auto before = named_.find(pid); before != named_.end())
      f.detected_ns = before->second.detected_ns;  // found then; its evidence now
  std::erase_if(withheld, [&](const auto& kv) { return named.contains(kv.first); });
  named_ = std::move(named);
  withheld_ = std::move(withheld);
}

void AggregateSlowBurn::remove_rank(int32_t pid) {
  named_.erase(pid);
  own_cpu_causes_.forget(pid);
  withheld_.erase(pid);
  for (auto it = lanes_.begin(); it != lanes_.end();) {
    Lane& lane = it->second;
    lane.saved.totals.ranks.erase(pid);
    for (LaneSnapshot& k : lane.saved.kept) k.ranks.erase(pid);
    lane.identities.erase(pid);
    lane.comm_ranks.erase(pid);
    lane.saved.gap_cusum.erase(pid);
    lane.saved.gap_alarmed_ns.erase(pid);
    lane.gap_recent.erase(pid);
    it = lane.saved.totals.ranks.empty() ? lanes_.erase(it) : std::next(it);
  }
}

AggSlowBurnState AggregateSlowBurn::state() const {
  AggSlowBurnState state;
  for (const auto& [key, lane] : lanes_) state.lanes.push_back(lane.saved);
  return state;
}

void AggregateSlowBurn::restore(AggSlowBurnState state) {
  for (AggSlowBurnLane& s : state.lanes) {
    if (s.probe.empty() || s.totals.ranks.empty()) continue;
    if (!s.stride_ns) s.stride_ns = kFirstStrideNs;
    Key key{s.job, s.comm_key, s.probe};
    lanes_[key].saved = std::move(s);
  }
}

}  // namespace slowburn
