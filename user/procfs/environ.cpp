#include "procfs/environ.h"

namespace slowburn {

namespace {
template <typename F>
void for_each_nul_separated(std::string_view raw, F&& f) {
  while (!raw.empty()) {
    size_t end = raw.find('\0');
    std::string_view item = raw.substr(0, end);
    if (!item.empty()) f(item);
    if (end == std::string_view::npos) break;
    raw.remove_prefix(end + 1);
  }
}
}  // namespace

Environment parse_environ(std::string_view raw) {
  Environment env;
  for_each_nul_separated(raw, [&](std::string_view item) {
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return;  // not KEY=VALUE: ignore
    env.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
  });
  return env;
}

std::string parse_cmdline(std::string_view raw) {
  std::string joined;
  for_each_nul_separated(raw, [&](std::string_view arg) {
    if (!joined.empty()) joined += ' ';
    joined += arg;
  });
  return joined;
}

}  // namespace slowburn
