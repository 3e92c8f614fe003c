// Failures: a rank whose process ended by a signal, an OOM kill or a
// non-zero status. The first one is what the others likely followed: the
// ranks that end after it are said on its finding, and each later failure
// says whose it came after.
#include <fmt/format.h>

#include <algorithm>

#include "core/format.h"
#include "core/strings.h"
#include "detect/straggler.h"
#include "detect/straggler_internal.h"
#include "detect/verdict.h"

namespace slowburn {

namespace {

// A rank that ends this long after the first failure is not said to follow it.
constexpr uint64_t kFollowNs = 60'000'000'000;

std::string since_start(uint64_t ts_ns, uint64_t first_ns) {
  if (first_ns == 0 || ts_ns < first_ns) return "";
  return fmt::format(" {} into the traced calls", format_ns(static_cast<double>(ts_ns - first_ns)));
}

}  // namespace

void StragglerDetector::raise_failure(int32_t pid, const ProcessEnd& end, DetectorOutput& out) {
  Finding f;
  f.type = "failure";
  f.detector = "lifecycle";
  f.culprit = identity(pid);
  f.detected_ns = end.ts_ns;
  f.ended_ns = end.ts_ns;
  f.process = ended_view(end);
  if (auto in = last_inside_.find(pid); in != last_inside_.end()) f.probe = in->second;
  std::string where = f.probe.empty() ? "" : fmt::format(" while inside {}", f.probe);
  std::string after;
  if (!failures_.empty()) {
    const Finding& first = findings_[failures_.front()];
    after = fmt::format("; {} after {} ({}): likely brought down by it",
                        format_ns(static_cast<double>(end.ts_ns - std::min(end.ts_ns, first.ended_ns))),
                        rank_label(first.culprit), describe_process(*first.process));
  }
  // What the others were doing then: what a person asks first.
  std::map<std::string, std::vector<std::string>> others;
  for (const auto& [other, probe] : last_inside_)
    if (other != pid && alive_.contains(other)) others[probe].push_back(std::to_string(identity(other).rank));
  std::string context;
  for (const auto& [probe, ranks] : others) context += fmt::format("; rank(s) {} were inside {}", join(ranks), probe);
  f.summary = fmt::format("{} {}{}{}{}{}", rank_label(f.culprit), describe_end(end), where,
                          since_start(end.ts_ns, first_ns_), after, failures_.empty() ? context : "");
  failures_.push_back(findings_.size());
  emitted_.push_back(findings_.size());
  findings_.push_back(f);
  out.findings.push_back(std::move(f));
}

void StragglerDetector::follow_failures(int32_t pid, uint64_t ended_ns) {
  if (failures_.empty()) return;
  Finding& first = findings_[failures_.front()];
  if (first.culprit.pid == pid || ended_ns < first.ended_ns || ended_ns - first.ended_ns > kFollowNs) return;
  first.followed_by.push_back(identity(pid).rank);
  first.followed_within_ns = std::max(first.followed_within_ns, ended_ns - first.ended_ns);
  std::string base = first.summary.substr(0, first.summary.find("; then "));
  std::vector<std::string> ranks;
  for (int r : first.followed_by) ranks.push_back(std::to_string(r));
  first.summary = fmt::format("{}; then rank(s) {} ended within {}: it is the likely cause", base, join(ranks),
                              format_ns(static_cast<double>(first.followed_within_ns)));
}

}  // namespace slowburn
