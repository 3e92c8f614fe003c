// The tests a window puts a straggler candidate through, shared by the
// per-call detector (slowburn trace) and the aggregate one (slowburn probe),
// so both modes mean the same thing by "flagged".
#pragma once

#include <cstddef>
#include <string>

#include "detect/report.h"
#include "detect/straggler.h"

namespace slowburn {

// On one synchronizing probe's window: picks the rank with the most blame and
// sets its `flagged` when every test of DetectorConfig holds (enough
// instances, effect size, arrives last often, unique worst, robust z with 3+
// ranks). `aligned_count` is how many ranks have a lateness in the window.
// Returns the candidate (flagged or not), nullptr when there is none.
RankWindowStats* flag_straggler(WindowReport& report, const DetectorConfig& config, size_t aligned_count);

// A straggler finding from a flagged window's evidence (cost and summary are
// the caller's: they depend on what it has seen so far).
Finding straggler_finding(const char* detector, const WindowReport& report, const RankWindowStats& evidence,
                          uint64_t now_ns);

// One line, culprit first: "rank 3 (pid 42) is the straggler: ...".
std::string straggler_summary(const Finding& finding);

// " on cid 3 (ranks 2,3) as its rank 1", or "" for the job-wide communicator.
std::string communicator_phrase(const Finding& finding);

}  // namespace slowburn
