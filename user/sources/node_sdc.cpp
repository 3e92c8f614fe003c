#include "sources/node_sdc.h"

#include "health/check_row.h"
#include "health/health_checks.h"

namespace slowburn {

Result<NodeSdcWatch> NodeSdcWatch::start(const HealthSources& sources) {
  HealthSources first = sources;
  first.kernel_log = false;
  auto before = collect_health(first);
  if (!before) return before.error();
  return NodeSdcWatch(std::move(*before));
}

Result<std::optional<std::string>> NodeSdcWatch::finish(const Topology* topology,
                                                        const std::vector<RankIdentity>& ranks) const {
  HealthSources second = before_.sources;
  second.kernel_log = true;
  auto after = collect_health(second);
  if (!after) return after.error();
  HealthContext context;
  context.topology = topology;
  context.ranks = ranks;
  return sdc_activity(evaluate_health(before_, *after, context));
}

}  // namespace slowburn
