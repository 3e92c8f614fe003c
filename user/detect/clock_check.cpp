#include "detect/clock_check.h"

#include <fmt/format.h>

#include <algorithm>

namespace slowburn {

void ClockCheckBuilder::add(const CollectiveInstance& instance) {
  if (instance.calls.size() < 2) return;
  // Each node's release: the earliest exit of its ranks (on its own clock,
  // shifted by a constant: differences within a node need no offset). A
  // rank's wait is counted to its node's release, not to its own exit, so a
  // rank the algorithm lets out first is not taken for the last to arrive.
  std::map<std::string, uint64_t> node_release;
  auto host_of = [&](int32_t pid) -> const std::string& {
    static const std::string kUnknown;
    auto it = identities_.find(pid);
    return it == identities_.end() ? kUnknown : it->second.host;
  };
  for (const RankCall& c : instance.calls) {
    auto [it, fresh] = node_release.try_emplace(host_of(c.pid), c.exit_ns);
    if (!fresh) it->second = std::min(it->second, c.exit_ns);
  }
  if (node_release.size() < 2) return;  // one node, one clock: nothing to check

  const RankCall* least = nullptr;   // waited least
  const RankCall* second = nullptr;  // the runner-up
  const RankCall* last = nullptr;    // arrived last on the merged clocks
  const RankCall* before_last = nullptr;
  auto wait = [&](const RankCall* c) {
    uint64_t release = node_release.at(host_of(c->pid));
    return release - std::min(release, c->entry_ns);
  };
  for (const RankCall& c : instance.calls) {
    if (!least || wait(&c) < wait(least)) {
      second = least;
      least = &c;
    } else if (!second || wait(&c) < wait(second)) {
      second = &c;
    }
    if (!last || c.entry_ns > last->entry_ns) {
      before_last = last;
      last = &c;
    } else if (!before_last || c.entry_ns > before_last->entry_ns) {
      before_last = &c;
    }
  }
  ++instances_;
  for (const RankCall& c : instance.calls) {
    ClockFreeRank& r = ranks_[c.pid];
    r.identity.pid = c.pid;
    ++r.instances;
  }
  auto by_wait = static_cast<double>(wait(second) - wait(least));
  ClockFreeRank& culprit = ranks_[least->pid];
  ++culprit.least_waits;
  culprit.blame_by_wait_ns += by_wait;
  ranks_[last->pid].blame_by_clock_ns += static_cast<double>(last->entry_ns - before_last->entry_ns);
  blame_ns_ += by_wait;
  if (least->pid == last->pid) {
    ++agreed_;
    agreed_blame_ns_ += by_wait;
  }
}

ClockCheck ClockCheckBuilder::finish(double traced_ns) const {
  ClockCheck out;
  out.instances = instances_;
  out.agreed = agreed_;
  out.agreed_blame_share = blame_ns_ > 0 ? agreed_blame_ns_ / blame_ns_ : 1.0;
  out.traced_ns = traced_ns;
  for (const auto& [pid, r] : ranks_) {
    ClockFreeRank copy = r;
    if (auto it = identities_.find(pid); it != identities_.end()) copy.identity = it->second;
    out.ranks.push_back(std::move(copy));
  }
  std::sort(out.ranks.begin(), out.ranks.end(),
            [](const ClockFreeRank& a, const ClockFreeRank& b) { return a.blame_by_wait_ns > b.blame_by_wait_ns; });
  if (!out.instances) {
    out.summary = "no collective instance spanned two nodes: nothing to check the merged clocks against";
    return out;
  }
  auto share = [&](double ns) { return traced_ns > 0 ? ns / traced_ns : 0.0; };
  if (!out.ranks.empty() && share(out.ranks.front().blame_by_wait_ns) >= min_blame_share_) {
    out.culprit = out.ranks.front().identity;
    out.culprit_blame_share = share(out.ranks.front().blame_by_wait_ns);
  }

  // They disagree when, over the same instances, one measure holds a rank
  // to blame (>= the floor) and the other hardly at all (< half of it):
  // the waits charge a rank the merged clocks do not, or the reverse. (The
  // verdict's own findings are judged per window and lane with more rules:
  // not what this compares.)
  std::string why;
  for (const ClockFreeRank& r : out.ranks) {
    double by_wait = share(r.blame_by_wait_ns), by_clock = share(r.blame_by_clock_ns);
    if (by_wait >= min_blame_share_ && by_clock < min_blame_share_ / 2)
      why += fmt::format("{}the waits charge {} with {:.0f}% of the time, the merged clocks with {:.1f}%",
                         why.empty() ? "" : "; ", rank_node_label(r.identity), 100 * by_wait, 100 * by_clock);
    else if (by_clock >= min_blame_share_ && by_wait < min_blame_share_ / 2)
      why += fmt::format("{}the merged clocks charge {} with {:.0f}% of the time, the waits with {:.1f}%",
                         why.empty() ? "" : "; ", rank_node_label(r.identity), 100 * by_clock, 100 * by_wait);
  }
  out.disagrees = !why.empty();

  std::string agreement = fmt::format(
      "the rank that waited least arrived last on the merged clocks in {} of {} cross-node instances "
      "({:.0f}% of the clock-free blame)",
      out.agreed, out.instances, 100 * out.agreed_blame_share);
  if (out.disagrees)
    out.summary = fmt::format("clocks and waits disagree: {}; {} (the clock offsets may be wrong: see the node table)",
                              why, agreement);
  else if (out.culprit)
    out.summary = fmt::format("clock-free blame agrees: {} waited least ({:.0f}% of the time); {}",
                              rank_node_label(*out.culprit), 100 * out.culprit_blame_share, agreement);
  else
    out.summary = fmt::format("clock-free blame agrees: no rank carries {:.0f}% of the time; {}",
                              100 * min_blame_share_, agreement);
  return out;
}

}  // namespace slowburn
