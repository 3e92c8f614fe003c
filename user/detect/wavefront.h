// A hang is a position, not a duration. Each member of a communicator has a
// position on it: the collectives it completed there (counted across its
// probes, in the order every member issues them), and what it does now:
// inside the next ones since T, or outside since its last exit. The
// wavefront is the furthest instance a member waits in. Around it:
//   - waiting: inside the wavefront instance;
//   - blocked behind: inside an earlier instance the others completed (its
//     last message never came: the culprit's doing, not its own);
//   - ahead: it completed the instance the others wait in (a root that left);
//   - behind: outside any collective, short of the wavefront: it never
//     entered, and stops the job;
//   - and, whatever the positions say, a member whose process does not run
//     (stopped, gone, a zombie, in uninterruptible sleep) while its peers
//     wait: what the kernel sees beats what the collectives suggest.
// Members at the wavefront in different collectives are a mismatch (a
// rank's MPI_Bcast against its peers' MPI_Allreduce): the minority named.
// Pure: positions and process views in, a judgement out.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "events/process_view.h"

namespace slowburn {

struct MemberPosition {
  int32_t pid = 0;
  uint64_t completed = 0;  // position of its last completed collective on the communicator (0: none seen)
  struct Inside {
    uint32_t probe_id = 0;
    std::string probe;
    uint64_t position = 0;
    uint64_t since_ns = 0;  // its entry
  };
  std::vector<Inside> inside;     // the collectives it is in now, oldest first (gloo can run two at once)
  uint64_t outside_since_ns = 0;  // its last exit, when not inside
  bool exited = false;
};

enum class WavefrontRole { waiting, blocked_behind, ahead, behind, does_not_run, exited };
std::string_view wavefront_role_name(WavefrontRole role);

struct WavefrontJudgement {
  bool stuck = false;      // some member has waited at the wavefront for hang_ns
  uint64_t position = 0;   // the wavefront: the instance the waiting members wait in
  std::string probe;       // the collective most of them wait in there
  uint64_t waited_ns = 0;  // the longest wait there
  uint64_t since_ns = 0;   // when that wait began
  std::map<int32_t, WavefrontRole> roles;
  std::vector<int32_t> culprits;              // behind, exited or not running: what stops the job
  std::map<int32_t, std::string> mismatched;  // at the wavefront in another collective: pid -> its probe

  std::vector<int32_t> with(WavefrontRole role) const;
};

// `kernel` holds the members' processes where they were read (absent:
// unknown, judged by position alone).
WavefrontJudgement judge_wavefront(const std::vector<MemberPosition>& members,
                                   const std::map<int32_t, ProcessView>& kernel, uint64_t now_ns, uint64_t hang_ns);

}  // namespace slowburn
