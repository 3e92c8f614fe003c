// /proc/PID/environ: NUL-separated KEY=VALUE strings, as the process was exec'd.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace slowburn {

using Environment = std::map<std::string, std::string, std::less<>>;

Environment parse_environ(std::string_view raw);

// /proc/PID/cmdline: NUL-separated argv, joined with spaces.
std::string parse_cmdline(std::string_view raw);

}  // namespace slowburn
