// The probe mode's view of the node's jobs: rank processes come and go, and
// each has the aggregation probes attached while it lives. Discovery runs
// every interval; a new rank gets every probe its libraries resolve (probes
// that do not resolve yet, because the process is still loading or dlopens
// its library later, are tried again); an exited rank loses its links and
// its kernel statistics. A probe the overhead budget throttles is detached
// from every rank and attached again when the budget says so.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "loader/collagg_program.h"
#include "probes/catalog.h"
#include "probes/probe_status.h"
#include "probes/resolver.h"

namespace slowburn {

struct TrackedProbe {
  const ProbeSpec* spec = nullptr;
  ProbeResolution where;

  ProbeState state = ProbeState::unavailable;
  std::string detail;
};

struct TrackedRank {
  RankIdentity identity;
  uint32_t job_slot = 0;
  std::vector<TrackedProbe> probes;
  // One link set per probe (all its sites): the overhead budget detaches
  // and attaches probes one at a time, and a set shared with the library's
  // other probes would rewrite theirs too. Closing a link waits for an RCU
  // grace period: at a job's end they are retired, closed off the service's loop.
  std::map<std::string, LinkSet::Id> links;  // probe -> its links (the program owns them)
  uint64_t next_resolve_ns = 0;              // when unresolved probes are tried again
  uint64_t start_ticks = 0;                  // /proc/PID/stat starttime: tells a reused pid apart
  int resolve_attempts = 0;
};

struct TrackerChanges {
  std::vector<RankIdentity> started;
  std::vector<RankIdentity> ended;
  std::map<int32_t, std::vector<AggStats>> final_stats;  // of the ended ranks, read before they were forgotten
  std::vector<std::string> jobs_ended;
  std::vector<ProbeStatus> statuses;  // attachments made, failed or found unavailable
};

class RankTracker {
 public:
  RankTracker(CollaggProgram& program, std::vector<const ProbeSpec*> probes, std::filesystem::path proc_root,
              std::vector<int32_t> only_pids = {});
  ~RankTracker();

  // Finds new and exited ranks; attaches and retries as due.
  TrackerChanges refresh(uint64_t now_ns);
  // Detaches (throttled) or attaches again (restored) one probe in every rank.
  std::vector<ProbeStatus> set_throttled(const std::string& probe, bool throttled);

  const std::map<int32_t, TrackedRank>& ranks() const { return ranks_; }
  std::vector<RankIdentity> identities() const;
  bool throttled(const std::string& probe) const { return throttled_.contains(probe); }

 private:
  void track(const RankIdentity& identity, uint64_t now_ns, TrackerChanges& changes);
  void resolve_and_attach(TrackedRank& rank, uint64_t now_ns, TrackerChanges& changes);
  // (Re)attaches one resolved probe, or detaches it while throttled.
  // Reports it when its state changed or it failed.
  void attach_probe(TrackedRank& rank, TrackedProbe& probe, std::vector<ProbeStatus>& statuses);
  void untrack(int32_t pid, TrackerChanges& changes);
  ProbeStatus status_of(const TrackedRank& rank, const TrackedProbe& probe) const;

  CollaggProgram& program_;
  std::vector<const ProbeSpec*> probes_;
  std::filesystem::path proc_root_;
  std::vector<int32_t> only_pids_;
  SymbolCache symbols_;
  std::map<int32_t, TrackedRank> ranks_;
  std::map<std::string, std::pair<uint32_t, int>> jobs_;  // job -> (slot, ranks)
  uint32_t next_slot_ = 0;
  std::set<std::string> throttled_;
};

}  // namespace slowburn
