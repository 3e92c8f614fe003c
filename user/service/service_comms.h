// The probe mode's communicators: the kernel leaves handles it has no slot
// for in a map; each interval they are named (comm/comm_registry.h) and
// given the communicator's number as their slot, so the kernel keeps
// per-communicator sums and instances. gloo process groups are told apart
// where their sizes and ranks leave one grouping; same-size groups that
// only timing could tell apart share a slot here (trace tells them apart).
#pragma once

#include <filesystem>
#include <map>

#include "comm/comm_registry.h"
#include "loader/collagg_program.h"

namespace slowburn {

class ServiceComms {
 public:
  explicit ServiceComms(const std::filesystem::path& proc_root);
  void add_rank(const RankIdentity& rank) { registry_.add_rank(rank); }
  void remove_rank(int32_t pid);
  // Names the handles the kernel saw since the last interval, and renames
  // those whose communicator became known better (a gloo group told apart).
  void name_new(CollaggProgram& program, uint64_t now_ns);
  // The communicator of a slot; null for slot 0 (not told apart).
  CommunicatorRef slot(uint32_t slot) const;
  std::vector<std::string> take_notes() { return registry_.take_notes(); }

 private:
  struct Named {
    CommBackend backend;
    uint32_t slot;
  };
  CommRegistry registry_;
  std::map<uint32_t, CommunicatorRef> slots_;
  std::map<std::pair<int32_t, uint64_t>, Named> named_;  // (pid, handle)
};

}  // namespace slowburn
