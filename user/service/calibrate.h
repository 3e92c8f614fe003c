// The overhead budget's units, measured at start-up on a function of this
// process: what one traced call costs on this machine (an entry and a
// return uprobe hit and the aggregation programs), with and without the
// probe pair attached, alternating so frequency changes hit both alike; and
// what a duty cycle's toggle costs: the wall time to attach the pair and
// detach it again, the detach's RCU waits included. Why wall time and not
// this thread's CPU: the traced processes pay when a probe they call often
// is toggled. On this VM a toggle of the demo job's allreduce cost the job
// 3.4 ms of its time per rank, against ~90 ms of wall time and 0.05 ms of
// the toggler's CPU; a function never called cost nothing measurable
// (bench/RESULTS.md 8e). Charged its CPU, sampling toggled and slowed the
// job 1-2% to save ~0.2% (8c). The wall time bounds the cost from above
// (~13x here), which errs on the side of not toggling: a budget must never
// cost more than it saves.
#pragma once

#include "core/error.h"
#include "loader/collagg_program.h"

namespace slowburn {

struct ProbeCosts {
  double call_ns = 0;    // one traced call: an entry and a return
  double toggle_ns = 0;  // wall time to attach a probe's link set and detach it again, in one process
};

Result<ProbeCosts> calibrate_probe_costs(CollaggProgram& program, int calls_per_round = 1000, int rounds = 4);

}  // namespace slowburn
