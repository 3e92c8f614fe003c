// Hangs: ranks inside a synchronizing collective for hang_ns while other
// members of its communicator never entered it.
#include <fmt/format.h>

#include <algorithm>

#include "core/format.h"
#include "core/strings.h"
#include "detect/straggler.h"
#include "detect/straggler_internal.h"
#include "detect/verdict.h"

namespace slowburn {

DetectorOutput StragglerDetector::check_in_flight(uint64_t now_ns, const std::vector<InFlightCall>& calls) {
  DetectorOutput out;
  // A hang seen before any call returned (attached during it) has no lane yet.
  for (const InFlightCall& call : calls) {
    int32_t pid = static_cast<int32_t>(call.tgid);
    if (probes_.contains(call.probe_id) && identities_.contains(pid))
      lane_for(call.probe_id, CallComm{call.communicator, std::nullopt, 0, false});
  }
  for (auto& [key, lane] : lanes_)
    if (lane->info.kind == CallKind::synchronizing) check_lane_hang(key, *lane, now_ns, calls, out);
  return out;
}

void StragglerDetector::check_lane_hang(const LaneKey& key, Lane& lane, uint64_t now_ns,
                                        const std::vector<InFlightCall>& calls, DetectorOutput& out) {
  // Members that exited count too: they will never enter.
  std::set<int32_t> members;
  for (const auto& [pid, id] : identities_)
    if (eligible(lane, pid, false)) members.insert(pid);
  if (members.size() < 2) return;
  std::map<int32_t, uint64_t> waiting_since;  // rank pid -> earliest entry still inside
  for (const InFlightCall& call : calls) {
    int32_t pid = static_cast<int32_t>(call.tgid);
    // A call entered after now_ns was read is not waiting yet (and would underflow).
    if (call.probe_id != key.probe_id || (call.communicator ? call.communicator->id : 0) != key.comm_id ||
        call.entry_ns > now_ns || !alive_.contains(pid))
      continue;
    auto [it, inserted] = waiting_since.try_emplace(pid, call.entry_ns);
    if (!inserted) it->second = std::min(it->second, call.entry_ns);
  }
  // Among the members: who has waited inside it for hang_ns, who is not
  // inside at all (alive elsewhere, or exited).
  std::set<int32_t> stuck, absent;
  uint64_t longest = 0;
  for (int32_t pid : members) {
    auto it = waiting_since.find(pid);
    if (it == waiting_since.end()) {
      absent.insert(pid);
    } else if (now_ns - it->second >= config_.hang_ns) {
      stuck.insert(pid);
      longest = std::max(longest, now_ns - it->second);
    }
  }
  // A hang: everyone else waits inside the collective for the absent ranks.
  bool hang = !stuck.empty() && !absent.empty() && stuck.size() + absent.size() == members.size();
  if (!hang) {
    reported_hangs_.erase(key);  // resolved: a later hang is reported again
    return;
  }
  if (reported_hangs_[key] == absent) return;
  reported_hangs_[key] = absent;
  std::vector<std::string> waiting;
  std::vector<int> waiting_ranks;
  for (int32_t pid : stuck) {
    waiting_ranks.push_back(identity(pid).rank);
    waiting.push_back(std::to_string(identity(pid).rank));
  }
  for (int32_t pid : absent) {
    Finding f = lane_finding(lane, pid, "hang", "in-flight");
    f.detected_ns = now_ns;
    f.waited_ns = longest;
    f.waiting_ranks = waiting_ranks;
    f.summary = fmt::format("{} {} {}{}: rank(s) {} have waited inside it for {}", rank_label(f.culprit),
                            alive_.contains(pid) ? "never entered" : "exited and will never enter", f.probe,
                            communicator_phrase(f), join(waiting), format_ns(static_cast<double>(longest)));
    findings_.push_back(f);
    out.findings.push_back(std::move(f));
  }
}

}  // namespace slowburn
