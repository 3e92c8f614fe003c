// Groups the calls of one collective on one communicator into instances
// across its ranks. An instance is (communicator, sequence number): every
// member issues a communicator's collectives in the same order.
//
// Two ways to find the k-th call on every rank, one per kind of evidence:
//   - by sequence number, when every member's numbers count from the
//     communicator's creation (gloo's tag, a creation slowburn saw): the
//     calls numbered k form instance k, with no clock. For a synchronizing
//     collective the clocks cross-check it: every entry must precede every
//     exit, else the instance is dropped and counted.
//   - by exit time otherwise (attached to a running job, each rank's count
//     starts at a different step): a synchronizing collective releases all
//     its ranks together, so the heads of the per-rank queues form an
//     instance when max(entry) <= min(exit); otherwise the head that exited
//     first belongs to an instance the others did not record (attached
//     mid-call, or a record lost) and is discarded, counted.
// Pure: fed calls, no clock of its own.
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
  std::optional<uint64_t> gap_ns;        // entry - the rank's previous traced exit (its compute gap)
  std::optional<uint64_t> prev_exit_ns;  // that previous exit
  uint64_t seq = 0;                      // its number on (communicator, probe)
  // Set when the instance is accounted: entry - when the rank's previous
  // collective let it go (its earliest exit, plus the rank's usual time to
  // leave it: slowburn/instance_rules.h's sb_leave_allowance). A rank slower than
  // usual to leave that collective (descheduled inside it) is late by its
  // own doing; one released late with everyone else, or always a few hops
  // behind in the collective's algorithm, is not.
  std::optional<uint64_t> since_release_ns;
  uint64_t comm_count = 0;  // the rank's completed collectives on the communicator, this one included
  // The calling thread during the call (the kernel's, where it read them):
  // on a CPU, and runnable but waiting for one.
  std::optional<uint64_t> oncpu_ns;
  std::optional<uint64_t> runq_ns;
  uint64_t size_arg = 0;  // the message size argument, raw (0: none read)
};

struct CollectiveInstance {
  std::vector<RankCall> calls;  // one per participating rank
  uint64_t release_ns = 0;      // earliest exit: when the collective released
  std::optional<uint64_t> seq;  // the sequence number, when aligned by it
  size_t missing = 0;           // participants with no call numbered seq (a record lost, or not traced)
};

enum class AlignBy { exit_time, sequence };

class CollectiveAligner {
 public:
  // `check_overlap`: by sequence, drop instances whose calls do not all
  // overlap (synchronizing collectives; NCCL's enqueues do not overlap).
  // `clock_tolerance_ns`: calls timed by different clocks (nodes merged by
  // analyze, their offsets estimated to within this) overlap when an entry
  // follows an exit by no more than it.
  static constexpr size_t kMaxQueue = 4096;  // calls waiting per participant
  explicit CollectiveAligner(AlignBy by = AlignBy::exit_time, bool check_overlap = true, size_t max_queue = kMaxQueue,
                             uint64_t clock_tolerance_ns = 0)
      : by_(by), check_overlap_(check_overlap), max_queue_(max_queue), tolerance_ns_(clock_tolerance_ns) {}

  void add_participant(int32_t pid);
  void remove_participant(int32_t pid);
  bool has_participant(int32_t pid) const { return queues_.contains(pid); }
  size_t participant_count() const { return queues_.size(); }
  AlignBy align_by() const { return by_; }

  void add(const RankCall& call);
  // Instances complete so far, oldest first.
  std::vector<CollectiveInstance> take_ready();

  // Participants that recorded nothing while another participant's oldest
  // waiting call exited before `cutoff_ns`: the others completed collectives
  // without them, so they are not (or no longer) taking part.
  std::vector<int32_t> idle_participants(uint64_t cutoff_ns) const;

  uint64_t discarded_calls() const { return discarded_; }
  // By sequence: instances whose clocks disagreed with their numbers.
  uint64_t order_mismatches() const { return order_mismatches_; }

 private:
  std::optional<CollectiveInstance> next_by_exit_time();
  std::optional<CollectiveInstance> next_by_sequence();

  AlignBy by_;
  bool check_overlap_;
  std::map<int32_t, std::deque<RankCall>> queues_;
  size_t max_queue_;
  uint64_t tolerance_ns_;
  uint64_t discarded_ = 0;
  uint64_t order_mismatches_ = 0;
};

}  // namespace slowburn
