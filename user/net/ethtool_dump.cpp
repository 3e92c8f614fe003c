#include "net/ethtool_dump.h"

#include <fmt/format.h>

#include "core/strings.h"

namespace slowburn {

Result<EthtoolStats> parse_ethtool_dump(std::string_view text) {
  EthtoolStats stats;
  std::vector<std::string> bad;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_no;
    line = trim_right(line);
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos) continue;
    line.remove_prefix(start);
    if (line.back() == ':' && line.find(' ') == std::string_view::npos) continue;  // "NIC statistics:"
    if (line.rfind("NIC statistics", 0) == 0) continue;
    size_t colon = line.rfind(": ");
    auto value = colon == std::string_view::npos ? std::nullopt : parse_number<uint64_t>(line.substr(colon + 2));
    if (!value || colon == 0) {
      if (bad.size() < 5) bad.push_back(fmt::format("line {}: '{}'", line_no, std::string(line.substr(0, 60))));
      continue;
    }
    stats.emplace_back(std::string(line.substr(0, colon)), *value);
  }
  if (!bad.empty())
    return make_error("not `ethtool -S` output ({}); capture it with: ethtool -S IFACE > IFACE", join(bad, "; "));
  if (stats.empty()) return make_error("no statistics in the capture (is it `ethtool -S IFACE` output?)");
  return stats;
}

}  // namespace slowburn
