#include "engine/cause_join.h"

namespace slowburn {

ConcernsCulprit concerns_through(const Topology* topology) {
  return [topology](const DeviceEvent& e, const RankIdentity& culprit) {
    if (topology && !e.device.empty() && topology->find(e.device)) return topology->serves(e.device, culprit.pid);
    return event_names_rank(e, culprit);
  };
}

}  // namespace slowburn
