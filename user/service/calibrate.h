// The overhead budget's unit: what one traced call costs on this machine
// (an entry and a return uprobe hit and the aggregation programs), measured
// at start-up on a function of this process, with and without the probe
// pair attached, alternating so frequency changes hit both alike.
#pragma once

#include "core/error.h"
#include "loader/collagg_program.h"

namespace slowburn {

Result<double> calibrate_call_cost_ns(CollaggProgram& program, int calls_per_round = 1000, int rounds = 4);

}  // namespace slowburn
