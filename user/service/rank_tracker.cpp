#include "service/rank_tracker.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "procfs/ranks.h"

namespace slowburn {

namespace {
// A process that has not mapped its library yet is tried again: quickly at
// first (it is still starting), then rarely (a library dlopen'ed later).
constexpr uint64_t kFirstRetryNs = 1'000'000'000;
constexpr uint64_t kLateRetryNs = 15'000'000'000;
constexpr int kQuickRetries = 5;
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

size_t RankTracker::attached_links() const {
  size_t n = 0;
  for (const auto& [pid, rank] : ranks_)
    for (const TrackedProbe& p : rank.probes) n += p.links ? p.links->size() : 0;
  return n;
}

ProbeStatus RankTracker::status_of(const TrackedRank& rank, const TrackedProbe& probe) const {
  return ProbeStatus{probe.spec->name,    rank.identity,     rank.identity.pid, probe.state,
                     probe.where.library, probe.where.sites, probe.detail};
}

bool RankTracker::attach_one(TrackedRank& rank, TrackedProbe& probe) {
  std::vector<UprobeSite> sites;
  uint64_t cookie = make_collagg_cookie(probe.spec->id, probe.spec->kind == CallKind::synchronizing);
  for (const AttachSite& site : probe.where.sites) sites.push_back({site.file_offset, cookie});
  auto links = program_.attach(probe.where.attach_path, rank.identity.pid, sites);
  if (!links) {
    probe.state = ProbeState::failed;
    probe.detail = links.error().message;
    return false;
  }
  probe.links = std::move(*links);
  probe.state = ProbeState::attached;
  probe.detail.clear();
  return true;
}

void RankTracker::resolve_and_attach(TrackedRank& rank, uint64_t now_ns, TrackerChanges& changes) {
  auto maps = read_process_maps(proc_root_, rank.identity.pid);
  bool pending = false;
  for (TrackedProbe& probe : rank.probes) {
    if (probe.state == ProbeState::attached || probe.state == ProbeState::failed) continue;
    probe.where = maps ? resolve_in_process(*probe.spec, proc_root_, rank.identity.pid, *maps, symbols_)
                       : ProbeResolution{probe.spec, false, "", "", {}, maps.error().message};
    if (!probe.where.resolved) {
      probe.detail = probe.where.reason;
      pending = true;
      continue;
    }
    if (throttled_.contains(probe.spec->name)) {
      probe.detail = "throttled by the overhead budget";
      continue;
    }
    attach_one(rank, probe);
    changes.statuses.push_back(status_of(rank, probe));
  }
  rank.resolve_attempts += 1;
  rank.next_resolve_ns = pending ? now_ns + (rank.resolve_attempts < kQuickRetries ? kFirstRetryNs : kLateRetryNs) : 0;
  if (rank.resolve_attempts == 1)  // what never resolved, reported once
    for (const TrackedProbe& probe : rank.probes)
      if (probe.state == ProbeState::unavailable && !probe.where.resolved)
        changes.statuses.push_back(status_of(rank, probe));
}

void RankTracker::track(const RankIdentity& identity, uint64_t now_ns, TrackerChanges& changes) {
  auto& job = jobs_[identity.job];
  if (job.second == 0) job.first = next_slot_++;
  job.second += 1;
  TrackedRank rank;
  rank.identity = identity;
  rank.job_slot = job.first;
  for (const ProbeSpec* spec : probes_)
    rank.probes.push_back(TrackedProbe{spec, {}, nullptr, ProbeState::unavailable, ""});
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
  std::vector<AggStats> last;
  for (const AggStats& s : program_.read())
    if (s.tgid == static_cast<uint32_t>(pid)) last.push_back(s);
  changes.final_stats[pid] = std::move(last);
  program_.forget_process(pid);
  changes.ended.push_back(it->second.identity);
  auto job = jobs_.find(it->second.identity.job);
  if (job != jobs_.end() && --job->second.second == 0) {
    program_.forget_job(job->second.first);
    changes.jobs_ended.push_back(job->first);
    jobs_.erase(job);
  }
  ranks_.erase(it);  // its links detach here
}

TrackerChanges RankTracker::refresh(uint64_t now_ns) {
  TrackerChanges changes;
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
    if (!alive.contains(pid) || !process_alive(proc_root_, pid)) gone.push_back(pid);
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
  for (auto& [pid, rank] : ranks_) {
    for (TrackedProbe& p : rank.probes) {
      if (!throttled && !forgot && p.spec->name == probe) {
        program_.forget_probe_instances(p.spec->id);
        forgot = true;
      }
      if (p.spec->name != probe || !p.where.resolved) continue;
      if (throttled && p.links) {
        p.links.reset();
        p.state = ProbeState::unavailable;
        p.detail = "throttled by the overhead budget";
      } else if (!throttled && !p.links) {
        attach_one(rank, p);
      } else {
        continue;
      }
      statuses.push_back(status_of(rank, p));
    }
  }
  return statuses;
}

}  // namespace slowburn
