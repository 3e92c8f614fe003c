#include "core/cpu_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/strings.h"

namespace slowburn {

std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  text = trim(text);
  std::set<int> cpus;
  if (text.empty()) return std::vector<int>{};
  for (const std::string& piece : split(text, ',')) {
    size_t dash = piece.find('-');
    auto first = parse_number<int>(std::string_view(piece).substr(0, dash));
    auto last = dash == std::string::npos ? first : parse_number<int>(std::string_view(piece).substr(dash + 1));
    if (!first || !last || *first < 0 || *last < *first || *last > kMaxCpuId) return std::nullopt;
    for (int cpu = *first; cpu <= *last; ++cpu) cpus.insert(cpu);
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

std::string format_cpu_list(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::vector<std::string> ranges;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    ranges.push_back(j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j + 1;
  }
  return join(ranges, ",");
}

}  // namespace slowburn
