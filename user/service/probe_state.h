// The probe service's state across its own restart: the slow burn's
// per-lane baselines (detect/aggregate_slow_burn.h), hours to days of
// totals that a restart (a package upgrade, a crash) would otherwise lose.
// One JSON file, written whole and renamed into place once a minute and at
// exit. Its pids and monotonic times mean something on this boot only: the
// file carries the boot's id, and a file from another boot is not used.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "detect/aggregate_slow_burn.h"

namespace slowburn {

struct ProbeServiceState {
  std::string boot_id;  // /proc/sys/kernel/random/boot_id when saved
  AggSlowBurnState slow_burn;
  // Each rank's start time (procfs/ranks.h: clock ticks since boot) when
  // saved: a pid reused by another process since is not that rank.
  std::map<int32_t, uint64_t> start_ticks;
};

nlohmann::json probe_state_json(const ProbeServiceState& state);
// A clear error naming what is malformed.
Result<ProbeServiceState> probe_state_from_json(const nlohmann::json& j);

Result<void> save_probe_state(const std::filesystem::path& path, const ProbeServiceState& state);
// An absent file is an empty state (the first start).
Result<ProbeServiceState> load_probe_state(const std::filesystem::path& path);

}  // namespace slowburn

namespace slowburn {

class AggregateDetector;

// The service's keeper of its state file (none when the path is empty).
class ProbeStateKeeper {
 public:
  using Note = std::function<void(const std::string&)>;
  ProbeStateKeeper(std::filesystem::path file, std::filesystem::path proc_root)
      : file_(std::move(file)), proc_root_(std::move(proc_root)) {}
  // At start: the saved baselines of this boot's ranks still alive (a pid
  // under proc_root) go back into the detector; what is not used is said.
  void restore(AggregateDetector& detector, const Note& note) const;
  // The detector's baselines into the file once a minute, or `now` (at
  // exit); a failure is said.
  void keep(uint64_t now_ns, bool now, const AggregateDetector& detector, const Note& note);

 private:
  std::filesystem::path file_, proc_root_;
  uint64_t kept_ns_ = 0;
  bool failing_ = false;  // a failed write is said once, until one succeeds
};

}  // namespace slowburn
