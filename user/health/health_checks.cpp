#include "health/health_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "health/health_checks_internal.h"

namespace slowburn {

namespace health_detail {

Evaluation::Evaluation(const HealthSnapshot& b, const HealthSnapshot& a, const HealthContext& c)
    : before(b), after(a), context(c) {
  std::set<int> ranks;
  for (const RankIdentity& r : context.ranks) ranks.insert(r.rank);
  node_ranks_.assign(ranks.begin(), ranks.end());
}

std::vector<int> Evaluation::device_ranks(const std::string& device) const {
  if (!context.topology || device.empty()) return {};
  const TopologyDevice* dev = context.topology->find(device);
  if (!dev) return {};
  std::set<int> ranks;
  for (const RankIdentity& r : context.ranks)
    if (context.topology->serves(dev->pci.bdf, r.pid)) ranks.insert(r.rank);
  return {ranks.begin(), ranks.end()};
}

std::string Evaluation::over_interval() const {
  return has_trend() ? fmt::format("in {:.1f} s", interval_s()) : "(one reading: no rise measured)";
}

std::string Evaluation::quiet(std::string_view what) const {
  return has_trend() ? fmt::format("no {} in {:.1f} s", what, interval_s())
                     : fmt::format("one reading: no {} measured", what);
}

CheckState error_count_state(uint64_t uncorrectable, uint64_t correctable) {
  return uncorrectable ? CheckState::fail : correctable ? CheckState::warn : CheckState::ok;
}

CheckRow& Evaluation::add(std::string check, CheckState state, std::string device, nlohmann::json value,
                          nlohmann::json threshold, std::vector<int> ranks, std::string detail) {
  rows.push_back({std::move(check), state, std::move(device), std::move(value), std::move(threshold), std::move(ranks),
                  std::move(detail), false, ""});
  return rows.back();
}

CheckRow& Evaluation::unavailable(std::string check, std::string device, std::vector<int> ranks, std::string reason) {
  if (reason.empty()) reason = "unavailable, for no reason the reader recorded";  // never an empty reason
  return add(std::move(check), CheckState::unavailable, std::move(device), nullptr, nullptr, std::move(ranks),
             std::move(reason));
}

}  // namespace health_detail

std::vector<CheckRow> evaluate_health(const HealthSnapshot& before, const HealthSnapshot& after,
                                      const HealthContext& context) {
  health_detail::Evaluation e(before, after, context);
  health_detail::evaluate_gpu_checks(e);
  health_detail::evaluate_pcie_checks(e);
  health_detail::evaluate_memory_checks(e);
  health_detail::evaluate_cpu_checks(e);
  health_detail::evaluate_nic_checks(e);
  health_detail::evaluate_kernel_checks(e);
  return std::move(e.rows);
}

}  // namespace slowburn
