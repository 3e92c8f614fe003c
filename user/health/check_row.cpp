#include "health/check_row.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/strings.h"

namespace slowburn {

std::string_view check_state_name(CheckState state) {
  switch (state) {
    case CheckState::ok:
      return "ok";
    case CheckState::warn:
      return "warn";
    case CheckState::fail:
      return "fail";
    case CheckState::unavailable:
      return "unavailable";
  }
  return "?";
}

nlohmann::json health_check_json(const CheckRow& c) {
  nlohmann::json j{{"kind", "health"}, {"check", c.check},         {"state", check_state_name(c.state)},
                   {"value", c.value}, {"threshold", c.threshold}, {"device", c.device},
                   {"ranks", c.ranks}, {"detail", c.detail}};
  if (!c.unit.empty()) j["unit"] = c.unit;
  return j;
}

nlohmann::json check_row_json(const CheckRow& row) {
  return {{"kind", "check"},          {"check", row.check},   {"ok", row.ok()},
          {"required", row.required}, {"detail", row.detail}, {"fix", row.fix}};
}

CheckRow check_row(std::string check, bool ok, bool required, std::string detail, std::string fix) {
  CheckRow row;
  row.check = std::move(check);
  row.state = ok ? CheckState::ok : required ? CheckState::fail : CheckState::warn;
  row.required = required;
  row.detail = std::move(detail);
  if (!ok) row.fix = std::move(fix);
  return row;
}

bool any_required_failed(const std::vector<CheckRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const CheckRow& r) { return r.required && !r.ok(); });
}

std::string check_summary(const std::vector<CheckRow>& rows) {
  size_t ok = std::count_if(rows.begin(), rows.end(), [](const CheckRow& r) { return r.ok(); });
  size_t required = std::count_if(rows.begin(), rows.end(), [](const CheckRow& r) { return r.required && !r.ok(); });
  std::string verdict = required ? "slowburn cannot trace here: fix the required rows"
                                 : "slowburn can trace here; the rows not ok say what it will miss";
  return fmt::format("{} checks: {} ok, {} not ok ({} required): {}", rows.size(), ok, rows.size() - ok, required,
                     verdict);
}

bool any_failed(const std::vector<CheckRow>& checks) {
  return std::any_of(checks.begin(), checks.end(), [](const CheckRow& c) { return c.state == CheckState::fail; });
}

std::string health_summary(const std::vector<CheckRow>& checks) {
  std::map<CheckState, size_t> counts;
  for (const CheckRow& c : checks) ++counts[c.state];
  std::vector<std::string> parts;
  for (CheckState s : kCheckStates) parts.push_back(fmt::format("{} {}", counts[s], check_state_name(s)));
  return fmt::format("{} checks: {}", checks.size(), join(parts, ", "));
}

bool is_sdc_check(std::string_view check) {
  return check == "gpu.xid_ecc" || check == "memory.edac_ce" || check == "memory.edac_ue" || check == "memory.mce_log";
}

namespace {
// Taint bits 4 (M: machine check) and 5 (B: bad page) speak of memory and CPU errors.
constexpr uint64_t kTaintMachineCheckBits = (1u << 4) | (1u << 5);

bool is_sdc_row(const CheckRow& c) {
  if (c.state != CheckState::warn && c.state != CheckState::fail) return false;
  if (c.check == "kernel.taint")
    return c.value.is_number_unsigned() && (c.value.get<uint64_t>() & kTaintMachineCheckBits);
  return is_sdc_check(c.check);
}
}  // namespace

std::optional<std::string> sdc_activity(const std::vector<CheckRow>& checks) {
  std::vector<std::string> parts;
  for (const CheckRow& c : checks) {
    if (!is_sdc_row(c)) continue;
    parts.push_back(fmt::format("{}{}{}: {}", c.check, c.device.empty() ? "" : " ", c.device, c.detail));
  }
  if (parts.empty()) return std::nullopt;
  return "ECC/EDAC/MCE activity: " + join(parts, "; ");
}

}  // namespace slowburn
