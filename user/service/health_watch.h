// The `slowburn health` checklist inside the service: read every
// health_interval_s, each counter's rise measured from the last reading,
// exported as slowburn_health_check; the rows whose state changed are the
// ones to log (the first time: every row that is not ok). Its SDC rows say
// whether the node shows ECC/EDAC/MCE activity, for the findings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "core/roots.h"
#include "health/check_row.h"
#include "health/health_snapshot.h"

namespace slowburn {

class Topology;

class HealthWatch {
 public:
  // interval_s 0: never read.
  HealthWatch(double interval_s, const Roots& roots);

  struct Reading {
    std::vector<CheckRow> changed;
    std::optional<std::string> error;  // the checklist could not be read (said once)
  };
  // When due: a new reading graded against the last. `topology` may be null
  // (no hardware sources): the watch reads its own.
  Reading poll(uint64_t now_ns, const std::vector<RankIdentity>& ranks, const Topology* topology);

  const std::vector<CheckRow>& rows() const { return rows_; }
  std::optional<std::string> sdc_activity() const { return slowburn::sdc_activity(rows_); }

 private:
  uint64_t interval_ns_;
  Roots roots_;
  uint64_t next_ns_ = 0;
  std::optional<HealthSnapshot> last_;
  std::vector<CheckRow> rows_;
  bool error_said_ = false;
};

}  // namespace slowburn
