// Calls in: lanes per (probe, communicator), instances, hangs. Windows,
// findings and the verdict are in straggler_windows.cpp.
#include "detect/straggler.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/format.h"
#include "core/strings.h"
#include "detect/straggler_internal.h"
#include "detect/verdict.h"
#include "slowburn/instance_rules.h"
#include "stats/robust.h"

namespace slowburn {

namespace {
constexpr size_t kKeptReleases = 64;              // per rank: a few steps of every lane
constexpr size_t kKeptSequentialInstances = 256;  // per lane: a sequential finding's evidence
}  // namespace

DetectorCounters& DetectorCounters::operator+=(const DetectorCounters& other) {
  calls += other.calls;
  unknown_process += other.unknown_process;
  sequence_gaps += other.sequence_gaps;
  discarded_calls += other.discarded_calls;
  late_calls += other.late_calls;
  instances += other.instances;
  aligned_by_sequence += other.aligned_by_sequence;
  order_mismatches += other.order_mismatches;
  return *this;
}

uint64_t leaving_excess_ns(const RankCall& call) {
  if (!call.since_release_ns || !call.gap_ns) return 0;
  return *call.since_release_ns > *call.gap_ns ? *call.since_release_ns - *call.gap_ns : 0;
}

uint64_t self_caused_lead_ns(const RankCall& last, const RankCall& second) {
  return sb_self_caused_lead(last.entry_ns, second.entry_ns, last.since_release_ns.value_or(SB_AGG_UNKNOWN),
                             second.since_release_ns.value_or(SB_AGG_UNKNOWN));
}

StragglerDetector::StragglerDetector(DetectorConfig config, std::vector<ProbeInfo> probes) : config_(config) {
  for (ProbeInfo& info : probes) probes_.emplace(info.id, std::move(info));
}

StragglerDetector::~StragglerDetector() = default;
StragglerDetector::StragglerDetector(StragglerDetector&&) noexcept = default;
StragglerDetector& StragglerDetector::operator=(StragglerDetector&&) noexcept = default;

void StragglerDetector::add_rank(const RankIdentity& rank) {
  identities_[rank.pid] = rank;
  alive_.insert(rank.pid);
}

void StragglerDetector::add_participant(uint32_t probe_id, int32_t pid) {
  if (!probes_.contains(probe_id) || !identities_.contains(pid)) return;
  attached_[probe_id].insert(pid);
  for (auto& [key, lane] : lanes_)
    if (key.probe_id == probe_id && lane->aligner && eligible(*lane, pid)) lane->aligner->add_participant(pid);
}

const RankIdentity& StragglerDetector::identity(int32_t pid) const { return identities_.at(pid); }

void StragglerDetector::remove_rank(int32_t pid, DetectorOutput& out, const std::optional<ProcessEnd>& end) {
  if (!alive_.erase(pid)) return;
  if (end && end->failed())
    raise_failure(pid, *end, out);
  else
    out.notes.push_back(fmt::format("{} {}", rank_label(identity(pid)), end ? describe_end(*end) : "exited"));
  if (end) follow_failures(pid, end->ts_ns);
  for (auto& [key, lane] : lanes_)
    if (lane->aligner) {
      // Its calls still queued on a settling lane complete instances first.
      if (lane->aligner->has_participant(pid)) take_instances(key, *lane, 0, true);
      lane->aligner->remove_participant(pid);
    }
}

// A rank takes part in a lane's alignment when its probe is attached and it
// belongs to the communicator: every rank for the job-wide one, the known
// local members, or (members learnt from calls) the ranks seen on it.
bool StragglerDetector::eligible(const Lane& lane, int32_t pid, bool alive) const {
  if (alive && !alive_.contains(pid)) return false;
  auto attached = attached_.find(lane.info.id);
  if (attached == attached_.end() || !attached->second.contains(pid)) return false;
  if (!lane.comm || lane.comm->source == CommSource::job) return true;
  if (lane.comm->local_pids) return lane.comm->local_pids->contains(pid);
  return lane.seen.contains(pid);
}

StragglerDetector::Lane& StragglerDetector::lane_for(uint32_t probe_id, const CallComm& comm) {
  LaneKey key{probe_id, comm.comm ? comm.comm->id : 0};
  auto& slot = lanes_[key];
  if (slot) {
    slot->comm = comm.comm;  // the registry may have learnt more about it
    return *slot;
  }
  slot = std::make_unique<Lane>();
  Lane& lane = *slot;
  lane.info = probes_.at(probe_id);
  lane.comm = comm.comm;
  bool by_sequence = comm.comm && (comm.comm->seq_from_creation || comm.seq_absolute);
  if (lane.info.kind == CallKind::synchronizing)
    lane.aligner.emplace(by_sequence ? AlignBy::sequence : AlignBy::exit_time, true, CollectiveAligner::kMaxQueue,
                         config_.clock_tolerance_ns);
  else if (lane.info.kind == CallKind::async_enqueue && by_sequence)
    // NCCL returns at enqueue: its calls do not overlap, the numbers alone align them.
    lane.aligner.emplace(AlignBy::sequence, false);
  if (lane.aligner && lane.members_known())
    for (int32_t pid : alive_)
      if (eligible(lane, pid)) lane.aligner->add_participant(pid);
  return lane;
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

void StragglerDetector::ingest(const CallEvent& call, const CallComm& comm) {
  int32_t pid = static_cast<int32_t>(call.pid);
  if (!identities_.contains(pid) || !probes_.contains(call.probe_id)) {
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

  // The compute gap: since the rank's latest traced return, on any thread
  // (gloo runs a group's collectives on whichever worker thread is free).
  std::optional<uint64_t> gap_ns, prev_exit_ns;
  auto [exit_it, first_exit] = last_exit_by_pid_.try_emplace(pid, call.exit_ns);
  if (!first_exit) {
    if (call.entry_ns >= exit_it->second) {
      gap_ns = call.entry_ns - exit_it->second;
      prev_exit_ns = exit_it->second;
    }
    exit_it->second = std::max(exit_it->second, call.exit_ns);
  }

  LaneKey key{call.probe_id, comm.comm ? comm.comm->id : 0};
  Lane& lane = lane_for(call.probe_id, comm);
  if (lane.first_call_ns == 0) lane.first_call_ns = call.exit_ns;
  lane.seen.insert(pid);
  lane.comm_ranks[pid] = comm.comm_rank;

  if (Window* window = window_for(call.exit_ns)) {
    RankAccum& accum = window->lanes[key].ranks[pid];
    ++accum.calls;
    accum.waits_ns.push_back(static_cast<double>(call.duration_ns()));
  }

  // Its position on the communicator: every collective all members call counts.
  uint64_t comm_count = counts_position(lane.info.kind) ? count_completed(key.comm_id, pid, call.exit_ns) : 0;
  if (!lane.aligner) return;
  // A rank left out as idle rejoins when it calls again.
  if (!lane.aligner->has_participant(pid)) {
    if (!eligible(lane, pid)) return;
    lane.aligner->add_participant(pid);
  }
  lane.aligner->add({pid, call.entry_ns, call.exit_ns, gap_ns, prev_exit_ns, comm.seq, std::nullopt, comm_count,
                     call.oncpu_ns, call.runq_ns, call.size_arg});
  take_instances(key, lane, call.exit_ns);
}

void StragglerDetector::take_instances(const LaneKey& key, Lane& lane, uint64_t now_ns, bool members_final) {
  // Members learnt from calls: the first ones to report would form
  // instances without the others. Once a member exits, or the session
  // ends, no more are coming, and what is queued would be lost.
  if (!members_final && !lane.members_known() && now_ns < lane.first_call_ns + config_.settle_ns) return;
  for (CollectiveInstance& instance : lane.aligner->take_ready()) account_instance(key, lane, std::move(instance));
}

void StragglerDetector::account_instance(const LaneKey& key, Lane& lane, CollectiveInstance instance) {
  ++counters_.instances;
  if (instance.seq) ++counters_.aligned_by_sequence;
  // Where each member's own delay began: its previous collective's release
  // (or its previous call's exit, when that call was not aligned).
  for (RankCall& call : instance.calls) {
    if (!call.prev_exit_ns) continue;
    auto& known = releases_[call.pid];
    auto it = known.find(*call.prev_exit_ns);
    uint64_t base = it != known.end() ? it->second : *call.prev_exit_ns;
    __u64 since = 0, excess = 0;  // the shared rule's types (linux/types.h)
    sb_arrival_since(*call.prev_exit_ns, base, call.entry_ns, &since, &excess);
    if (since != SB_AGG_UNKNOWN) call.since_release_ns = since;
  }
  // When each member was let go: the release plus its usual time to leave
  // this collective (the same rule as the kernel's, slowburn/instance_rules.h).
  for (const RankCall& call : instance.calls) {
    auto& known = releases_[call.pid];
    known[call.exit_ns] = sb_let_go(instance.release_ns, call.exit_ns, &lane.usual_leave_ns[call.pid]);
    while (known.size() > kKeptReleases) known.erase(known.begin());
  }

  if (lane.info.kind == CallKind::synchronizing) {
    learn_positions(key.comm_id, instance);
    if (instance_tap_) instance_tap_(instance);
  }

  // The last to arrive is blamed for how much later than the second-to-last
  // it came (how much sooner the collective would have started without it),
  // as far as its own longer compute gap explains it: entry = previous
  // release + gap, and a release delayed by another collective is inherited.
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
  uint64_t blame = last && second ? self_caused_lead_ns(*last, *second) : 0;
  // Of that, what leaving its previous collective later than usual explains
  // (since its release, beyond its compute gap), more than the runner-up's.
  uint64_t blame_leaving =
      last && second ? sb_lead_from_leaving(blame, leaving_excess_ns(*last), leaving_excess_ns(*second)) : 0;
  for (const RankCall& call : instance.calls)
    if (call.oncpu_ns) lane.total_inside[call.pid].add(call.exit_ns - call.entry_ns, *call.oncpu_ns, call.runq_ns);
  if (last && second) {
    lane.total_blame_ns[last->pid] += blame;
    lane.total_lasts[last->pid] += 1;
    lane.total_blame_leaving_ns[last->pid] += blame_leaving;
    ++lane.total_judged_instances;
  }
  std::vector<double> entries;
  entries.reserve(instance.calls.size());
  for (const RankCall& call : instance.calls) entries.push_back(static_cast<double>(call.entry_ns));
  double median_entry = *median(entries);
  // Judged per instance, not per window: a late instance is evidence too.
  if (last && second) sequential_test(lane, instance, *last, blame, blame_leaving, median_entry);

  Window* window = window_for(instance.release_ns);
  if (!window) return;
  LaneAccum& accum = window->lanes[key];
  ++accum.instances;
  account_inside(accum, instance, last ? last->entry_ns : instance.release_ns);
  for (const RankCall& call : instance.calls) {
    RankAccum& rank = accum.ranks[call.pid];
    ++rank.instances;
    rank.lateness_ns.push_back(static_cast<double>(call.entry_ns) - median_entry);
    if (call.gap_ns) rank.gaps_ns.push_back(static_cast<double>(*call.gap_ns));
    if (auto test = lane.sequential.find(call.pid); test != lane.sequential.end()) {
      rank.sequential_max = std::max(rank.sequential_max.value_or(0), test->second.statistic());
      rank.sequential_alarm = rank.sequential_alarm || test->second.alarmed();
    }
  }
  if (last && second) {
    RankAccum& rank = accum.ranks[last->pid];
    rank.blame_ns += static_cast<double>(blame);
    rank.blame_leaving_ns += static_cast<double>(blame_leaving);
    ++rank.last_count;
  }
}

void StragglerDetector::emit_pending(uint64_t now_ns, DetectorOutput& out) {
  if (pending_findings_.empty()) return;
  for (size_t i : pending_findings_) findings_[i].detected_ns = now_ns;
  for (size_t i : pending_findings_) emit_or_hold(i, current(i), out);  // cost and summary as of now
  pending_findings_.clear();
}

void StragglerDetector::sequential_test(Lane& lane, const CollectiveInstance& instance, const RankCall& last,
                                        uint64_t blame_ns, uint64_t blame_leaving_ns, double median_entry_ns) {
  // Between two ranks "last" is a coin one of them always wins: on a busy
  // node a pair's member descheduled for a few steps in a row is last by a
  // wide lead with no peer to compare it to (measured: 6-rank job, pairs of
  // 2, partners named). Pairs are left to the window rule.
  if (!config_.sequential || lane.info.kind != CallKind::synchronizing || instance.calls.size() < 3) return;
  // The step: release to release on this lane. Unknown for its first
  // instance, and a release out of order (merged clocks) is no step.
  uint64_t previous = lane.last_release_ns;
  lane.last_release_ns = std::max(lane.last_release_ns, instance.release_ns);
  if (previous == 0 || instance.release_ns <= previous) return;
  uint64_t step_ns = instance.release_ns - previous;

  SequentialInstance seen{instance.release_ns, step_ns, last.pid, blame_ns, blame_leaving_ns, {}};
  for (const RankCall& call : instance.calls)
    seen.lateness_ns.emplace_back(call.pid, static_cast<double>(call.entry_ns) - median_entry_ns);
  lane.recent.push_back(std::move(seen));
  while (lane.recent.size() > kKeptSequentialInstances) lane.recent.pop_front();

  // The event (slowburn/instance_rules.h, as the kernel counts it): last,
  // by a lead of its own worth the blame floor of a step, mostly from
  // computing longer: a lead owed mostly to leaving its previous collective
  // late (descheduled: on a busy node that comes in runs of steps) is no
  // event here; the window rule judges it (measured: a 6-rank 2-D job on 2
  // busy cores named partners 80% of whose blame was from there).
  bool event = sb_seq_event(static_cast<uint32_t>(instance.calls.size()), blame_ns, blame_leaving_ns, step_ns,
                            sb_share_bp(config_.sequential_lead_share));
  if (event) lane.total_seq_events[last.pid] += 1;
  SequentialParams params{config_.seq_p0, config_.seq_p1, config_.seq_arl0};
  for (const RankCall& call : instance.calls) {
    BernoulliCusum& test = lane.sequential.try_emplace(call.pid, params).first->second;
    bool was_alarmed = test.alarmed();
    test.add(event && call.pid == last.pid);
    // Raised on the crossing; a rank with a standing finding (either test) is not named twice.
    if (!test.alarmed() || was_alarmed || active_findings_.contains(call.pid)) continue;
    active_findings_.insert(call.pid);
    Run run;
    run.finding = findings_.size();
    // It began where the test's run began: the step before that instance's release.
    uint64_t run_instances = std::clamp<uint64_t>(test.run_observations(), 1, lane.recent.size());
    const SequentialInstance& first = lane.recent[lane.recent.size() - run_instances];
    run.start_ns = first.release_ns - std::min(first.release_ns, first.step_ns);
    runs_[call.pid].push_back(run);
    pending_findings_.push_back(findings_.size());
    findings_.push_back(sequential_finding(lane, call.pid));
  }
}

Finding StragglerDetector::lane_finding(const Lane& lane, int32_t pid, const char* type, const char* detector) const {
  Finding f;
  f.type = type;
  f.detector = detector;
  f.culprit = identity(pid);
  f.probe = lane.info.name;
  f.comm = lane.comm;
  if (auto r = lane.comm_ranks.find(pid); r != lane.comm_ranks.end()) f.comm_rank = r->second;
  return f;
}

Finding StragglerDetector::sequential_finding(const Lane& lane, int32_t pid) const {
  const BernoulliCusum& test = lane.sequential.at(pid);
  Finding f = lane_finding(lane, pid, "straggler", "sequential");
  set_sequential_evidence(f, test, config_);
  // The evidence of the run: its instances, as the windows would report them.
  uint64_t n = std::min<uint64_t>(std::max<uint64_t>(test.run_observations(), 1), lane.recent.size());
  std::vector<double> lateness;
  double blame = 0, blame_leaving = 0, all_blame = 0, elapsed = 0;
  uint64_t lasts = 0;
  for (auto it = lane.recent.end() - static_cast<std::ptrdiff_t>(n); it != lane.recent.end(); ++it) {
    elapsed += static_cast<double>(it->step_ns);
    all_blame += static_cast<double>(it->blame_ns);
    if (it->last_pid == pid) {
      ++lasts;
      blame += static_cast<double>(it->blame_ns);
      blame_leaving += static_cast<double>(it->blame_leaving_ns);
    }
    for (const auto& [member, late] : it->lateness_ns)
      if (member == pid) lateness.push_back(late);
  }
  f.lateness_median_ns = median(lateness).value_or(0);
  f.lateness_p90_ns = quantile(lateness, 0.9);
  f.blame_share = elapsed > 0 ? blame / elapsed : 0;
  f.blame_dominance = all_blame > 0 ? blame / all_blame : 0;
  f.blame_leaving_share = blame > 0 ? blame_leaving / blame : 0;
  f.last_fraction = static_cast<double>(lasts) / static_cast<double>(n);
  return f;
}

uint64_t StragglerDetector::sum_lanes(std::optional<uint32_t> probe_id, int32_t pid,
                                      std::map<int32_t, uint64_t> Lane::*total) const {
  uint64_t sum = 0;
  for (const auto& [key, lane] : lanes_) {
    if (probe_id && key.probe_id != *probe_id) continue;
    const auto& per_pid = (*lane).*total;
    if (auto it = per_pid.find(pid); it != per_pid.end()) sum += it->second;
  }
  return sum;
}

uint64_t StragglerDetector::blame_ns(uint32_t probe_id, int32_t pid) const {
  return sum_lanes(probe_id, pid, &Lane::total_blame_ns);
}

uint64_t StragglerDetector::blame_leaving_ns(uint32_t probe_id, int32_t pid) const {
  return sum_lanes(probe_id, pid, &Lane::total_blame_leaving_ns);
}

uint64_t StragglerDetector::lasts(uint32_t probe_id, int32_t pid) const {
  return sum_lanes(probe_id, pid, &Lane::total_lasts);
}

uint64_t StragglerDetector::sequential_events(uint32_t probe_id, int32_t pid) const {
  return sum_lanes(probe_id, pid, &Lane::total_seq_events);
}

uint64_t StragglerDetector::total_blame_ns(int32_t pid) const {
  return sum_lanes(std::nullopt, pid, &Lane::total_blame_ns);
}

DetectorOutput StragglerDetector::advance(uint64_t now_ns) { return advance_to(now_ns, false); }

DetectorOutput StragglerDetector::advance_to(uint64_t now_ns, bool members_final) {
  DetectorOutput out;
  for (auto& [key, lane] : lanes_) {
    if (!lane->aligner) continue;
    // Ranks that others completed collectives without: not in this
    // communicator (or not attached). They stop holding instances back.
    if (now_ns > config_.idle_ns) {
      for (int32_t pid : lane->aligner->idle_participants(now_ns - config_.idle_ns)) {
        lane->aligner->remove_participant(pid);
        if (lane->comm && lane->comm->provisional) continue;
        out.notes.push_back(
            fmt::format("{} made no {} call{} while the other ranks completed theirs for {}: aligning without it{}",
                        rank_label(identity(pid)), lane->info.name,
                        lane->comm && lane->comm->source != CommSource::job ? " on " + lane->comm->label : "",
                        format_ns(static_cast<double>(config_.idle_ns)),
                        lane->comm && lane->comm->source != CommSource::job ? "" : " (another communicator?)"));
      }
    }
    take_instances(key, *lane, now_ns, members_final);
  }
  emit_pending(now_ns, out);  // raised by the instances just taken
  close_windows(now_ns, false, out);
  counters_.discarded_calls = 0;
  counters_.order_mismatches = 0;
  for (const auto& [key, lane] : lanes_)
    if (lane->aligner) {
      counters_.discarded_calls += lane->aligner->discarded_calls();
      counters_.order_mismatches += lane->aligner->order_mismatches();
    }
  return out;
}

DetectorOutput StragglerDetector::finish(uint64_t now_ns) {
  DetectorOutput out = advance_to(now_ns, true);
  close_windows(now_ns, true, out);
  return out;
}

}  // namespace slowburn
