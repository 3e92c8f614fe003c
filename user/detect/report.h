// What the straggler detector produces: per-window statistics per (probe,
// rank), and findings that name a culprit with its evidence and cost.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "detect/clock_check.h"
#include "detect/cost_onset.h"
#include "events/communicator.h"
#include "events/process_view.h"
#include "probes/catalog.h"

namespace slowburn {

struct RankWindowStats {
  RankIdentity identity;
  std::optional<int> comm_rank;  // its position in the window's communicator
  uint64_t calls = 0;            // completed calls in the window
  std::optional<double> wait_p50_ns;
  std::optional<double> wait_p99_ns;
  std::optional<double> wait_mean_ns;  // probe mode: the kernel keeps sums, not calls
  // Synchronizing collectives only (aligned across ranks):
  uint64_t instances = 0;                    // aligned instances this rank took part in
  std::optional<double> lateness_median_ns;  // entry - median entry over ranks
  std::optional<double> lateness_p90_ns;     // its tail: a rank late in bursts shows here
  std::optional<double> gap_median_ns;       // entry - previous traced exit
  double blame_ns = 0;                       // sum of (last arrival - second-to-last), when last
  double blame_share = 0;                    // blame over the window's elapsed time
  double blame_dominance = 0;                // its share of every rank's blame in the window
  double last_fraction = 0;                  // share of instances where this rank arrived last
  // The share of its blame it owes to leaving its previous collective later
  // than it usually does (descheduled inside it or on its way out), not to
  // computing longer: a CPU it did not get, not work it had to do.
  double blame_leaving_share = 0;
  std::optional<double> z_lateness;       // robust z across ranks (>= 3 ranks)
  std::optional<double> z_lateness_tail;  // robust z of its p90 lateness against its peers' calls
  std::optional<double> z_gap;
  double cusum_gap = 0;                        // upper CUSUM of z_gap over windows
  std::optional<double> sequential_statistic;  // its sequential test's highest log-likelihood ratio in the window
  bool sequential_alarm = false;               // the test was in alarm after one of the window's instances
  bool flagged = false;                        // passed every test in this window
  // Its flag cleared: late mostly from leaving its previous collective late,
  // held inside it by the data path of a rank flagged so in the window.
  bool held_by_data_path = false;
  // Inside its aligned calls (the kernel's CPU times of its thread): the
  // share on a CPU and waiting for one, its peers' medians, what the
  // collective waited for it, and whether that sets it apart.
  std::optional<double> inside_oncpu_share;
  std::optional<double> inside_runq_share;
  std::optional<double> inside_peers_oncpu_share;
  std::optional<double> inside_peers_runq_share;
  double inside_cost_ns = 0;
  double inside_cost_share = 0;
  // How long it stayed after the release (its exit - the first exit) in
  // the lane's stalled instances (a lost frame's retransmission: the inside
  // rule's stalls), summed: a receiver waiting for the resent frame.
  double stall_stay_ns = 0;
  bool inside_flagged = false;
  // Flagged by its data path (detect/inside.h judge_transport): what the
  // node said of it; empty when by its CPU or not flagged.
  std::string inside_transport;
};

struct WindowReport {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t probe_id = 0;
  std::string probe;
  CallKind kind = CallKind::function;
  CommunicatorRef comm;    // the communicator these calls ran on (null: not told apart)
  bool aligned = false;    // its calls were grouped into instances across ranks
  uint64_t instances = 0;  // aligned instances
  std::vector<RankWindowStats> ranks;
  // From the last arrival to the release (communication and reduction), the
  // median per instance of the message size that takes most of it, and that
  // against the 20th percentile of the lane's earlier window medians for the size.
  std::optional<double> after_last_arrival_ns;
  uint64_t after_last_arrival_size = 0;  // that size argument, raw
  std::optional<double> after_last_arrival_ratio;
  // The instances' time after their last arrival beyond the usual, summed,
  // for the size above (0 where a rank's CPU explains it, no usual is known
  // yet, or the inside test is off).
  double after_last_arrival_excess_ns = 0;
};

// A straggler inside the collective: what its thread did in its calls.
struct InsideEvidence {
  double oncpu_share = 0;
  double runq_share = 0;
  std::optional<double> peers_oncpu_share;
  std::optional<double> peers_runq_share;
  std::optional<double> after_last_arrival_ns;  // per instance, the lane's median
  std::optional<double> after_last_arrival_ratio;
  double cost_share = 0;  // of the window it was flagged in
  bool cpu_read = true;   // false: named by its transport, its CPU times not read in its calls
  // Named by its data path: what the node said of it (empty: by its CPU).
  std::string transport;
};

// A straggler by its cost over the session (detector "session-cost"): its
// own lateness summed over the lane's instances, against the runner-up's
// and against chance.
struct SessionCostEvidence {
  double next_cost_share = 0;         // the rank that costs the job most after it
  double expected_last_fraction = 0;  // 1 / members: last by chance alone
  double last_z = 0;                  // its lasts against that, in standard deviations
  uint64_t traced_ns = 0;
  // Judged on the session's latest stretch (traced_ns of it), not all of
  // it: a cost that began, or grew, since (a ramp, a link that degraded).
  bool latest = false;
  // Named on the latest stretch under the cost floor (down to half of it)
  // because its step grows against its peers' since a dated onset: a
  // drift, named before it costs the floor.
  bool drift = false;
  // When it began: from the start, or a moment on the session's clock
  // (detect/cost_onset.h); unset with too little history to say.
  std::optional<CostOnset> onset;
};

// Where one member stands on a communicator (a mismatch's evidence): the
// collective it is in and its position there.
struct MemberCall {
  int rank = -1;
  std::string probe;
  uint64_t position = 0;
};

struct Finding {
  std::string type;  // "straggler", "hang", "mismatch" or "failure"
  std::string
      detector;  // "persistence", "cusum", "sequential", "inside", "session-cost", "in-flight", "lifecycle", "stacks"
  // Straggler: where the job waits for it. "arrival": it comes last;
  // "inside": it comes on time, and the collective waits for its CPU.
  std::string where = "arrival";
  std::optional<InsideEvidence> inside;
  std::optional<SessionCostEvidence> session_cost;
  // Straggler: "major" when it costs the job 10%+ of the traced time,
  // "minor" below (detect/session_cost.h); "" for other types.
  std::string severity;
  RankIdentity culprit;
  std::string probe;             // the collective carrying the signal
  CommunicatorRef comm;          // on which communicator
  std::optional<int> comm_rank;  // the culprit's position in it
  uint64_t detected_ns = 0;
  // Evidence (straggler):
  double lateness_median_ns = 0;
  std::optional<double> lateness_p90_ns;  // its tail: how late it is in its bursts
  double blame_share = 0;
  double blame_dominance = 0;  // its share of all ranks' blame in the flagged window
  double last_fraction = 0;
  double blame_leaving_share = 0;  // of its blame: from leaving its previous collective late
  std::optional<double> z_lateness;
  std::optional<double> z_lateness_tail;
  std::optional<double> z_gap;
  int windows_flagged = 0;
  int windows_considered = 0;
  // Evidence (sequential): the test's log-likelihood ratio when it alarmed,
  // its threshold ln(ARL0), ARL0, and the instances of its run (since the
  // statistic last left zero) and those that were events.
  double sequential_statistic = 0;
  double sequential_threshold = 0;
  double sequential_arl0 = 0;
  double sequential_lead_share = 0;  // an event: last by a lead of at least this share of the step
  uint64_t instances_considered = 0;
  uint64_t instances_flagged = 0;
  // Evidence (hang): who waits, for how long.
  std::vector<int> waiting_ranks;
  uint64_t waited_ns = 0;
  // Evidence (hang, mismatch): the wavefront, the instance the waiting ranks
  // wait in (its position on the communicator: the collectives completed
  // there, counted across its probes); the ranks inside an earlier instance
  // the others completed, waiting for the culprit's last message; and
  // (mismatch) what each member at that position called.
  std::optional<uint64_t> position;
  bool position_by_sequence = false;  // numbered by the library (else counted from attach and aligned)
  std::vector<int> blocked_behind;
  std::vector<MemberCall> calls;
  // Evidence (hang, failure): the kernel's view of the culprit's process
  // (hang: since the wait began; failure: how it ended).
  std::optional<ProcessView> process;
  // Failure: when the process ended, and the ranks that ended after it
  // (and how long after): what it likely brought down.
  uint64_t ended_ns = 0;
  std::vector<int> followed_by;
  uint64_t followed_within_ns = 0;
  // Cost: how much sooner the collectives would have started without it.
  uint64_t cost_ns = 0;
  double cost_share = 0;  // of the traced time
  std::string summary;    // one line, culprit first
  // Link-degradation events on the culprit's devices (its GPU, its NIC, a
  // switch or root port above them), most severe first: the likely cause.
  std::vector<std::string> likely_causes;
  std::string likely_cause_type;  // the first cause's event type ("link.downtrained"), "" when none
  // The node's silent-data-corruption risk while it was traced ("ECC/EDAC/MCE
  // activity: memory.edac_ce mc0: ..."), from `slowburn health`'s SDC rows;
  // unset when they were quiet or not read. Not a cause of the lateness: a
  // reason to distrust what the culprit computed.
  std::optional<std::string> sdc_activity;
};

// A straggler that did not hold: flagged for a while, then not. What it
// cost while it lasted; the session's verdict does not name it.
struct Episode {
  Finding finding;          // as first raised
  uint64_t start_ns = 0;    // the first flagged window's start
  uint64_t end_ns = 0;      // the last flagged window's end
  int windows_flagged = 0;  // since it was raised
  int windows_evaluated = 0;
  uint64_t cost_ns = 0;  // blame charged to it from start to end
  std::string summary;
};

// A straggler every test named that the verdict does not name, and why: a
// minor cost on a lane whose members all wait for a CPU (the scheduler's,
// detect/session_cost.h). Said, never dropped: an operator who gives the
// ranks their CPUs, or judges with a higher --min-cost, sees it go.
struct Withheld {
  Finding finding;
  std::string reason;
  std::string summary;  // the finding's, then "; not named: " and the reason
};

// Ranks that wait inside a collective, not yet for --hang-s, when the
// session ended or now: who waits, since when, and who they wait for.
struct PendingHang {
  std::string probe;
  CommunicatorRef comm;
  uint64_t position = 0;
  std::vector<int> waiting_ranks;
  std::vector<int> behind_ranks;  // the members the wavefront names so far
  uint64_t since_ns = 0;
  uint64_t waited_ns = 0;
  std::string summary;
};

// The closing verdict of a session: the stragglers that held, the hangs,
// the episodes; or why there was not enough to judge.
struct SessionVerdict {
  bool judged = false;
  std::string reason;  // why not judged ("only 3 aligned instances")
  std::vector<Finding> stragglers;
  std::vector<Finding> hangs;     // type hang and mismatch
  std::vector<Finding> failures;  // ranks that failed (signal, exit status, OOM), first first
  std::vector<PendingHang> pending_hangs;
  std::vector<Episode> episodes;
  std::vector<Withheld> withheld;
  uint64_t instances = 0;
  int windows_judged = 0;
  // analyze only: the nodes left out (no clock offset), and what clock-free
  // blame says of the merged clocks.
  std::vector<std::string> nodes_left_out;
  std::optional<ClockCheck> clock_check;
};

}  // namespace slowburn
