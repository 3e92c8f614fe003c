// Which device events concern a finding's culprit, asked of the topology:
// the processes that use the event's device or anything below it, now. By
// process, not rank number: ranks of two jobs on one node share numbers, and
// an event seen before a job started has no ranks of its own. Events on no
// device the topology knows (a QP error, named by its process's rank) fall
// back to the ranks they carry.
#pragma once

#include "detect/causes.h"
#include "sysfs/topology.h"

namespace slowburn {

// topology may be null (hardware events off): then by the events' ranks.
ConcernsCulprit concerns_through(const Topology* topology);

}  // namespace slowburn
