// Hangs: the wavefront of each communicator (detect/wavefront.h) from the
// members' positions and the calls in flight, with the kernel's view of
// their processes; the members that stop the job are named, the ones that
// only wait for them are not.
#include <fmt/format.h>

#include <algorithm>

#include "core/format.h"
#include "core/strings.h"
#include "detect/straggler.h"
#include "detect/straggler_internal.h"
#include "detect/verdict.h"
#include "detect/wavefront.h"

namespace slowburn {

namespace {

// A wait this long at the wavefront is said when the session ends before
// hang_ns (a pending hang); shorter ones are a collective's ordinary time.
constexpr uint64_t kPendingNs = 1'000'000'000;

std::vector<int> ranks_of(const std::vector<int32_t>& pids, const std::function<int(int32_t)>& rank) {
  std::vector<int> out;
  for (int32_t pid : pids) out.push_back(rank(pid));
  std::sort(out.begin(), out.end());
  return out;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::vector<std::string> parts;
  for (int r : ranks) parts.push_back(std::to_string(r));
  return join(parts);
}

}  // namespace

uint64_t StragglerDetector::count_completed(uint32_t comm_id, int32_t pid, uint64_t exit_ns) {
  MemberProgress& p = progress_[comm_id][pid];
  p.last_exit_ns = std::max(p.last_exit_ns, exit_ns);
  return ++p.completed;
}

// Every member of an aligned instance is at the same position: the first
// instance sets each member's offset (their counts began at different steps
// when attached to a running job), later ones correct it (a lost record).
void StragglerDetector::learn_positions(uint32_t comm_id, const CollectiveInstance& instance) {
  auto& members = progress_[comm_id];
  int64_t target = 0;
  for (const RankCall& call : instance.calls)
    target = std::max(target, static_cast<int64_t>(call.comm_count) + members[call.pid].offset);
  for (const RankCall& call : instance.calls) members[call.pid].offset = target - static_cast<int64_t>(call.comm_count);
}

DetectorOutput StragglerDetector::check_in_flight(uint64_t now_ns, const std::vector<InFlightCall>& calls,
                                                  const ProcessLookup& kernel) {
  DetectorOutput out;
  std::map<uint32_t, std::vector<const InFlightCall*>> by_comm;
  last_inside_.clear();
  for (const InFlightCall& call : calls) {
    int32_t pid = static_cast<int32_t>(call.tgid);
    auto probe = probes_.find(call.probe_id);
    if (probe == probes_.end() || !identities_.contains(pid)) continue;
    last_inside_[pid] = probe->second.name;
    // A call entered after now_ns was read is not waiting yet (and would underflow).
    if (!counts_position(probe->second.kind) || call.entry_ns > now_ns || !alive_.contains(pid)) continue;
    // A hang seen before any call returned (attached during it) has no lane yet.
    lane_for(call.probe_id, CallComm{call.communicator, std::nullopt, 0, false});
    by_comm[call.communicator ? call.communicator->id : 0].push_back(&call);
  }
  for (auto it = hangs_.begin(); it != hangs_.end();)
    it = by_comm.contains(it->first) ? std::next(it) : hangs_.erase(it);  // resolved: a later one is reported again
  for (auto it = pending_.begin(); it != pending_.end();)
    it = by_comm.contains(it->first) ? std::next(it) : pending_.erase(it);
  for (const auto& [comm_id, in] : by_comm) check_comm_hang(comm_id, in, now_ns, kernel, out);
  return out;
}

void StragglerDetector::check_comm_hang(uint32_t comm_id, const std::vector<const InFlightCall*>& calls,
                                        uint64_t now_ns, const ProcessLookup& kernel, DetectorOutput& out) {
  // Members that exited count too: they will never enter.
  std::set<int32_t> members;
  for (const auto& [key, lane] : lanes_)
    if (key.comm_id == comm_id && lane->info.kind == CallKind::synchronizing)
      for (const auto& [pid, id] : identities_)
        if (eligible(*lane, pid, false)) members.insert(pid);
  if (members.size() < 2) return;
  const auto& progress = progress_[comm_id];
  std::vector<MemberPosition> positions;
  for (int32_t pid : members) {
    MemberPosition m;
    m.pid = pid;
    m.exited = !alive_.contains(pid);
    if (auto p = progress.find(pid); p != progress.end()) {
      m.completed =
          static_cast<uint64_t>(std::max<int64_t>(0, static_cast<int64_t>(p->second.completed) + p->second.offset));
      m.outside_since_ns = p->second.last_exit_ns;
    }
    std::vector<const InFlightCall*> mine;
    for (const InFlightCall* c : calls)
      if (static_cast<int32_t>(c->tgid) == pid) mine.push_back(c);
    std::sort(mine.begin(), mine.end(), [](auto* a, auto* b) { return a->entry_ns < b->entry_ns; });
    for (size_t i = 0; i < mine.size(); ++i)
      m.inside.push_back(
          {mine[i]->probe_id, probes_.at(mine[i]->probe_id).name, m.completed + 1 + i, mine[i]->entry_ns});
    positions.push_back(std::move(m));
  }
  WavefrontJudgement j = judge_wavefront(positions, {}, now_ns, config_.hang_ns);
  if (j.waited_ns < std::min(kPendingNs, config_.hang_ns)) {
    pending_.erase(comm_id);
    hangs_.erase(comm_id);
    return;
  }
  // The kernel's view, CPU counted since the wait began.
  std::map<int32_t, ProcessView> views;
  if (kernel)
    for (int32_t pid : members)
      if (auto v = kernel(pid, j.since_ns)) views[pid] = std::move(*v);
  j = judge_wavefront(positions, views, now_ns, config_.hang_ns);

  auto rank = [&](int32_t pid) { return identity(pid).rank; };
  std::vector<int> waiting = ranks_of(j.with(WavefrontRole::waiting), rank);
  std::vector<int> blocked = ranks_of(j.with(WavefrontRole::blocked_behind), rank);
  auto lane_at = [&](uint32_t probe_id) -> const Lane& { return *lanes_.at(LaneKey{probe_id, comm_id}); };
  uint32_t wave_probe = 0;
  for (const MemberPosition& m : positions)
    for (const auto& in : m.inside)
      if (in.position == j.position && in.probe == j.probe) wave_probe = in.probe_id;
  const Lane& lane = lane_at(wave_probe);
  const bool by_sequence = lane.aligner && lane.aligner->align_by() == AlignBy::sequence;

  if (!j.stuck) {
    PendingHang p;
    p.probe = j.probe;
    p.comm = lane.comm;
    p.position = j.position;
    p.waiting_ranks = waiting;
    p.behind_ranks = ranks_of(j.culprits, rank);
    p.since_ns = j.since_ns;
    p.waited_ns = j.waited_ns;
    p.summary = fmt::format("rank(s) {} have waited inside {} (position {}) for {}, under --hang-s{}",
                            rank_list(waiting), j.probe, j.position, format_ns(static_cast<double>(j.waited_ns)),
                            p.behind_ranks.empty() ? "" : "; not there yet: rank(s) " + rank_list(p.behind_ranks));
    pending_[comm_id] = std::move(p);
    return;
  }
  pending_.erase(comm_id);

  // The findings, rebuilt at every check so the verdict keeps them current.
  std::map<int32_t, Finding> now;
  std::string waiting_phrase = fmt::format("rank(s) {} have waited inside {} (position {}) for {}", rank_list(waiting),
                                           j.probe, j.position, format_ns(static_cast<double>(j.waited_ns)));
  std::string blocked_phrase = blocked.empty()
                                   ? ""
                                   : fmt::format(
                                         "; rank(s) {} wait inside an earlier collective the others completed, blocked "
                                         "behind it (its last message never came)",
                                         rank_list(blocked));
  for (int32_t pid : j.culprits) {
    const MemberPosition& m = *std::find_if(positions.begin(), positions.end(), [&](auto& p) { return p.pid == pid; });
    Finding f = lane_finding(lane, pid, "hang", "in-flight");
    if (auto v = views.find(pid); v != views.end()) f.process = v->second;
    std::string what;
    switch (j.roles.at(pid)) {
      case WavefrontRole::exited:
        what = fmt::format("exited and will never enter {}", j.probe);
        break;
      case WavefrontRole::does_not_run:
        what = fmt::format(
            "has been {} while {}", describe_process(*f.process),
            m.inside.empty() ? fmt::format("outside any collective, at position {}", m.completed)
                             : fmt::format("inside {} (position {})", m.inside.back().probe, m.inside.back().position));
        break;
      default:
        what =
            fmt::format("never entered {}: it completed position {} and has been outside collectives for {}{}", j.probe,
                        m.completed, format_ns(static_cast<double>(now_ns - std::min(now_ns, m.outside_since_ns))),
                        f.process ? ", " + describe_process(*f.process) : "");
    }
    f.summary = fmt::format("{} {}{}: {}{}", rank_label(f.culprit), what, communicator_phrase(f), waiting_phrase,
                            blocked_phrase);
    now[pid] = std::move(f);
  }
  for (const auto& [pid, probe] : j.mismatched) {
    const MemberPosition& m = *std::find_if(positions.begin(), positions.end(), [&](auto& p) { return p.pid == pid; });
    uint32_t probe_id = 0;
    for (const auto& in : m.inside)
      if (in.position == j.position) probe_id = in.probe_id;
    Finding f = lane_finding(lane_at(probe_id), pid, "mismatch", "in-flight");
    for (const MemberPosition& other : positions)
      for (const auto& in : other.inside)
        if (in.position == j.position) f.calls.push_back({rank(other.pid), in.probe, in.position});
    std::sort(f.calls.begin(), f.calls.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
    std::vector<int> majority;
    for (const MemberCall& c : f.calls)
      if (c.probe == j.probe) majority.push_back(c.rank);
    f.summary = fmt::format(
        "{} called {} where rank(s) {} called {}, at position {}{}: the ranks disagree on the collective, and "
        "each side waits for the other; for {}",
        rank_label(f.culprit), probe, rank_list(majority), j.probe, j.position, communicator_phrase(f),
        format_ns(static_cast<double>(j.waited_ns)));
    now[pid] = std::move(f);
  }
  auto& hang = hangs_[comm_id];
  if (!hang) hang = std::make_unique<CommHang>();
  if (now.empty()) {
    if (hang->named.empty() && !hang->noted) {
      hang->noted = true;
      out.notes.push_back(
          fmt::format("{}; every member is inside it or blocked behind it and runs: the "
                      "collectives and the kernel name nobody (the network, or the collective "
                      "itself)",
                      waiting_phrase));
    }
    return;
  }
  for (const auto& [pid, f] : now) hang->named.insert(pid);
  for (auto& [pid, f] : now) {
    f.detected_ns = now_ns;
    f.waited_ns = j.waited_ns;
    f.waiting_ranks = waiting;
    f.blocked_behind = blocked;
    f.position = j.position;
    f.position_by_sequence = by_sequence;
    if (auto at = hang->findings.find(pid); at != hang->findings.end()) {
      f.detected_ns = findings_[at->second].detected_ns;  // reported once, kept current
      findings_[at->second] = std::move(f);
      continue;
    }
    hang->findings[pid] = findings_.size();
    emitted_.push_back(findings_.size());
    findings_.push_back(f);
    out.findings.push_back(std::move(f));
  }
}

}  // namespace slowburn
