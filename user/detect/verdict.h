// The tests a window puts a straggler candidate through, shared by the
// per-call detector (slowburn trace) and the aggregate one (slowburn probe),
// so both modes mean the same thing by "flagged".
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "detect/inside.h"
#include "detect/report.h"
#include "detect/session_cost.h"
#include "detect/straggler.h"
#include "slowburn/instance_rules.h"
#include "stats/sequential.h"

namespace slowburn {

// On one lane's window: picks the rank with the most blame and sets its
// `flagged` when every test of DetectorConfig holds (enough instances,
// effect size, arrives last often or carries most of the blame, unique
// worst, robust z with 3+ ranks). `peer_ranks` is how many ranks the
// z-scores were judged among (under 3: no z, and only a rank that is last
// most of the time can pass). Returns the candidate (flagged or not),
// nullptr when there is none.
RankWindowStats* flag_straggler(WindowReport& report, const DetectorConfig& config, size_t peer_ranks);

// The blame of each rank flag_straggler flagged in the window, and its part
// from leaving late (the inside test sets a rank's CPU wait or data path
// against it: detect/inside.h).
std::map<int32_t, LateBlame> late_blame_ns(const WindowReport& report);

// A straggler finding from a flagged window's evidence (cost and summary are
// the caller's: they depend on what it has seen so far).
Finding straggler_finding(const char* detector, const WindowReport& report, const RankWindowStats& evidence,
                          uint64_t now_ns);

// A straggler inside the collective (where "inside") from the window its
// inside test held in: its thread's CPU times against its peers'.
Finding inside_finding(const WindowReport& report, const RankWindowStats& evidence, uint64_t now_ns);

// A straggler by its cost over the session (detect/session_cost.h), on the
// lane `base` names: evidence, cost and summary.
Finding session_cost_finding(Finding base, const SessionCostJudgement& judgement, uint64_t traced_ns);

// That finding withheld as the scheduler's (schedulers_choice held on its
// lane's run-queue shares): the finding, why it is not named, and what
// would show it.
Withheld scheduler_noise_withheld(Finding finding, const RunqShares& shares);
// The same for one of a pair judged with no z, leaving_share of whose
// blame over the session came from leaving its previous collective late,
// and whose cost net of that (own_cost_share) is minor.
Withheld pair_noise_withheld(Finding finding, const RunqShares& shares, double leaving_share, double own_cost_share);
// That finding withheld because another member of its communicator was
// flagged in `rivals_flagged` windows of the session, it in `flagged`, and
// no robust z could tell them apart: who is late alternates.
Withheld alternating_withheld(Finding finding, int flagged, int rivals_flagged);
// A late rank's finding withheld where its lateness came mostly from leaving
// its previous collective late, the verdict names another member of its
// communicator inside by its data path (on any of its collectives: the
// held rank leaves the delayed all-reduce late and is late at the
// all-gather after it, guest tcp_delay.sh), and `held`
// says most of its window flags beside that rank were cleared as held (a
// stall at a window's end holds its receiver in the next window, which may
// keep the flag): held inside by that path (a lost frame's receiver), named
// before the node said why. Moves such findings from `v.stragglers` to
// `v.withheld`.
void withhold_held_by_data_path(SessionVerdict& v, const std::map<int32_t, HeldByPath>& held);

// The sequential test's part of a finding it raised: its statistic and
// threshold, its false-alarm setting and the run of instances it judged.
void set_sequential_evidence(Finding& finding, const BernoulliCusum& test, const DetectorConfig& config);

// A finding says its culprit was late mostly by leaving its previous
// collective late (a CPU it did not get) when this share of its blame came
// from there: the share above which an instance is no sequential event.
inline constexpr double kMostlyLeaving = SB_SEQ_MOSTLY_LEAVING_PCT / 100.0;

// A finding whose culprit is last in fewer of its instances than this is
// "late in bursts": on time in its typical instance, very late in a few.
inline constexpr double kLateInBurstsBelow = 0.5;

// One line, culprit first: "rank 3 (pid 42) is the straggler: ...".
std::string straggler_summary(const Finding& finding);

// " on cid 3 (ranks 2,3) as its rank 1", or "" for the job-wide communicator.
std::string communicator_phrase(const Finding& finding);

}  // namespace slowburn
