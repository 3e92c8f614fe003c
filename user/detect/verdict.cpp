#include "detect/verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "core/format.h"

namespace slowburn {

RankWindowStats* flag_straggler(WindowReport& report, const DetectorConfig& config, size_t peer_ranks) {
  // The candidate: most blame; the runner-up bounds how unique it is.
  RankWindowStats* worst = nullptr;
  double runner_up_blame = 0, total_blame = 0;
  for (RankWindowStats& stats : report.ranks) {
    total_blame += stats.blame_ns;
    if (!worst || stats.blame_ns > worst->blame_ns) {
      if (worst) runner_up_blame = std::max(runner_up_blame, worst->blame_ns);
      worst = &stats;
    } else {
      runner_up_blame = std::max(runner_up_blame, stats.blame_ns);
    }
  }
  if (!worst) return nullptr;
  for (RankWindowStats& stats : report.ranks)
    stats.blame_dominance = total_blame > 0 ? stats.blame_ns / total_blame : 0;
  bool unique = worst->blame_ns > 0 && worst->blame_ns >= config.uniqueness_ratio * runner_up_blame;
  bool last_often = worst->last_fraction >= config.min_last_fraction;
  // A rank late in bursts (a throttled cgroup, periodic stalls) is last in
  // few calls but carries most of the job's lost time: judged by its share
  // of the blame and by its tail, not by how often it is last. That needs
  // peers to judge the tail against: between two ranks one always "carries
  // most of the blame".
  bool z_possible = peer_ranks >= 3;
  bool dominant = z_possible && worst->blame_dominance >= config.min_blame_dominance;
  // Lateness and compute gap are two views of arriving last; on a loaded
  // node the previous release skews lateness, the gap is immune to that.
  auto at_least = [&](const std::optional<double>& z) { return z && *z >= config.z_threshold; };
  bool z_ok = !z_possible || at_least(worst->z_lateness) || at_least(worst->z_gap) ||
              (dominant && at_least(worst->z_lateness_tail));
  if (unique && (last_often || dominant) && z_ok && worst->blame_share >= config.min_blame_share) worst->flagged = true;
  return worst;
}

void set_sequential_evidence(Finding& f, const BernoulliCusum& test, const DetectorConfig& config) {
  f.sequential_statistic = test.statistic();
  f.sequential_threshold = test.threshold();
  f.sequential_arl0 = config.seq_arl0;
  f.sequential_lead_share = config.sequential_lead_share;
  f.instances_considered = test.run_observations();
  f.instances_flagged = test.run_events();
}

std::map<int32_t, LateBlame> late_blame_ns(const WindowReport& report) {
  std::map<int32_t, LateBlame> late;
  for (const RankWindowStats& s : report.ranks)
    if (s.flagged) late[s.identity.pid] = {s.blame_ns, s.blame_ns * s.blame_leaving_share};
  return late;
}

Finding straggler_finding(const char* detector, const WindowReport& report, const RankWindowStats& evidence,
                          uint64_t now_ns) {
  Finding f;
  f.type = "straggler";
  f.detector = detector;
  f.culprit = evidence.identity;
  f.probe = report.probe;
  f.comm = report.comm;
  f.comm_rank = evidence.comm_rank;
  f.detected_ns = now_ns;
  f.lateness_median_ns = evidence.lateness_median_ns.value_or(0);
  f.lateness_p90_ns = evidence.lateness_p90_ns;
  f.z_lateness_tail = evidence.z_lateness_tail;
  f.blame_share = evidence.blame_share;
  f.blame_dominance = evidence.blame_dominance;
  f.last_fraction = evidence.last_fraction;
  f.blame_leaving_share = evidence.blame_leaving_share;
  f.z_lateness = evidence.z_lateness;
  f.z_gap = evidence.z_gap;
  return f;
}

Finding inside_finding(const WindowReport& report, const RankWindowStats& evidence, uint64_t now_ns) {
  Finding f = straggler_finding("inside", report, evidence, now_ns);
  f.where = "inside";
  InsideEvidence inside;
  inside.oncpu_share = evidence.inside_oncpu_share.value_or(0);
  inside.runq_share = evidence.inside_runq_share.value_or(0);
  inside.cpu_read = evidence.inside_oncpu_share.has_value();
  inside.transport = evidence.inside_transport;
  inside.peers_oncpu_share = evidence.inside_peers_oncpu_share;
  inside.peers_runq_share = evidence.inside_peers_runq_share;
  inside.after_last_arrival_ns = report.after_last_arrival_ns;
  inside.after_last_arrival_ratio = report.after_last_arrival_ratio;
  inside.cost_share = evidence.inside_cost_share;
  f.inside = inside;
  return f;
}

namespace {

std::string percent(std::optional<double> share) { return share ? fmt::format("{:.0f}%", *share * 100) : "-"; }

// "rank 1 (pid 8445) is the straggler inside mpi.allreduce: it arrives on time (...), but ran 24% of ...".
std::string inside_summary(const Finding& f) {
  const InsideEvidence& in = *f.inside;
  std::string collective;
  if (in.after_last_arrival_ns) {
    collective = fmt::format("; each instance took {} from its last arrival to its release",
                             format_ns(*in.after_last_arrival_ns));
    // Against the lane's usual (its earlier windows' 20th percentile): said
    // only when it grew (a job slow from the start has no healthy past).
    if (in.after_last_arrival_ratio && *in.after_last_arrival_ratio >= 1.5)
      collective += fmt::format(", {:.1f}x this communicator's usual", *in.after_last_arrival_ratio);
  }
  if (!in.transport.empty())
    return fmt::format(
        "{} is the straggler inside {}{}: it arrives on time (last in {:.0f}% of calls, {} after the median rank), "
        "but its data path is set apart from its peers': {}{}{}; flagged in {} of the last {} windows; the job lost "
        "{} waiting inside beyond the usual ({:.1f}% of traced time)",
        rank_label(f.culprit), f.probe, communicator_phrase(f), f.last_fraction * 100, format_ns(f.lateness_median_ns),
        in.transport,
        in.cpu_read ? fmt::format(" (it ran {:.0f}% of its time inside; peers {})", in.oncpu_share * 100,
                                  percent(in.peers_oncpu_share))
                    : std::string(),
        collective, f.windows_flagged, f.windows_considered, format_ns(static_cast<double>(f.cost_ns)),
        f.cost_share * 100);
  return fmt::format(
      "{} is the straggler inside {}{}: it arrives on time (last in {:.0f}% of calls, {} after the median rank) but "
      "ran only {:.0f}% of the time it spent inside, waiting for a CPU {:.0f}% (its peers ran {}, waited {}){}; "
      "flagged in {} of the last {} windows; the job lost {} waiting for its CPU ({:.1f}% of traced time)",
      rank_label(f.culprit), f.probe, communicator_phrase(f), f.last_fraction * 100, format_ns(f.lateness_median_ns),
      in.oncpu_share * 100, in.runq_share * 100, percent(in.peers_oncpu_share), percent(in.peers_runq_share),
      collective, f.windows_flagged, f.windows_considered, format_ns(static_cast<double>(f.cost_ns)),
      f.cost_share * 100);
}

}  // namespace

std::string communicator_phrase(const Finding& f) {
  if (!f.comm || f.comm->source == CommSource::job) return "";
  return fmt::format(" on {}{}", f.comm->label, f.comm_rank ? fmt::format(" as its rank {}", *f.comm_rank) : "");
}

Finding session_cost_finding(Finding f, const SessionCostJudgement& j, uint64_t traced_ns) {
  f.last_fraction = j.last_fraction;
  f.blame_share = j.cost_share;
  f.instances_considered = j.instances;
  f.instances_flagged = j.lasts;
  f.cost_ns = j.cost_ns;
  f.cost_share = j.cost_share;
  f.session_cost =
      SessionCostEvidence{j.next_cost_share, j.expected_last_fraction, j.last_z, traced_ns, false, false, {}};
  f.summary = straggler_summary(f);
  return f;
}

namespace {

Withheld withheld_because(Finding f, std::string reason) {
  Withheld w;
  w.reason = std::move(reason);
  w.summary = f.summary + "; not named: " + w.reason;
  w.finding = std::move(f);
  return w;
}

}  // namespace

void withhold_held_by_data_path(SessionVerdict& v, const std::map<int32_t, HeldByPath>& held_by_path) {
  auto same_comm = [](const Finding& a, const Finding& b) {
    return a.comm && b.comm ? a.comm->key == b.comm->key : !a.comm && !b.comm;
  };
  auto by_path = [&](const Finding& f) {
    return std::find_if(v.stragglers.begin(), v.stragglers.end(), [&](const Finding& g) {
      return g.culprit.pid != f.culprit.pid && g.where == "inside" && g.inside && !g.inside->transport.empty() &&
             same_comm(f, g);
    });
  };
  // Decided on the whole list first: the path's finding may come before or after.
  std::vector<std::optional<std::string>> held;
  auto only_held = [&](int32_t pid) {
    auto it = held_by_path.find(pid);
    return it != held_by_path.end() && it->second.held > it->second.flagged_beside;
  };
  for (const Finding& f : v.stragglers) {
    bool may_be_held = f.where != "inside" && f.blame_leaving_share >= kMostlyLeaving && only_held(f.culprit.pid);
    auto path = may_be_held ? by_path(f) : v.stragglers.end();
    if (path == v.stragglers.end()) {
      held.emplace_back();
      continue;
    }
    held.emplace_back(fmt::format(
        "{:.0f}% of its lateness came from leaving its previous collective late, held inside it by {}'s data path "
        "(named: {}): a lost frame's receiver waits for the retransmission, then arrives late at the next one",
        f.blame_leaving_share * 100, rank_label(path->culprit), path->inside->transport));
  }
  std::vector<Finding> kept;
  for (size_t i = 0; i < v.stragglers.size(); ++i) {
    if (held[i])
      v.withheld.push_back(withheld_because(std::move(v.stragglers[i]), std::move(*held[i])));
    else
      kept.push_back(std::move(v.stragglers[i]));
  }
  v.stragglers = std::move(kept);
}

Withheld scheduler_noise_withheld(Finding f, const RunqShares& shares) {
  return withheld_because(
      std::move(f),
      fmt::format(
          "the other ranks of its communicator waited for a CPU {:.0f}% of their time inside their calls, it {:.0f}%: "
          "where every rank waits for a CPU (more runnable threads than CPUs), who is last is the scheduler's "
          "choice, and a minor cost is not told apart from it; trace again with a CPU for each rank: a cost of its "
          "own stays",
          shares.peers.value_or(0) * 100, shares.rank.value_or(0) * 100));
}

Withheld pair_noise_withheld(Finding f, const RunqShares& shares, double leaving_share, double own_cost_share) {
  double leaving = leaving_share * 100;
  return withheld_because(
      std::move(f),
      fmt::format("one of a pair, with no third rank to tell its own lateness from the node's: {:.0f}% of its "
                  "lateness over the session came from leaving its previous collective late, and net of it its "
                  "cost is {:.1f}%, "
                  "minor; both ranks waited for a CPU (its partner {:.0f}% of its time inside its calls, it "
                  "{:.0f}%) and its step is no longer than its partner's: who is last is the scheduler's choice; "
                  "trace again with a CPU for each rank: a rank slow on its own stays",
                  leaving, own_cost_share * 100, shares.peers.value_or(0) * 100, shares.rank.value_or(0) * 100));
}

Withheld alternating_withheld(Finding f, int flagged, int rivals_flagged) {
  return withheld_because(
      std::move(f),
      fmt::format("flagged in {} windows of the session, and the other rank of its pair in {}, with no third rank to "
                  "compare them to: who is late alternates, which is the node's (a scheduler, a shared CPU, a noisy "
                  "neighbour), not one rank's; trace again with a CPU for each rank: a rank slow on its own stays",
                  flagged, rivals_flagged));
}

namespace {

// When it began (detect/cost_onset.h), relative to the session: the
// detector keeps no wall clock; the JSON line's `began.at` is a Unix time.
std::string onset_phrase(const SessionCostEvidence& e) {
  if (!e.onset) return "";
  if (e.onset->from_start) return "; it has cost the job this since the start";
  return fmt::format("; its cost began {} into the session ({:.1f}% of the time before, {:.1f}% since)",
                     format_ns(static_cast<double>(e.onset->into_ns)), e.onset->before_share * 100,
                     e.onset->since_share * 100);
}

std::string session_cost_summary(const Finding& f) {
  const SessionCostEvidence& e = *f.session_cost;
  return fmt::format(
      "{} is a {} straggler over {}: its own lateness on {}{} cost the job {} ({:.1f}% of {} traced), "
      "{}; last in {:.0f}% of {} instances ({:.0f}% by chance alone, z {:.1f}){}{}",
      rank_label(f.culprit), f.severity.empty() ? "slow-burn" : f.severity,
      e.latest ? fmt::format("the session's latest {}", format_ns(static_cast<double>(e.traced_ns))) : "the session",
      f.probe, communicator_phrase(f), format_ns(static_cast<double>(f.cost_ns)), f.cost_share * 100,
      format_ns(static_cast<double>(e.traced_ns)),
      e.next_cost_share > 0 ? fmt::format("{:.1f}x the next rank's", f.cost_share / e.next_cost_share)
                            : std::string("no other rank's lateness costs anything"),
      f.last_fraction * 100, f.instances_considered, e.expected_last_fraction * 100, e.last_z, onset_phrase(e),
      e.drift ? "; a drift, named under the cost floor: its step grows against its peers' (the CUSUM of its compute "
                "gap alarmed and rising), a cost that began at a moment, not from the start"
              : "");
}

}  // namespace

std::string straggler_summary(const Finding& f) {
  if (f.where == "inside" && f.inside) return inside_summary(f);
  if (f.session_cost) return session_cost_summary(f);
  std::string z = f.detector == "sequential" ? std::string()
                  : f.z_lateness || f.z_gap  ? fmt::format(" (robust z: lateness {}, compute gap {})",
                                                          f.z_lateness ? fmt::format("{:.1f}", *f.z_lateness) : "-",
                                                          f.z_gap ? fmt::format("{:.1f}", *f.z_gap) : "-")
                                             : std::string(" (no z: fewer than 3 ranks)");
  std::string persistence =
      f.detector == "persistence"
          ? fmt::format("flagged in {} of the last {} windows", f.windows_flagged, f.windows_considered)
      : f.detector == "sequential"
          ? fmt::format(
                "sequential test: last by a lead of {:.0f}%+ of the step in {} of its last {} instances "
                "(log-likelihood ratio {:.1f} >= {:.1f}: a healthy rank crosses it at most once in {:.0e} instances)",
                f.sequential_lead_share * 100, f.instances_flagged, f.instances_considered, f.sequential_statistic,
                f.sequential_threshold, f.sequential_arl0)
          : std::string("sustained compute-gap excess (CUSUM)");
  // Late in bursts: last in few calls, but very late in those.
  std::string arrival =
      f.last_fraction < kLateInBurstsBelow && f.lateness_p90_ns
          ? fmt::format(
                "is late in bursts: last in {:.0f}% of {} calls{}, {} after the median rank in its latest "
                "10% (tail z {})",
                f.last_fraction * 100, f.probe, communicator_phrase(f), format_ns(*f.lateness_p90_ns),
                f.z_lateness_tail ? fmt::format("{:.1f}", *f.z_lateness_tail) : "-")
          : fmt::format("arrives last in {:.0f}% of {} calls{}, {} after the median rank", f.last_fraction * 100,
                        f.probe, communicator_phrase(f), format_ns(f.lateness_median_ns));
  // NCCL returns at enqueue: a host-side straggler (data loading, CPU), not a GPU one.
  std::string enqueue = f.comm && f.comm->backend == CommBackend::nccl
                            ? "; times are NCCL enqueue times (host side: the GPU work is not seen)"
                            : "";
  // Late without computing longer: it did not get a CPU when released.
  std::string leaving =
      f.blame_leaving_share >= kMostlyLeaving
          ? fmt::format(" ({:.0f}% of it from leaving its previous collective later than usual: descheduled there?)",
                        f.blame_leaving_share * 100)
          : "";
  return fmt::format(
      "{} is the straggler: {}{}; blame {:.0f}% of the window ({:.0f}% of all ranks' blame){}; {}; the job lost {} "
      "waiting for it ({:.1f}% of traced time){}",
      rank_label(f.culprit), arrival, z, f.blame_share * 100, f.blame_dominance * 100, leaving, persistence,
      format_ns(static_cast<double>(f.cost_ns)), f.cost_share * 100, enqueue);
}

}  // namespace slowburn
