#include "service/hang_watch.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/format.h"
#include "core/strings.h"
#include "detect/wavefront.h"

namespace slowburn {

HangWatch::HangWatch(uint64_t hang_ns, std::filesystem::path proc_root, std::map<uint32_t, const ProbeSpec*> probes)
    : hang_ns_(hang_ns), probes_(std::move(probes)), watch_(std::move(proc_root)) {}

void HangWatch::add_rank(const RankIdentity& rank) {
  ranks_[rank.pid] = rank;
  watch_.follow(rank.pid);
}

void HangWatch::remove_rank(int32_t pid) {
  ranks_.erase(pid);
  watch_.forget(pid);
}

std::vector<Finding> HangWatch::check(uint64_t now_ns, const std::vector<InFlightCall>& calls,
                                      const std::set<int32_t>& stepping, bool complete) {
  watch_.sample(now_ns);
  hangs_.clear();
  job_waiting_s_.clear();
  std::vector<Finding> fresh;
  std::map<std::string, std::vector<int32_t>> jobs;
  for (const auto& [pid, rank] : ranks_)
    if (stepping.contains(pid)) jobs[rank.job].push_back(pid);
  for (const auto& [job, pids] : jobs) {
    // Without positions: every member inside a collective is at the one
    // wavefront (position 1), every member outside it is short of it.
    std::vector<MemberPosition> members;
    for (int32_t pid : pids) {
      MemberPosition m;
      m.pid = pid;
      for (const InFlightCall& c : calls) {
        auto spec = probes_.find(c.probe_id);
        if (static_cast<int32_t>(c.tgid) != pid || spec == probes_.end() || c.entry_ns > now_ns) continue;
        if (spec->second->kind != CallKind::synchronizing && spec->second->kind != CallKind::rooted) continue;
        if (m.inside.empty() || c.entry_ns < m.inside.front().since_ns)
          m.inside = {{c.probe_id, spec->second->name, 1, c.entry_ns}};
      }
      members.push_back(std::move(m));
    }
    WavefrontJudgement j = judge_wavefront(members, {}, now_ns, hang_ns_);
    job_waiting_s_[job] = static_cast<double>(j.waited_ns) / 1e9;
    if (!j.stuck || pids.size() < 2 || !complete) {
      named_.erase(job);
      continue;
    }
    std::map<int32_t, ProcessView> views;
    for (int32_t pid : pids)
      if (auto v = watch_.view(pid, j.since_ns, now_ns)) views[pid] = *v;
    j = judge_wavefront(members, views, now_ns, hang_ns_);
    std::vector<std::string> waiting;
    std::vector<int> waiting_ranks;
    for (int32_t pid : j.with(WavefrontRole::waiting)) {
      waiting.push_back(std::to_string(ranks_.at(pid).rank));
      waiting_ranks.push_back(ranks_.at(pid).rank);
    }
    std::set<int32_t> named(j.culprits.begin(), j.culprits.end());
    bool changed = named != named_[job];
    named_[job] = named;
    for (int32_t pid : j.culprits) {
      auto v = views.find(pid);
      std::string state = v == views.end() ? "unknown" : std::string(process_state_name(v->second.state));
      hangs_.push_back({ranks_.at(pid), j.probe, state, static_cast<double>(j.waited_ns) / 1e9});
      if (!changed) continue;
      Finding f;
      f.type = "hang";
      f.detector = "in-flight";
      f.culprit = ranks_.at(pid);
      f.probe = j.probe;
      f.detected_ns = now_ns;
      f.waited_ns = j.waited_ns;
      f.waiting_ranks = waiting_ranks;
      if (v != views.end()) f.process = v->second;
      f.summary = fmt::format(
          "{} stops the job: {}; rank(s) {} on this node have waited inside {} for {}", rank_label(f.culprit),
          f.process ? describe_process(*f.process)
                    : std::string(j.roles.at(pid) == WavefrontRole::exited ? "exited" : "outside every collective"),
          join(waiting), j.probe, format_ns(static_cast<double>(j.waited_ns)));
      fresh.push_back(std::move(f));
    }
  }
  std::erase_if(named_, [&](const auto& kv) { return !jobs.contains(kv.first); });  // jobs that ended
  return fresh;
}

}  // namespace slowburn
