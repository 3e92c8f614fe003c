// cpu.thermal_throttle, cpu.governor, cpu.frequency, cpu.offline, cpu.smt.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/format.h"
#include "core/strings.h"
#include "health/health_checks_internal.h"

namespace slowburn::health_detail {

namespace {

// Core counts are per CPU; a package's count repeats on each of its CPUs:
// one per package (the highest, should CPUs disagree).
struct ThrottleTotals {
  uint64_t core = 0, package = 0;
  std::map<int, uint64_t> core_by_cpu, package_by_id;
};

ThrottleTotals totals(const std::vector<CpuThrottle>& cpus) {
  ThrottleTotals t;
  for (const CpuThrottle& c : cpus) {
    if (c.core_count) {
      t.core += *c.core_count;
      t.core_by_cpu[c.cpu] = *c.core_count;
    }
    if (c.package_count) {
      uint64_t& p = t.package_by_id[c.package.value_or(-1 - c.cpu)];
      p = std::max(p, *c.package_count);
    }
  }
  for (const auto& [id, n] : t.package_by_id) t.package += n;
  return t;
}

// When the kernel last said it throttled ("CPU3: Core temperature above
// threshold, cpu clock throttled", "Package temperature/speed high"): the
// counters give no time, the log's timestamp does where it was read.
std::string last_throttle_logged(const Evaluation& e) {
  if (!e.after.kernel_log) return "when it last throttled is unknown (" + e.after.kernel_log.error().message + ")";
  std::optional<uint64_t> last_us;
  for (const KernelLogLine& line : *e.after.kernel_log)
    if (line.ts_us && line.message.find("temperature") != std::string::npos &&
        line.message.find("throttl") != std::string::npos)
      last_us = *line.ts_us;
  if (!last_us) return "the kernel log has no throttling line (it logs few of them)";
  double at_s = static_cast<double>(*last_us) / 1e6;
  if (!e.after.uptime_s) return fmt::format("the last one logged {:.0f} s after boot", at_s);
  return fmt::format("the last one logged {} ago", format_duration_s(*e.after.uptime_s - at_s));
}

void evaluate_throttle(Evaluation& e) {
  const auto& now = e.after.throttle;
  if (!now) {
    e.unavailable("cpu.thermal_throttle", "", e.node_ranks(), now.error().message);
    return;
  }
  ThrottleTotals after = totals(*now);
  ThrottleTotals before = e.before.throttle && e.has_trend() ? totals(*e.before.throttle) : after;
  std::vector<int> risen_cpus, risen_packages;
  uint64_t rise = 0;
  for (const auto& [cpu, n] : after.core_by_cpu) {
    auto was = before.core_by_cpu.find(cpu);
    if (was != before.core_by_cpu.end() && n > was->second) {
      risen_cpus.push_back(cpu);
      rise += n - was->second;
    }
  }
  for (const auto& [pkg, n] : after.package_by_id) {
    auto was = before.package_by_id.find(pkg);
    if (was != before.package_by_id.end() && n > was->second) {
      risen_packages.push_back(pkg);
      rise += n - was->second;
    }
  }
  std::string detail = fmt::format("since boot: {} core and {} package throttling events on {} CPUs", after.core,
                                   after.package, now->size());
  if (rise) {
    detail += fmt::format("; +{} {}", rise, e.over_interval());
    if (!risen_cpus.empty()) detail += " on CPUs " + format_cpu_list(risen_cpus);
    if (!risen_packages.empty())
      detail += (risen_cpus.empty() ? " on" : " and") + std::string(" packages ") + join_numbers(risen_packages);
  } else {
    detail += "; " + e.quiet("rise");
  }
  if (after.core + after.package) detail += "; " + last_throttle_logged(e);
  // History warns, as correctable errors do: a CPU that throttled since boot
  // may throttle under the next job's load.
  e.add("cpu.thermal_throttle", after.core + after.package ? CheckState::warn : CheckState::ok, "",
        after.core + after.package, 0, e.node_ranks(), detail);
}

void evaluate_governor(Evaluation& e) {
  const auto& freq = e.after.frequency;
  if (!freq) {
    e.unavailable("cpu.governor", "", e.node_ranks(), freq.error().message);
    return;
  }
  std::map<std::string, std::vector<int>> by_governor;
  for (const CpuFrequency& f : *freq)
    if (!f.governor.empty()) by_governor[f.governor].push_back(f.cpu);
  if (by_governor.empty()) {
    e.unavailable("cpu.governor", "", e.node_ranks(), "no cpufreq/scaling_governor readable on any CPU");
    return;
  }
  const std::string& wanted = e.context.thresholds.governor;
  std::vector<std::string> parts;
  for (const auto& [gov, cpus] : by_governor) parts.push_back(fmt::format("{} on CPUs {}", gov, format_cpu_list(cpus)));
  bool all_wanted = by_governor.size() == 1 && by_governor.begin()->first == wanted;
  std::string value = by_governor.size() == 1 ? by_governor.begin()->first : std::string("mixed");
  e.add("cpu.governor", all_wanted ? CheckState::ok : CheckState::warn, "", value, wanted, e.node_ranks(),
        join(parts, "; ") + (all_wanted ? "" : fmt::format(" (training nodes run '{}')", wanted)));
}

void evaluate_frequency(Evaluation& e) {
  const auto& freq = e.after.frequency;
  if (!freq) {
    e.unavailable("cpu.frequency", "", e.node_ranks(), freq.error().message);
    return;
  }
  double ratio_sum = 0, cur_sum = 0, max_sum = 0;
  size_t n = 0;
  const CpuFrequency* lowest = nullptr;
  for (const CpuFrequency& f : *freq) {
    if (!f.cur_khz || !f.max_khz || *f.max_khz == 0) continue;
    ratio_sum += static_cast<double>(*f.cur_khz) / static_cast<double>(*f.max_khz);
    cur_sum += static_cast<double>(*f.cur_khz);
    max_sum += static_cast<double>(*f.max_khz);
    ++n;
    if (!lowest || *f.cur_khz < *lowest->cur_khz) lowest = &f;
  }
  if (!n) {
    e.unavailable("cpu.frequency", "", e.node_ranks(),
                  "no CPU has both cpufreq/scaling_cur_freq and cpufreq/cpuinfo_max_freq");
    return;
  }
  double ratio = std::round(ratio_sum / static_cast<double>(n) * 100) / 100;
  double threshold = e.context.thresholds.min_cpu_frequency_ratio;
  e.add("cpu.frequency", ratio < threshold ? CheckState::warn : CheckState::ok, "", ratio, threshold, e.node_ranks(),
        fmt::format("mean {:.2f} GHz of {:.2f} GHz max ({:.0f}%) over {} CPUs; lowest CPU {} at {:.2f} GHz",
                    cur_sum / static_cast<double>(n) / 1e6, max_sum / static_cast<double>(n) / 1e6, ratio * 100, n,
                    lowest->cpu, static_cast<double>(*lowest->cur_khz) / 1e6));
}

void evaluate_offline(Evaluation& e) {
  const auto& lists = e.after.cpu_lists;
  if (!lists) {
    e.unavailable("cpu.offline", "", e.node_ranks(), lists.error().message);
    return;
  }
  // offline also lists possible-but-absent CPUs (hotplug slots of a VM): only present ones count.
  std::vector<int> down;
  std::set_intersection(lists->offline.begin(), lists->offline.end(), lists->present.begin(), lists->present.end(),
                        std::back_inserter(down));
  std::string detail =
      down.empty()
          ? fmt::format("all {} present CPUs online ({})", lists->present.size(), format_cpu_list(lists->present))
          : fmt::format("CPUs {} present but offline (online {}, present {})", format_cpu_list(down),
                        format_cpu_list(lists->online), format_cpu_list(lists->present));
  if (lists->possible.size() > lists->present.size())
    detail += fmt::format("; possible {}: slots for hotplug, not CPUs", format_cpu_list(lists->possible));
  e.add("cpu.offline", down.empty() ? CheckState::ok : CheckState::warn, "", down.size(), 0, e.node_ranks(), detail);
}

void evaluate_smt(Evaluation& e) {
  const auto& smt = e.after.smt;
  if (!smt) {
    e.unavailable("cpu.smt", "", e.node_ranks(), smt.error().message);
    return;
  }
  std::string detail = fmt::format("SMT control '{}'", smt->control);
  if (smt->active) detail += *smt->active ? ", sibling threads active" : ", no sibling thread active";
  if (smt->control == "notsupported") detail += " (the CPU, or the hypervisor, exposes no SMT)";
  e.add("cpu.smt", CheckState::ok, "", smt->control, nullptr, e.node_ranks(), detail);
}

}  // namespace

void evaluate_cpu_checks(Evaluation& e) {
  evaluate_throttle(e);
  evaluate_governor(e);
  evaluate_frequency(e);
  evaluate_offline(e);
  evaluate_smt(e);
}

}  // namespace slowburn::health_detail
