#include "detect/own_cpu_causes.h"

#include <algorithm>

namespace slowburn {

namespace {
// A service runs for days; a cause said and gone a thousand times keeps
// its latest spans.
constexpr size_t kSpansKept = 1024;
// HostMonitorOptions::refresh_s, and a reading period's slack.
constexpr uint64_t kSaidAgainNs = 30'000'000'000;
constexpr uint64_t kSlackNs = 2'000'000'000;
}  // namespace

void OwnCpuCauses::said(const OwnCpuCause& cause) {
  if (cause.to_ns < cause.from_ns) return;
  if (cause.whole_session && spans_.contains(cause.pid)) return;
  std::vector<std::pair<uint64_t, uint64_t>>& spans = spans_[cause.pid];
  spans.emplace_back(cause.from_ns, cause.to_ns);
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& span : spans)
    if (!merged.empty() && span.first <= merged.back().second + kSaidAgainNs + kSlackNs)
      merged.back().second = std::max(merged.back().second, span.second);
    else
      merged.push_back(span);
  if (merged.size() > kSpansKept) merged.erase(merged.begin(), merged.end() - kSpansKept);
  spans = std::move(merged);
}

bool OwnCpuCauses::over_half(int32_t pid, uint64_t from_ns, uint64_t to_ns) const {
  auto spans = spans_.find(pid);
  if (spans == spans_.end() || to_ns <= from_ns) return false;
  uint64_t covered = 0;
  for (size_t i = 0; i < spans->second.size(); ++i) {
    auto [from, to] = spans->second[i];
    // The latest, while its next saying is not due yet: it may hold still.
    if (i + 1 == spans->second.size() && to_ns - std::min(to_ns, to) <= kSaidAgainNs + kSlackNs)
      to = std::max(to, to_ns);
    uint64_t a = std::max(from, from_ns), b = std::min(to, to_ns);
    if (b > a) covered += b - a;
  }
  return 2 * covered >= to_ns - from_ns;
}

}  // namespace slowburn
