// A latency histogram of one rank's calls of one probe (on one
// communicator, or one NCCL IB connection), as a session ends.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/rank_identity.h"
#include "events/communicator.h"
#include "stats/log2_hist.h"

namespace slowburn {

struct HistogramReport {
  std::optional<RankIdentity> rank;
  int32_t pid = 0;
  std::string probe;
  CommunicatorRef comm;  // the communicator of these calls, when told apart
  std::optional<int> comm_rank;
  Log2Histogram hist{"usecs"};
  uint64_t total_ns = 0;
};

}  // namespace slowburn
