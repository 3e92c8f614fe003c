#include "service/rank_tracker.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "loader/attach_probes.h"
#include "procfs/ranks.h"

namespace slowburn {

namespace {
// A process that has not mapped its library yet is tried again: quickly at
// first (it is still starting), then rarely (a library dlopen'ed later).
constexpr uint64_t kFirstRetryNs = 1'000'000'000;
constexpr uint64_t kLateRetryNs = 15'000'000'000;
constexpr int kQuickRetries = 5;
constexpr size_t kMaxCachedLibraries = 32;
}  // namespace

RankTracker::RankTracker(CollaggProgram& program, std::vector<const ProbeSpec*> probes, std::filesystem::path proc_root,
                         std::vector<int32_t> only_pids)
    : program_(program),
      probes_(std::move(probes)),
      proc_root_(std::move(proc_root)),
      only_pids_(std::move(only_pids)) {}

RankTracker::~RankTracker() = default;

std::vector<RankIdentity> RankTracker::identities() const {
  std::vector<RankIdentity> ids;
  for (const auto& [pid, rank] : ranks_) ids.push_back(rank.identity);
  return ids;
}

ProbeStatus RankTracker::status_of(const TrackedRank& rank, const TrackedProbe& probe) const {
  return ProbeStatus{probe.spec->name,    rank.identity,     rank.identity.pid, probe.state,
                     probe.where.library, probe.where.sites, probe.detail};
}

void RankTracker::attach_probe(TrackedRank& rank, TrackedProbe& probe, std::vector<ProbeStatus>& statuses) {
  // Its own link set: throttling one probe rewrites only its breakpoints,
  // never its library's other probes'. The old set is closed before the
  // new one attaches (the RCU wait, here): both at once would run the probe
  // twice, and a rank's second entry would pass for the second-to-last
  // arrival. Only throttling and resolution come here; exited ranks' links
  // are retired.
  ProbeState before = probe.state;
  if (auto old = rank.links.find(probe.spec->name); old != rank.links.end()) {
    program_.detach(old->second);
    rank.links.erase(old);
  }
  if (throttled_.contains(probe.spec->name)) {
    probe.state = ProbeState::unavailable;
    probe.detail = "throttled by the overhead budget";
  } else {
    std::vector<UprobeSite> sites = uprobe_sites(probe.where);
    auto links = program_.attach(probe.where.attach_path, rank.identity.pid, sites);
    probe.state = links ? ProbeState::attached : ProbeState::failed;
    probe.detail = links ? std::string() : links.error().message;
    if (links) rank.links[probe.spec->name] = *links;
  }
  if (probe.state != before || probe.state == ProbeState::failed) statuses.push_back(status_of(rank, probe));
}

void RankTracker::resolve_and_attach(TrackedRank& rank, uint64_t now_ns, TrackerChanges& changes) {
  auto maps = read_process_maps(proc_root_, rank.identity.pid);
  bool pending = false;
  for (TrackedProbe& probe : rank.probes) {
    if (probe.where.resolved) continue;
    probe.where = maps ? resolve_in_process(*probe.spec, proc_root_, rank.identity.pid, *maps, symbols_)
                       : ProbeResolution{probe.spec, false, "", "", {}, maps.error().message, nullptr};
    if (!probe.where.resolved) {
      probe.detail = probe.where.reason;
      pending = true;
      continue;
    }
    attach_probe(rank, probe, changes.statuses);
  }
  rank.resolve_attempts += 1;
  rank.next_resolve_ns = pending ? now_ns + (rank.resolve_attempts < kQuickRetries ? kFirstRetryNs : kLateRetryNs) : 0;
  if (rank.resolve_attempts == 1)  // what never resolved, reported once
    for (const TrackedProbe& probe : rank.probes)
      if (!probe.where.resolved) changes.statuses.push_back(status_of(rank, probe));
}

void RankTracker::track(const RankIdentity& identity, uint64_t now_ns, TrackerChanges& changes) {
  auto& job = jobs_[identity.job];
  if (job.second == 0) job.first = next_slot_++;
  job.second += 1;
  TrackedRank rank;
  rank.identity = identity;
  rank.start_ticks = process_start_ticks(proc_root_, identity.pid);
  rank.job_slot = job.first;
  for (const ProbeSpec* spec : probes_) rank.probes.push_back(TrackedProbe{spec, {}, ProbeState::unavailable, ""});
  // Registered before attaching: the first calls already count.
  if (auto ok = program_.add_target(identity.pid, rank.job_slot); !ok) {
    for (TrackedProbe& probe : rank.probes) {
      probe.state = ProbeState::failed;
      probe.detail = ok.error().message;
      changes.statuses.push_back(status_of(rank, probe));
    }
  } else {
    resolve_and_attach(rank, now_ns, changes);
  }
  changes.started.push_back(identity);
  ranks_.emplace(identity.pid, std::move(rank));
}

void RankTracker::untrack(int32_t pid, TrackerChanges& changes) {
  auto it = ranks_.find(pid);
  if (it == ranks_.end()) return;
  changes.final_stats[pid] = program_.read_process(pid);
  program_.forget_process(pid);
  changes.ended.push_back(it->second.identity);
  auto job = jobs_.find(it->second.identity.job);
  if (job != jobs_.end() && --job->second.second == 0) {
    program_.forget_job(job->second.first);
    changes.jobs_ended.push_back(job->first);
    jobs_.erase(job);
  }
  for (auto& [probe, links] : it->second.links) program_.retire(links);
  ranks_.erase(it);
}

TrackerChanges RankTracker::refresh(uint64_t now_ns) {
  TrackerChanges changes;
  // Parsed symbol tables are kept per library file; a fleet node sees new
  // container images for months: start over past a bound.
  if (symbols_.size() > kMaxCachedLibraries) symbols_ = SymbolCache();
  std::vector<RankIdentity> found;
  if (only_pids_.empty()) {
    found = discover_ranks(proc_root_, getpid());
  } else {
    for (int32_t pid : only_pids_)
      if (auto rank = read_rank(proc_root_, pid)) found.push_back(std::move(*rank));
  }
  std::set<int32_t> alive;
  for (const RankIdentity& id : found) alive.insert(id.pid);
  std::vector<int32_t> gone;
  for (const auto& [pid, rank] : ranks_)
    if (!alive.contains(pid) || !process_alive(proc_root_, pid) ||
        process_start_ticks(proc_root_, pid) != rank.start_ticks)  // the pid was reused
      gone.push_back(pid);
  for (int32_t pid : gone) untrack(pid, changes);
  for (const RankIdentity& id : found)
    if (!ranks_.contains(id.pid)) track(id, now_ns, changes);
  for (auto& [pid, rank] : ranks_)
    if (rank.next_resolve_ns && now_ns >= rank.next_resolve_ns) resolve_and_attach(rank, now_ns, changes);
  return changes;
}

std::vector<ProbeStatus> RankTracker::set_throttled(const std::string& probe, bool throttled) {
  std::vector<ProbeStatus> statuses;
  if (throttled)
    throttled_.insert(probe);
  else
    throttled_.erase(probe);
  bool forgot = false;
  for (auto& [pid, rank] : ranks_)
    for (TrackedProbe& p : rank.probes) {
      if (p.spec->name != probe || !p.where.resolved) continue;
      if (!throttled && !forgot) {  // instances it left half-open would mix with new arrivals
        program_.forget_probe_instances(p.spec->id);
        forgot = true;
      }
      attach_probe(rank, p, statuses);
    }
  program_.restart_gaps();  // the set of traced calls changed
  return statuses;
}

}  // namespace slowburn
