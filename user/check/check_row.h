// One row of `slowburn check`: can slowburn work here, and what will it
// miss. Plain data; the evaluator (check/checks.h) fills it, the CLI prints
// it as a table or as JSON lines.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace slowburn {

struct CheckRow {
  std::string check;  // "btf", "bpf.uprobe", "tracepoint.ras:aer_event", "probes.pid4242"
  bool ok = false;
  bool required = false;  // slowburn cannot trace without it (BTF, privileges, tracefs, ring buffer, uprobes)
  std::string detail;     // what was found; never empty
  std::string fix;        // for a row that is not ok: what to run or change; "" when ok
};

// {"kind":"check","check":...,"ok":...,"required":...,"detail":...,"fix":...}
nlohmann::json check_row_json(const CheckRow& row);

// A required row is not ok: slowburn cannot trace here.
bool any_required_failed(const std::vector<CheckRow>& rows);

// "31 checks: 22 ok, 9 not ok (0 required)"
std::string check_summary(const std::vector<CheckRow>& rows);

}  // namespace slowburn
