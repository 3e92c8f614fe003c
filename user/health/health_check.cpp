#include "health/health_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/strings.h"

namespace slowburn {

std::string_view health_state_name(HealthState state) {
  switch (state) {
    case HealthState::ok:
      return "ok";
    case HealthState::warn:
      return "warn";
    case HealthState::fail:
      return "fail";
    case HealthState::unavailable:
      return "unavailable";
  }
  return "?";
}

nlohmann::json health_check_json(const HealthCheck& c) {
  return {{"kind", "health"}, {"check", c.check},         {"state", health_state_name(c.state)},
          {"value", c.value}, {"threshold", c.threshold}, {"device", c.device},
          {"ranks", c.ranks}, {"detail", c.detail}};
}

bool any_failed(const std::vector<HealthCheck>& checks) {
  return std::any_of(checks.begin(), checks.end(), [](const HealthCheck& c) { return c.state == HealthState::fail; });
}

std::string health_summary(const std::vector<HealthCheck>& checks) {
  std::map<HealthState, size_t> counts;
  for (const HealthCheck& c : checks) ++counts[c.state];
  std::vector<std::string> parts;
  for (HealthState s : kHealthStates) parts.push_back(fmt::format("{} {}", counts[s], health_state_name(s)));
  return fmt::format("{} checks: {}", checks.size(), join(parts, ", "));
}

bool is_sdc_check(std::string_view check) {
  return check == "gpu.xid_ecc" || check == "memory.edac_ce" || check == "memory.edac_ue" || check == "memory.mce_log";
}

namespace {
// Taint bits 4 (M: machine check) and 5 (B: bad page) speak of memory and CPU errors.
constexpr uint64_t kTaintMachineCheckBits = (1u << 4) | (1u << 5);

bool is_sdc_row(const HealthCheck& c) {
  if (c.state != HealthState::warn && c.state != HealthState::fail) return false;
  if (c.check == "kernel.taint")
    return c.value.is_number_unsigned() && (c.value.get<uint64_t>() & kTaintMachineCheckBits);
  return is_sdc_check(c.check);
}
}  // namespace

std::optional<std::string> sdc_activity(const std::vector<HealthCheck>& checks) {
  std::vector<std::string> parts;
  for (const HealthCheck& c : checks) {
    if (!is_sdc_row(c)) continue;
    parts.push_back(fmt::format("{}{}{}: {}", c.check, c.device.empty() ? "" : " ", c.device, c.detail));
  }
  if (parts.empty()) return std::nullopt;
  return "ECC/EDAC/MCE activity: " + join(parts, "; ");
}

}  // namespace slowburn
