// The links of one program: tracepoint links, and uprobe link sets that a
// caller may close early (a probe throttled, a process gone). Owned by the
// program's Skeleton, which clears it before it destroys the programs, so
// "the links before the programs they run" holds by construction.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "loader/uprobe_links.h"

struct bpf_link;

namespace slowburn {

class LinkReaper;

class LinkSet {
 public:
  using Id = uint64_t;

  LinkSet();
  ~LinkSet();
  LinkSet(LinkSet&&) noexcept;
  LinkSet& operator=(LinkSet&&) noexcept;
  LinkSet(const LinkSet&) = delete;
  LinkSet& operator=(const LinkSet&) = delete;

  // A link closed with the set.
  void add(bpf_link* link);
  // A uprobe link set, closed with the set or by its id.
  Id add(std::unique_ptr<UprobeLinks> links);
  UprobeLinks& uprobes(Id id) { return *uprobes_.at(id); }
  const UprobeLinks& uprobes(Id id) const { return *uprobes_.at(id); }
  // Closes it now (its RCU grace period waited here).
  void close(Id id);
  // Closes it off this thread (a job's end detaches many: loader/link_reaper.h).
  void retire(Id id);
  // Everything, now.
  void clear();

 private:
  std::vector<bpf_link*> links_;
  std::map<Id, std::unique_ptr<UprobeLinks>> uprobes_;
  Id next_id_ = 1;
  std::unique_ptr<LinkReaper> reaper_;  // started by the first retire
};

}  // namespace slowburn
