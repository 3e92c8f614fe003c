// What the probe mode's detectors read per window: one (process, probe,
// communicator)'s differences of the kernel's sums (events/agg_counts.h),
// with the rank and communicator the service knows them by.
#pragma once

#include <cstdint>
#include <optional>

#include "core/rank_identity.h"
#include "events/agg_counts.h"
#include "events/communicator.h"

namespace slowburn {

struct AggWindowInput : AggCounts {
  RankIdentity identity;  // job, rank, pid
  uint32_t probe_id = 0;
  CommunicatorRef comm;  // null: not told apart
  std::optional<int> comm_rank;
};

}  // namespace slowburn
