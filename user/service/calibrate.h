// The overhead budget's units, measured at start-up on a function of this
// process: what one traced call costs on this machine (an entry and a
// return uprobe hit and the aggregation programs), with and without the
// probe pair attached, alternating so frequency changes hit both alike; and
// what a duty cycle's toggle costs: the CPU this thread spends attaching
// and detaching the pair (the kernel writes the breakpoints in the caller's
// context; the RCU wait of a detach sleeps and costs no CPU). What a toggle
// costs the traced process itself (its text page replaced, a TLB flush) is
// not measured here.
#pragma once

#include "core/error.h"
#include "loader/collagg_program.h"

namespace slowburn {

struct ProbeCosts {
  double call_ns = 0;    // one traced call: an entry and a return
  double toggle_ns = 0;  // CPU to detach a probe's link set and attach it again, in one process
};

Result<ProbeCosts> calibrate_probe_costs(CollaggProgram& program, int calls_per_round = 1000, int rounds = 4);

}  // namespace slowburn
