#include "detect/inside.h"

#include <algorithm>

#include "stats/robust.h"

namespace slowburn {

void InsideSums::add(uint64_t duration, uint64_t oncpu, std::optional<uint64_t> runq) {
  ++calls;
  duration_ns += duration;
  // The kernel's on-CPU sum lags by up to a tick at each end: never more than the call.
  oncpu_ns += std::min(oncpu, duration);
  if (runq) {
    has_runq = true;
    runq_ns += std::min(*runq, duration);
  }
}

namespace {

double share(uint64_t part, uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0;
}

// Waiting per unit of running; a rank that never ran waits "infinitely".
double odds(const InsideSums& s) {
  return s.oncpu_ns ? static_cast<double>(s.runq_ns) / static_cast<double>(s.oncpu_ns) : 1e9;
}

}  // namespace

std::vector<InsideJudgement> judge_inside(const std::map<int32_t, InsideSums>& ranks, uint64_t after_last_arrival_ns,
                                          uint64_t elapsed_ns, const InsideThresholds& t) {
  std::vector<InsideJudgement> out;
  for (const auto& [pid, mine] : ranks) {
    if (mine.calls == 0 || mine.duration_ns == 0) continue;
    InsideJudgement j;
    j.pid = pid;
    j.oncpu_share = share(mine.oncpu_ns, mine.duration_ns);
    if (mine.has_runq) j.runq_share = share(mine.runq_ns, mine.duration_ns);
    std::vector<double> peer_oncpu, peer_runq, peer_odds, peer_runq_ns;
    for (const auto& [other, theirs] : ranks) {
      if (other == pid || theirs.calls < t.min_calls || theirs.duration_ns == 0) continue;
      peer_oncpu.push_back(share(theirs.oncpu_ns, theirs.duration_ns));
      if (!theirs.has_runq) continue;
      peer_runq.push_back(share(theirs.runq_ns, theirs.duration_ns));
      peer_odds.push_back(odds(theirs));
      peer_runq_ns.push_back(static_cast<double>(theirs.runq_ns));
    }
    j.peers_oncpu_share = median(peer_oncpu);
    j.peers_runq_share = median(peer_runq);
    if (j.runq_share && j.peers_runq_share) {
      double excess = static_cast<double>(mine.runq_ns) - *median(peer_runq_ns);
      j.cost_ns = excess > 0 ? std::min(static_cast<uint64_t>(excess), after_last_arrival_ns) : 0;
      j.cost_share = share(j.cost_ns, elapsed_ns);
      j.apart = mine.calls >= t.min_calls && *j.runq_share >= t.min_runq_share &&
                *j.runq_share - *j.peers_runq_share >= t.runq_excess_share &&
                odds(mine) >= t.versus_peers * *median(peer_odds) && j.cost_share >= t.min_cost_share;
    }
    out.push_back(j);
  }
  return out;
}

void outweigh_by_late_arrivals(std::vector<InsideJudgement>& judged, const std::map<int32_t, LateBlame>& late) {
  for (InsideJudgement& j : judged)
    for (const auto& [pid, blame] : late) {
      double weight = j.transport.empty() ? blame.blame_ns : blame.blame_ns - blame.leaving_ns;
      if (pid != j.pid && weight >= static_cast<double>(j.cost_ns)) j.apart = false;
    }
}

std::vector<InsideJudgement> judge_transport(const std::map<int32_t, std::string>& evidence, size_t members,
                                             std::optional<double> ratio, double excess_ns, double stalled_ns,
                                             uint64_t elapsed_ns, const InsideThresholds& t) {
  if (evidence.empty() || 2 * evidence.size() > members || !ratio || excess_ns <= 0) return {};
  bool slower = *ratio >= t.transport_slower;
  bool stalled = elapsed_ns > 0 && stalled_ns / static_cast<double>(elapsed_ns) >= t.transport_stalled_share;
  if (!slower && !stalled) return {};
  // Each named rank's part of the wait: two lossy ranks share it.
  uint64_t cost = static_cast<uint64_t>(excess_ns / static_cast<double>(evidence.size()));
  if (share(cost, elapsed_ns) < t.min_cost_share) return {};
  std::vector<InsideJudgement> out;
  for (const auto& [pid, what] : evidence) {
    InsideJudgement j;
    j.pid = pid;
    j.cpu_read = false;
    j.cost_ns = cost;
    j.cost_share = share(cost, elapsed_ns);
    j.apart = true;
    j.transport = what;
    out.push_back(std::move(j));
  }
  return out;
}

std::optional<double> InsideBaseline::baseline_ns() const {
  if (medians_.size() < kMinWindows) return std::nullopt;
  std::vector<double> sorted(medians_.begin(), medians_.end());
  return quantile(sorted, 0.2);
}

std::optional<double> InsideBaseline::observe(double median_ns) {
  std::optional<double> ratio;
  if (auto base = baseline_ns(); base && *base > 0) ratio = median_ns / *base;
  medians_.push_back(median_ns);
  if (medians_.size() > kKept) medians_.pop_front();
  return ratio;
}

}  // namespace slowburn
