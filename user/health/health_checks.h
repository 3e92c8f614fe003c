// The health checklist, evaluated: two snapshots (the same one twice for a
// single reading) in, one CheckRow per check and device out. Pure: no
// files; the topology (roles, link partners, which rank uses what) is
// given. docs/health.md lists every check, its source, its
// threshold and its states.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "health/check_row.h"
#include "health/health_snapshot.h"
#include "pcie/link.h"
#include "sysfs/topology.h"

namespace slowburn {

struct HealthThresholds {
  // Mean scaling_cur_freq / cpuinfo_max_freq below this: the CPUs run slow
  // (a power cap, a BIOS setting, a hot node). Idle cores under powersave
  // sit low too; cpu.governor says when that is why.
  double min_cpu_frequency_ratio = 0.5;
  // What training nodes run: every CPU at its highest frequency on demand.
  std::string governor = "performance";
  // The NTP estimated error a synchronised clock stays under; traces merged
  // across nodes want their clocks within a millisecond.
  int64_t max_clock_esterror_us = 1000;
  // The speed every NIC port should run at, Gb/s; unset: the fastest port
  // of the same PCI model on this node (a cable or switch port that
  // negotiated less shows against its siblings).
  std::optional<double> nic_speed_gbps;
};

struct HealthContext {
  const Topology* topology = nullptr;       // null: no roles, no ranks per device
  std::vector<RankIdentity> ranks;          // the traced-job ranks on this node
  std::vector<ExpectationRule> link_rules;  // --expect, as slowburn pcie takes them
  HealthThresholds thresholds;
};

// `before` and `after`: counters that rose between them are trends (EDAC,
// thermal throttling, AER, NIC errors); pass the same snapshot twice for
// one reading. The kernel log and current states come from `after`.
std::vector<CheckRow> evaluate_health(const HealthSnapshot& before, const HealthSnapshot& after,
                                      const HealthContext& context);

// The pieces, for tests and for callers that read one source.
CheckRow evaluate_clock(const Result<ClockReading>& clock, const HealthThresholds& thresholds);
CheckRow evaluate_taint(const Result<uint64_t>& tainted);

}  // namespace slowburn
