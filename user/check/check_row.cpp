#include "check/check_row.h"

#include <fmt/format.h>

#include <algorithm>

namespace slowburn {

nlohmann::json check_row_json(const CheckRow& row) {
  return {{"kind", "check"},          {"check", row.check},   {"ok", row.ok},
          {"required", row.required}, {"detail", row.detail}, {"fix", row.fix}};
}

bool any_required_failed(const std::vector<CheckRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const CheckRow& r) { return r.required && !r.ok; });
}

std::string check_summary(const std::vector<CheckRow>& rows) {
  size_t ok = std::count_if(rows.begin(), rows.end(), [](const CheckRow& r) { return r.ok; });
  size_t required = std::count_if(rows.begin(), rows.end(), [](const CheckRow& r) { return r.required && !r.ok; });
  std::string verdict = required ? "slowburn cannot trace here: fix the required rows"
                                 : "slowburn can trace here; the rows not ok say what it will miss";
  return fmt::format("{} checks: {} ok, {} not ok ({} required): {}", rows.size(), ok, rows.size() - ok, required,
                     verdict);
}

}  // namespace slowburn
