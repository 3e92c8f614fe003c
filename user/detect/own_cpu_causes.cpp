#include "detect/own_cpu_causes.h"

#include <algorithm>

namespace slowburn {

namespace {
// A service runs for days; a cause said and gone a thousand times keeps
// its latest spans.
constexpr size_t kSpansKept = 1024;
}  // namespace

void OwnCpuCauses::said(int32_t pid, uint64_t from_ns, uint64_t to_ns) {
  if (to_ns < from_ns) return;
  std::vector<std::pair<uint64_t, uint64_t>>& spans = spans_[pid];
  spans.emplace_back(from_ns, to_ns);
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& span : spans)
    if (!merged.empty() && span.first <= merged.back().second)
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
  for (const auto& [from, to] : spans->second) {
    uint64_t a = std::max(from, from_ns), b = std::min(to, to_ns);
    if (b > a) covered += b - a;
  }
  return 2 * covered >= to_ns - from_ns;
}

}  // namespace slowburn
