// One row of a checklist, for both of slowburn's: `slowburn health` (a
// passive check of the node's telemetry: kernel log, sysfs, procfs, the
// kernel's clock state; its value against a threshold, its state, the ranks
// it concerns) and `slowburn check` (can slowburn work here: whether slowburn
// needs it, and what to do when it is not ok). Plain data; the evaluators
// (health/health_checks.h, check/checks.h) fill it, the CLI and the probe
// service print or export it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace slowburn {

// Ordered by gravity: the worst of a set is its maximum.
enum class CheckState { ok, unavailable, warn, fail };
std::string_view check_state_name(CheckState state);
constexpr CheckState kCheckStates[] = {CheckState::ok, CheckState::warn, CheckState::fail, CheckState::unavailable};

struct CheckRow {
  std::string check;  // "memory.edac_ue", "pcie.link", "btf", "tracepoint.ras:aer_event", ...
  CheckState state = CheckState::unavailable;
  std::string device;                  // BDF, "mc0", "eth0", "mlx5_0/1"; "" when node-wide
  nlohmann::json value = nullptr;      // number, string or null
  nlohmann::json threshold = nullptr;  // number, string or null
  std::vector<int> ranks;              // ranks it concerns, sorted; every rank here for node-wide rows
  std::string detail;                  // what was seen, or why it is unavailable (never empty then)
  bool required = false;               // `check`: slowburn cannot trace without it (BTF, privileges, tracefs, ...)
  std::string fix;                     // `check`: for a row that is not ok, what to run or change; "" when ok
  std::string unit = "";               // of a numeric value and threshold ("us"), "" when none

  bool ok() const { return state == CheckState::ok; }
};

// {"kind":"health","check":...,"state":...,"value":...,"threshold":...,"device":...,"ranks":[...],"detail":...}
nlohmann::json health_check_json(const CheckRow& check);
// {"kind":"check","check":...,"ok":...,"required":...,"detail":...,"fix":...}
nlohmann::json check_row_json(const CheckRow& row);

// `check`: a row that is ok, or not (required ones fail, the others warn:
// what slowburn will miss here).
CheckRow check_row(std::string check, bool ok, bool required, std::string detail, std::string fix = "");
// A required row is not ok: slowburn cannot trace here.
bool any_required_failed(const std::vector<CheckRow>& rows);
// "31 checks: 22 ok, 9 not ok (0 required): ..."
std::string check_summary(const std::vector<CheckRow>& rows);

bool any_failed(const std::vector<CheckRow>& checks);

// "12 checks: 7 ok, 2 warn, 1 fail, 2 unavailable"
std::string health_summary(const std::vector<CheckRow>& checks);

// The checks that speak of silent data corruption risk: GPU ECC and row
// remapping Xids, host memory EDAC counts, machine checks in the kernel log
// (and kernel.taint when it carries M or B: sdc_activity looks at its value).
bool is_sdc_check(std::string_view check);

// One line when any of those is warn or fail ("ECC/EDAC/MCE activity:
// memory.edac_ce mc0: ...; gpu.xid_ecc 0000:03:00.0: ..."), else nullopt.
// For findings that want to say the node shows ECC/EDAC/MCE activity.
std::optional<std::string> sdc_activity(const std::vector<CheckRow>& checks);

}  // namespace slowburn
