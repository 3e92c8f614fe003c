// Says why a finding's culprit is slow: the node events that concern it
// (an Xid on its GPU, a downtrained link above its NIC, its cgroup
// throttled), most severe first, and the node's ECC/EDAC/MCE activity. One
// explainer for a trace, the service and analyze: what differs is how long
// an event stays a cause (a session: all of it; the service: ten minutes),
// whether a topology joins events to processes, and whether findings name
// their node (analyze merges many).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "detect/causes.h"
#include "detect/report.h"
#include "events/device_event.h"

namespace slowburn {

class Topology;

// Which device events concern a finding's culprit, asked of the topology:
// the processes that use the event's device or anything below it, now. By
// process, not rank number: ranks of two jobs on one node share numbers, and
// an event seen before a job started has no ranks of its own. Events on no
// device the topology knows (a QP error, named by its process's rank) fall
// back to the ranks they carry; so does every event without a topology.
ConcernsCulprit concerns_through(const Topology* topology);

struct ExplainerOptions {
  uint64_t keep_ns = 0;   // an event older than this at explain time is history; 0: kept for the session
  size_t max_events = 0;  // 0: no bound
  // A merged job (analyze): an event explains only the culprits of its own
  // node, and findings name their node ("rank 3 (pid 4242 on node-b)").
  bool by_node = false;
};

class FindingExplainer {
 public:
  explicit FindingExplainer(ExplainerOptions options = {}) : o_(options) {}

  // An event of the node `host` (a merged job's; on one node: any culprit's).
  void add(DeviceEvent event, std::string host = {});
  // May be null (hardware sources off): then by the events' ranks.
  void set_topology(const Topology* topology) { topology_ = topology; }
  void set_sdc_activity(std::optional<std::string> activity) { sdc_activity_ = std::move(activity); }

  // Sets the finding's likely causes from the events of its culprit's node
  // still recent at now_ns, and says the node's SDC activity.
  void explain(Finding& finding, uint64_t now_ns);
  void explain(Episode& episode, uint64_t now_ns);
  void explain(SessionVerdict& verdict, uint64_t now_ns);

  // Every event still kept, oldest first.
  std::vector<DeviceEvent> events() const;

 private:
  struct Kept {
    DeviceEvent event;
    std::string host;
  };
  void forget_before(uint64_t now_ns);

  ExplainerOptions o_;
  const Topology* topology_ = nullptr;
  std::optional<std::string> sdc_activity_;
  std::vector<Kept> events_;  // oldest first; rare, so pruning the front is cheap
};

}  // namespace slowburn
