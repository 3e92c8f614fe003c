// The device events a long-running service keeps to explain its findings:
// recent enough to explain what the detector sees now (an event ten minutes
// old is history), and joined to a finding's culprit by the processes the
// current topology maps to the event's device, not by rank numbers: an event
// seen before a job started has no ranks of its own, and rank numbers of two
// jobs collide.
#pragma once

#include <cstdint>
#include <vector>

#include "detect/report.h"
#include "events/device_event.h"
#include "sysfs/topology.h"

namespace slowburn {

class CauseMemory {
 public:
  explicit CauseMemory(uint64_t keep_ns = 600'000'000'000, size_t max_events = 10000)
      : keep_ns_(keep_ns), max_events_(max_events) {}

  void add(DeviceEvent event);
  // Sets the finding's likely causes from the events still recent at now_ns
  // (detect/causes.h); topology may be null (hardware events off).
  void explain(Finding& finding, uint64_t now_ns, const Topology* topology);

 private:
  uint64_t keep_ns_;
  size_t max_events_;
  std::vector<DeviceEvent> events_;  // oldest first; rare (hardware events), so pruning the front is cheap
};

}  // namespace slowburn
