// Telling gloo process groups apart across processes. A gloo::Context is
// per process and carries only the group's size and the process's rank in
// it; PyTorch's tag (a per-group collective counter) gives the sequence
// number. Two contexts belong to one group only if, for every tag both have
// run, their calls overlap in time (a synchronizing collective releases no
// member before every member has entered); members of one group are
// distinct processes with distinct ranks. Pairs that break a rule are
// eliminated as calls arrive, and the grouping is known once exactly one
// partition into the fewest complete groups fits what is left. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace slowburn {

class GlooGroups {
 public:
  struct Stream {
    int32_t pid = 0;
    uint64_t context = 0;  // the gloo::Context pointer in that process
    int rank = 0;          // its rank in the group
    int size = 0;          // the group's size
  };

  // Registers a context; returns its stream number.
  size_t add_stream(const Stream& stream);
  // The process exited: its streams leave the grouping.
  void remove_pid(int32_t pid);
  // A synchronizing call on a stream. Returns true when the grouping changed.
  bool observe(size_t stream, uint64_t tag, uint64_t entry_ns, uint64_t exit_ns);

  // The streams of the stream's group (itself included) once the grouping
  // of its size is known; nullopt while more than one grouping fits.
  std::optional<std::vector<size_t>> group_of(size_t stream) const;
  const Stream& stream(size_t index) const { return streams_.at(index).info; }
  bool compatible(size_t a, size_t b) const;
  size_t stream_count() const { return streams_.size(); }
  // Changes whenever some grouping changes: callers refresh what they derived.
  uint64_t generation() const { return generation_; }

 private:
  struct StreamState {
    Stream info;
    bool alive = true;
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> calls;  // tag -> (entry, exit), recent
  };
  // Recomputes the grouping of one size class.
  void regroup(int size);

  std::vector<StreamState> streams_;
  std::set<std::pair<size_t, size_t>> incompatible_;  // (low, high)
  std::map<int, std::map<size_t, size_t>> groups_;    // size -> stream -> group number, when unique
  uint64_t generation_ = 0;
};

}  // namespace slowburn
