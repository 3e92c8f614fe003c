// Whether the node a session traced shows silent-data-corruption risk
// (GPU ECC and row-remapping Xids, EDAC counts rising, machine checks):
// `slowburn health`'s SDC rows, read once when the session starts and once
// when it ends, so a straggler or hang on such a node says so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rank_identity.h"
#include "health/health_snapshot.h"
#include "sysfs/topology.h"

namespace slowburn {

class NodeSdcWatch {
 public:
  // The first reading: counters only (the kernel log is read at the end).
  static Result<NodeSdcWatch> start(const HealthSources& sources);

  // The second reading, evaluated against the first: one line ("ECC/EDAC/MCE
  // activity: memory.edac_ce mc0: ...") when an SDC row warns or fails,
  // nullopt when none does.
  Result<std::optional<std::string>> finish(const Topology* topology, const std::vector<RankIdentity>& ranks) const;

 private:
  explicit NodeSdcWatch(HealthSnapshot before) : before_(std::move(before)) {}
  HealthSnapshot before_;
};

}  // namespace slowburn
