// Groups the calls of one synchronizing collective into instances across
// ranks. Per-thread counters cannot do this: a tracer that attaches to a
// running job starts each rank's count at a different step. Exit times can:
// a synchronizing collective releases all its ranks together, so every
// rank's entry precedes every rank's exit. The heads of the per-rank queues
// form an instance when max(entry) <= min(exit); otherwise the head that
// exited first belongs to an instance the others did not record (attached
// mid-call, or a record lost) and is discarded, counted.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace slowburn {

struct RankCall {
  int32_t pid = 0;
  uint64_t entry_ns = 0;
  uint64_t exit_ns = 0;
  std::optional<uint64_t> gap_ns;  // entry - the thread's previous traced exit
};

struct CollectiveInstance {
  std::vector<RankCall> calls;  // one per participating rank
  uint64_t release_ns = 0;      // earliest exit: when the collective released
};

class CollectiveAligner {
 public:
  explicit CollectiveAligner(size_t max_queue = 4096) : max_queue_(max_queue) {}

  void add_participant(int32_t pid);
  void remove_participant(int32_t pid);
  bool has_participant(int32_t pid) const { return queues_.contains(pid); }
  size_t participant_count() const { return queues_.size(); }

  void add(const RankCall& call);
  // Instances complete so far, oldest first.
  std::vector<CollectiveInstance> take_ready();

  // Participants that recorded nothing while another participant's oldest
  // waiting call exited before `cutoff_ns`: the others completed collectives
  // without them, so they are not (or no longer) taking part.
  std::vector<int32_t> idle_participants(uint64_t cutoff_ns) const;

  uint64_t discarded_calls() const { return discarded_; }

 private:
  std::map<int32_t, std::deque<RankCall>> queues_;
  size_t max_queue_;
  uint64_t discarded_ = 0;
};

}  // namespace slowburn
