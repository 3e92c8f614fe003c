#include "engine/cause_memory.h"

#include <algorithm>

#include "engine/cause_join.h"

namespace slowburn {

void CauseMemory::add(DeviceEvent event) {
  events_.push_back(std::move(event));
  if (events_.size() > max_events_) events_.erase(events_.begin(), events_.end() - static_cast<ptrdiff_t>(max_events_));
}

void CauseMemory::explain(Finding& finding, uint64_t now_ns, const Topology* topology) {
  auto recent = std::find_if(events_.begin(), events_.end(),
                             [&](const DeviceEvent& e) { return now_ns - std::min(now_ns, e.ts_ns) <= keep_ns_; });
  events_.erase(events_.begin(), recent);
  attach_likely_causes(finding, events_, concerns_through(topology));
}

}  // namespace slowburn
