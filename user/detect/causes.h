// Joins a finding to the hardware and fabric events that concern its
// culprit: an Xid on its GPU, a downtrained link above its NIC, pause storms
// or retransmissions on its NIC, its QPs moved to ERR. Pure.
#pragma once

#include <vector>

#include "detect/report.h"
#include "events/device_event.h"

namespace slowburn {

// Sets finding.likely_causes from the events whose ranks include the
// culprit's rank (at most three, most severe first, one per type and
// device) and appends the first to the summary. Recovered links are not
// causes. Returns whether any cause was found.
bool attach_likely_causes(Finding& finding, const std::vector<DeviceEvent>& events);

// "fatal" (AER), "error", "warning" or "info": how bad an event is as a cause of slowness
// (the metrics' severity label; info for types that are not causes).
std::string_view event_severity(const DeviceEvent& event);

}  // namespace slowburn
