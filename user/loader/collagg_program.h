// The loaded collective-aggregation BPF object (bpf/collagg.bpf.c): the probe
// mode's in-kernel statistics. Each attachment (one per process and probe)
// is a link set of its own, named by an id, so a single probe of a single
// process can be detached (the overhead budget) or retired (the process
// exited); the program closes whatever is left before it goes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "events/agg_counts.h"
#include "events/call_event.h"
#include "loader/skeleton.h"
#include "loader/uprobe_links.h"
#include "slowburn/callpair.h"

struct collagg_bpf;

namespace slowburn {

// Cumulative per (process, probe, communicator), summed over CPUs.
struct AggStats : AggCounts {
  uint32_t tgid = 0;
  uint32_t probe_id = 0;
  uint32_t comm_slot = 0;                               // 0: no communicator told apart
  std::array<uint64_t, SB_HIST_SLOTS> wait_us_slots{};  // log2 buckets of the wait in microseconds
};

struct CollaggCounters {
  uint64_t orphan_returns = 0;
  uint64_t state_failures = 0;
  uint64_t stats_full = 0;
  uint64_t unplaced = 0;    // a return older than the last two instances of its collective
  uint64_t open_races = 0;  // an arrival that joined while another opened its instance (may be lost)
};

class CollaggProgram {
 public:
  // sequential_lead_share: the sequential test's lead floor, as a share of
  // the step (DetectorConfig::sequential_lead_share), counted in seq_events.
  static Result<std::unique_ptr<CollaggProgram>> load(std::optional<AttachMode> mode = std::nullopt,
                                                      double sequential_lead_share = 0.10);
  ~CollaggProgram();
  CollaggProgram(const CollaggProgram&) = delete;
  CollaggProgram& operator=(const CollaggProgram&) = delete;

  // Entry and return probes at `sites` of `path` in process `pid`. The
  // process counts only once it is a target.
  Result<LinkSet::Id> attach(const std::string& path, int32_t pid, std::span<const UprobeSite> sites);
  // Detaches now (the RCU wait here), or off the caller's thread.
  void detach(LinkSet::Id links) { skel_.links().close(links); }
  void retire(LinkSet::Id links) { skel_.links().retire(links); }
  Result<void> add_target(int32_t pid, uint32_t job_slot);
  // The process is gone: its target entry and statistics leave the maps.
  void forget_process(int32_t pid);
  // The job is gone: its instance records leave the map.
  void forget_job(uint32_t job_slot);
  // The probe was detached and comes back: instances it left half-open
  // would mix old arrivals with new ones.
  void forget_probe_instances(uint32_t probe_id);

  std::vector<AggStats> read() const;
  // One process's statistics (values read for its keys only: the map is
  // per CPU, large on big machines).
  std::vector<AggStats> read_process(int32_t pid) const;

  // Communicator handles the kernel saw without a slot since the last call
  // (each once): name them with set_comm_slot.
  struct NewComm {
    int32_t pid = 0;
    uint64_t handle = 0;
    uint32_t probe_id = 0;  // the probe it was first seen on (its library)
  };
  std::vector<NewComm> take_new_comms();
  Result<void> set_comm_slot(int32_t pid, uint64_t handle, uint32_t slot);
  // The set of traced probes changed (a probe throttled or restored): a gap
  // from a return before now would span calls that were or were not traced.
  void restart_gaps();
  // The calls entered and not returned (comm: the communicator's slot):
  // what a hang looks like.
  std::vector<InFlightCall> in_flight() const;
  CollaggCounters counters() const;
  size_t map_entries() const;  // targets + statistics + instances: what forget_* must bring back down

 private:
  CollaggProgram(Skeleton<collagg_bpf> skel, AttachMode mode);
  Skeleton<collagg_bpf> skel_;
  AttachMode mode_;
};

}  // namespace slowburn
