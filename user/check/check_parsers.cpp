#include "check/check_parsers.h"

#include <sstream>

#include "core/strings.h"

namespace slowburn {

Result<uint64_t> parse_cap_effective(std::string_view status) {
  std::istringstream in{std::string(status)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    std::string_view hex = std::string_view(line).substr(7);
    while (!hex.empty() && (hex.front() == ' ' || hex.front() == '\t')) hex.remove_prefix(1);
    if (auto mask = parse_number<uint64_t>(trim_right(hex), 16)) return *mask;
    return make_error("malformed CapEff line: '{}'", line.substr(0, 60));
  }
  return make_error("no CapEff line");
}

Result<std::string> parse_lockdown(std::string_view text) {
  size_t open = text.find('[');
  size_t close = text.find(']', open == std::string_view::npos ? 0 : open);
  if (open == std::string_view::npos || close == std::string_view::npos || close == open + 1)
    return make_error("no [active] mode in '{}'", std::string(trim_right(text)).substr(0, 60));
  return std::string(text.substr(open + 1, close - open - 1));
}

std::optional<KernelVersion> parse_kernel_release(std::string_view release) {
  // Digits first: from_chars reads "-40.0" as major -40 (fuzz: procfs).
  size_t dot = release.find('.');
  if (dot == std::string_view::npos || release.find_first_not_of("0123456789") < dot) return std::nullopt;
  size_t end = release.find_first_not_of("0123456789", dot + 1);
  auto major = parse_number<int>(release.substr(0, dot));
  auto minor = parse_number<int>(release.substr(dot + 1, end == std::string_view::npos ? end : end - dot - 1));
  if (!major || !minor) return std::nullopt;
  return KernelVersion{*major, *minor};
}

std::optional<std::string> tracefs_mount_point(std::string_view mounts) {
  std::istringstream in{std::string(mounts)};
  std::string line;
  while (std::getline(in, line)) {
    // "nodev /sys/kernel/tracing tracefs rw,nosuid,nodev,noexec,relatime 0 0"
    std::istringstream fields(line);
    std::string source, target, type;
    if (fields >> source >> target >> type && type == "tracefs") return target;
  }
  return std::nullopt;
}

}  // namespace slowburn
