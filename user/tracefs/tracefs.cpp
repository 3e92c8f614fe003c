#include "tracefs/tracefs.h"

#include <sys/mount.h>

#include <cerrno>
#include <fstream>

namespace slowburn {

Result<std::filesystem::path> ensure_tracefs() {
  std::error_code ec;
  for (const char* path : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"})
    if (std::filesystem::exists(std::filesystem::path(path) / "events", ec)) return std::filesystem::path(path);
  if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0)
    return make_sys_error(errno,
                          "tracefs is not mounted and mounting it at /sys/kernel/tracing failed (run as root, or "
                          "mount -t tracefs nodev /sys/kernel/tracing)");
  return std::filesystem::path("/sys/kernel/tracing");
}

bool tracepoint_exists(const std::filesystem::path& tracefs, const std::string& system, const std::string& event) {
  std::error_code ec;
  return std::filesystem::exists(tracefs / "events" / system / event / "format", ec);
}

Result<TracepointFormat> read_tracepoint_format(const std::filesystem::path& tracefs, const std::string& system,
                                                const std::string& event) {
  std::filesystem::path path = tracefs / "events" / system / event / "format";
  std::ifstream in(path);
  if (!in) return make_sys_error(errno, "cannot read " + path.string());
  auto format = parse_format(in);
  if (!format) return make_error("{}: {}", path.string(), format.error().message);
  return format;
}

}  // namespace slowburn
