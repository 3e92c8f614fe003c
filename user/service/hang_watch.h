// Probe mode's hangs. Per job on this node, from the kernel's calls in
// flight (collagg's call states) and each rank's process (engine/rank_watch.h):
// once a rank has waited inside a collective for --hang-s, the ranks of its
// job that stop it are named -- outside every collective, gone, or whose
// process does not run (stopped, uninterruptible, a zombie) -- with the
// same wavefront judgement as a trace (detect/wavefront.h). Probe mode keeps
// no per-call sequence in user space, so a member inside any collective
// counts as waiting: it is never named for being inside an earlier one
// (the peer blocked behind a culprit), and no mismatch is said.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "detect/report.h"
#include "engine/rank_watch.h"
#include "events/call_event.h"
#include "probes/catalog.h"

namespace slowburn {

// A rank named as stopping its job, for the metrics.
struct RankHang {
  RankIdentity rank;
  std::string probe;    // the collective its peers wait in
  std::string state;    // its process's state (process_state_name), "unknown" when not read
  double waited_s = 0;  // how long they have waited
};

class HangWatch {
 public:
  HangWatch(uint64_t hang_ns, std::filesystem::path proc_root, std::map<uint32_t, const ProbeSpec*> probes);

  void add_rank(const RankIdentity& rank);
  void remove_rank(int32_t pid);
  // Fresh findings (a job's named set changed); the state is kept for the
  // metrics. `stepping`: the ranks that completed a traced collective (a
  // rank still starting is not yet a member: it would be "outside").
  // `complete`: every collective probe traced now (none throttled or
  // sampled by the budget): otherwise a rank inside an untraced call would
  // look outside, and nobody is named.
  std::vector<Finding> check(uint64_t now_ns, const std::vector<InFlightCall>& calls, const std::set<int32_t>& stepping,
                             bool complete);

  const std::vector<RankHang>& hangs() const { return hangs_; }
  // Per job on this node: the longest a rank has now waited inside a collective (0: none inside).
  const std::map<std::string, double>& job_waiting_s() const { return job_waiting_s_; }

 private:
  uint64_t hang_ns_;
  std::map<uint32_t, const ProbeSpec*> probes_;
  RankWatch watch_;
  std::map<int32_t, RankIdentity> ranks_;
  std::map<std::string, std::set<int32_t>> named_;  // job -> the ranks reported
  std::vector<RankHang> hangs_;
  std::map<std::string, double> job_waiting_s_;
};

}  // namespace slowburn
