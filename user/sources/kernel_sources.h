// The rare-event tracepoints the hardware monitor copies raw records from,
// and which of them this kernel has: a pure decision on KernelFeatures, so
// "kernel without ras:aer_event", "driver without nvidia_dev_xid" and "no
// tracefs" are unit-tested on this machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader/features.h"

namespace slowburn {

struct KernelSource {
  const char* name;    // the status name
  const char* system;  // tracefs
  const char* event;
  uint32_t id;          // enum sb_tp_source
  const char* missing;  // why it is unavailable when the tracepoint is absent
};

struct KernelSourcePlan {
  KernelSource source;
  bool available = false;
  std::string reason;  // when !available
};

// The sources wanted (AER, link events and hotplug, the driver's Xid
// tracepoint), each with whether this kernel has it.
std::vector<KernelSourcePlan> plan_kernel_sources(const KernelFeatures& kernel, bool aer, bool link, bool xid);

// Every source, for reporting them all unavailable when replaying a tree.
std::vector<KernelSource> all_kernel_sources(bool aer, bool link, bool xid);

}  // namespace slowburn
