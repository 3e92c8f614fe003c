// One row of `slowburn health`: a passive check of the node's telemetry
// (kernel log, sysfs, procfs, the kernel's clock state), its value against a
// threshold, its state, and the ranks it concerns. Plain data; the
// evaluator (health/health_checks.h) fills it, the CLI and the probe
// service print or export it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace slowburn {

// Ordered by gravity: the worst of a set is its maximum.
enum class HealthState { ok, unavailable, warn, fail };
std::string_view health_state_name(HealthState state);
constexpr HealthState kHealthStates[] = {HealthState::ok, HealthState::warn, HealthState::fail,
                                         HealthState::unavailable};

struct HealthCheck {
  std::string check;  // "memory.edac_ue", "pcie.link", ...
  HealthState state = HealthState::unavailable;
  std::string device;                  // BDF, "mc0", "eth0", "mlx5_0/1"; "" when node-wide
  nlohmann::json value = nullptr;      // number, string or null
  nlohmann::json threshold = nullptr;  // number, string or null
  std::vector<int> ranks;              // ranks it concerns, sorted; every rank here for node-wide rows
  std::string detail;                  // what was seen, or why it is unavailable (never empty then)
};

// {"kind":"health","check":...,"state":...,"value":...,"threshold":...,"device":...,"ranks":[...],"detail":...}
nlohmann::json health_check_json(const HealthCheck& check);

bool any_failed(const std::vector<HealthCheck>& checks);

// "12 checks: 7 ok, 2 warn, 1 fail, 2 unavailable"
std::string health_summary(const std::vector<HealthCheck>& checks);

// The checks that speak of silent data corruption risk: GPU ECC and row
// remapping Xids, host memory EDAC counts, machine checks in the kernel log
// (and kernel.taint when it carries M or B: sdc_activity looks at its value).
bool is_sdc_check(std::string_view check);

// One line when any of those is warn or fail ("ECC/EDAC/MCE activity:
// memory.edac_ce mc0: ...; gpu.xid_ecc 0000:03:00.0: ..."), else nullopt.
// For findings that want to say the node shows ECC/EDAC/MCE activity.
std::optional<std::string> sdc_activity(const std::vector<HealthCheck>& checks);

}  // namespace slowburn
