#include "health/health_run.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include "health/health_checks.h"
#include "procfs/ranks.h"
#include "sysfs/topology.h"

namespace slowburn {

Result<std::vector<CheckRow>> run_health_checklist(const HealthRunOptions& options) {
  const HealthSources& sources = options.sources;
  HealthContext context;
  context.link_rules = options.link_rules;
  if (options.nic_speed_gbps) context.thresholds.nic_speed_gbps = *options.nic_speed_gbps;

  // The first reading only needs the counters; the log and states come from the second.
  HealthSources first = sources;
  first.kernel_log = options.interval_s <= 0;
  auto before = collect_health(first);
  if (!before) return before.error();
  Topology topology = Topology::read(sources.sysfs_root, sources.proc_root);
  context.ranks = discover_ranks(sources.proc_root, getpid());
  topology.assign_ranks(context.ranks);
  context.topology = &topology;

  if (options.interval_s <= 0) return evaluate_health(*before, *before, context);
  std::this_thread::sleep_for(std::chrono::duration<double>(options.interval_s));
  auto after = collect_health(sources);
  if (!after) return after.error();
  return evaluate_health(*before, *after, context);
}

}  // namespace slowburn
