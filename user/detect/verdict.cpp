#include "detect/verdict.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/format.h"

namespace slowburn {

RankWindowStats* flag_straggler(WindowReport& report, const DetectorConfig& config, size_t aligned_count) {
  // The candidate: most blame; the runner-up bounds how unique it is.
  RankWindowStats* worst = nullptr;
  double runner_up_blame = 0;
  for (RankWindowStats& stats : report.ranks) {
    if (!worst || stats.blame_ns > worst->blame_ns) {
      if (worst) runner_up_blame = std::max(runner_up_blame, worst->blame_ns);
      worst = &stats;
    } else {
      runner_up_blame = std::max(runner_up_blame, stats.blame_ns);
    }
  }
  if (!worst) return nullptr;
  bool unique = worst->blame_ns > 0 && worst->blame_ns >= config.uniqueness_ratio * runner_up_blame;
  bool last_often = worst->last_fraction >= config.min_last_fraction;
  // Lateness and compute gap are two views of arriving last; on a loaded
  // node the previous release skews lateness, the gap is immune to that.
  bool z_ok = aligned_count < 3 || (worst->z_lateness && *worst->z_lateness >= config.z_threshold) ||
              (worst->z_gap && *worst->z_gap >= config.z_threshold);
  if (unique && last_often && z_ok && worst->blame_share >= config.min_blame_share) worst->flagged = true;
  return worst;
}

Finding straggler_finding(const char* detector, const WindowReport& report, const RankWindowStats& evidence,
                          uint64_t now_ns) {
  Finding f;
  f.type = "straggler";
  f.detector = detector;
  f.culprit = evidence.identity;
  f.probe = report.probe;
  f.detected_ns = now_ns;
  f.lateness_median_ns = evidence.lateness_median_ns.value_or(0);
  f.blame_share = evidence.blame_share;
  f.last_fraction = evidence.last_fraction;
  f.z_lateness = evidence.z_lateness;
  f.z_gap = evidence.z_gap;
  return f;
}

std::string straggler_summary(const Finding& f) {
  std::string z = f.z_lateness || f.z_gap ? fmt::format(" (robust z: lateness {}, compute gap {})",
                                                        f.z_lateness ? fmt::format("{:.1f}", *f.z_lateness) : "-",
                                                        f.z_gap ? fmt::format("{:.1f}", *f.z_gap) : "-")
                                          : std::string(" (no z: fewer than 3 ranks)");
  std::string persistence = f.detector == "persistence" ? fmt::format("flagged in {} of the last {} windows",
                                                                      f.windows_flagged, f.windows_considered)
                                                        : std::string("sustained compute-gap excess (CUSUM)");
  return fmt::format(
      "{} is the straggler: arrives last in {:.0f}% of {} calls, {} after the median rank{}; "
      "blame {:.0f}% of the window; {}; the job lost {} waiting for it ({:.1f}% of traced time)",
      rank_label(f.culprit), f.last_fraction * 100, f.probe, format_ns(f.lateness_median_ns), z, f.blame_share * 100,
      persistence, format_ns(static_cast<double>(f.cost_ns)), f.cost_share * 100);
}

}  // namespace slowburn
