#include "service/health_watch.h"

#include <map>

#include "health/health_checks.h"
#include "sysfs/topology.h"

namespace slowburn {

HealthWatch::HealthWatch(double interval_s, const Roots& roots)
    : interval_ns_(static_cast<uint64_t>(interval_s * 1e9)), roots_(roots) {}

HealthWatch::Reading HealthWatch::poll(uint64_t now_ns, const std::vector<RankIdentity>& ranks,
                                       const Topology* topology) {
  Reading out;
  if (interval_ns_ == 0 || now_ns < next_ns_) return out;
  next_ns_ = now_ns + interval_ns_;
  HealthSources sources;
  sources.sysfs_root = roots_.sysfs_root;
  sources.proc_root = roots_.proc_root;
  auto snapshot = collect_health(sources);
  if (!snapshot) {
    if (!error_said_) out.error = "health checks: " + snapshot.error().message;
    error_said_ = true;
    return out;
  }
  HealthContext context;
  context.ranks = ranks;
  std::optional<Topology> own;
  if (!topology) {
    own = Topology::read(roots_.sysfs_root, roots_.proc_root);
    own->assign_ranks(context.ranks);
  }
  context.topology = topology ? topology : &*own;
  std::vector<CheckRow> rows = evaluate_health(last_ ? *last_ : *snapshot, *snapshot, context);
  std::map<std::pair<std::string, std::string>, CheckState> previous;
  for (const CheckRow& c : rows_) previous[{c.check, c.device}] = c.state;
  for (const CheckRow& c : rows) {
    auto was = previous.find({c.check, c.device});
    if (was == previous.end() ? c.state != CheckState::ok : was->second != c.state) out.changed.push_back(c);
  }
  last_ = std::move(*snapshot);
  rows_ = std::move(rows);
  return out;
}

}  // namespace slowburn
