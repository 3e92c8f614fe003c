#include "detect/aligner.h"

#include <algorithm>

namespace slowburn {

void CollectiveAligner::add_participant(int32_t pid) { queues_.try_emplace(pid); }

void CollectiveAligner::remove_participant(int32_t pid) {
  auto it = queues_.find(pid);
  if (it == queues_.end()) return;
  discarded_ += it->second.size();
  queues_.erase(it);
}

void CollectiveAligner::add(const RankCall& call) {
  auto& queue = queues_[call.pid];
  if (by_ == AlignBy::sequence) {
    // Two worker threads of one process group can finish out of order.
    auto at = std::upper_bound(queue.begin(), queue.end(), call.seq,
                               [](uint64_t seq, const RankCall& c) { return seq < c.seq; });
    queue.insert(at, call);
  } else {
    queue.push_back(call);
  }
  // Bounded: a participant that others never match (not in this
  // communicator) must not grow memory without limit.
  if (queue.size() > max_queue_) {
    queue.pop_front();
    ++discarded_;
  }
}

std::optional<CollectiveInstance> CollectiveAligner::next_by_exit_time() {
  for (;;) {
    uint64_t max_entry = 0;
    uint64_t min_exit = UINT64_MAX;
    std::deque<RankCall>* first_out = nullptr;
    for (auto& [pid, queue] : queues_) {
      if (queue.empty()) return std::nullopt;  // wait for every participant
      const RankCall& head = queue.front();
      max_entry = std::max(max_entry, head.entry_ns);
      if (head.exit_ns < min_exit) {
        min_exit = head.exit_ns;
        first_out = &queue;
      }
    }
    if (max_entry > min_exit + tolerance_ns_) {
      // That call ended before another rank's call began: not one instance.
      first_out->pop_front();
      ++discarded_;
      continue;
    }
    CollectiveInstance instance;
    instance.release_ns = min_exit;
    instance.calls.reserve(queues_.size());
    for (auto& [pid, queue] : queues_) {
      instance.calls.push_back(queue.front());
      queue.pop_front();
    }
    return instance;
  }
}

std::optional<CollectiveInstance> CollectiveAligner::next_by_sequence() {
  for (;;) {
    uint64_t seq = UINT64_MAX;
    for (auto& [pid, queue] : queues_) {
      if (queue.empty()) return std::nullopt;  // wait for every participant
      seq = std::min(seq, queue.front().seq);
    }
    CollectiveInstance instance;
    instance.seq = seq;
    uint64_t max_entry = 0, min_exit = UINT64_MAX;
    for (auto& [pid, queue] : queues_) {
      if (queue.front().seq != seq) {
        ++instance.missing;  // it has moved past this number: its call was lost or not traced
        continue;
      }
      const RankCall& call = queue.front();
      max_entry = std::max(max_entry, call.entry_ns);
      min_exit = std::min(min_exit, call.exit_ns);
      instance.calls.push_back(call);
      queue.pop_front();
      // A duplicate number (a sequence restarted) is not a second member.
      while (!queue.empty() && queue.front().seq == seq) {
        queue.pop_front();
        ++discarded_;
      }
    }
    instance.release_ns = min_exit;
    if (instance.calls.size() < 2) {
      discarded_ += instance.calls.size();
      continue;
    }
    if (check_overlap_ && max_entry > min_exit + tolerance_ns_) {
      // The numbers say one instance, the clocks say not: trust neither.
      ++order_mismatches_;
      discarded_ += instance.calls.size();
      continue;
    }
    return instance;
  }
}

std::vector<CollectiveInstance> CollectiveAligner::take_ready() {
  std::vector<CollectiveInstance> ready;
  if (queues_.size() < 2) return ready;
  while (auto instance = by_ == AlignBy::sequence ? next_by_sequence() : next_by_exit_time())
    ready.push_back(std::move(*instance));
  return ready;
}

std::vector<int32_t> CollectiveAligner::idle_participants(uint64_t cutoff_ns) const {
  bool others_waiting = false;
  for (const auto& [pid, queue] : queues_)
    if (!queue.empty() && queue.front().exit_ns < cutoff_ns) others_waiting = true;
  std::vector<int32_t> idle;
  if (!others_waiting) return idle;
  for (const auto& [pid, queue] : queues_)
    if (queue.empty()) idle.push_back(pid);
  return idle;
}

}  // namespace slowburn
