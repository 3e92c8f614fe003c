#include "service/cause_memory.h"

#include <algorithm>

#include "hw/cause_join.h"

namespace slowburn {

void CauseMemory::add(DeviceEvent event) {
  events_.push_back(std::move(event));
  while (events_.size() > max_events_) events_.pop_front();
}

void CauseMemory::explain(Finding& finding, uint64_t now_ns, const Topology* topology) {
  while (!events_.empty() && now_ns - std::min(now_ns, events_.front().ts_ns) > keep_ns_) events_.pop_front();
  attach_likely_causes(finding, {events_.begin(), events_.end()}, concerns_through(topology));
}

}  // namespace slowburn
