// Where tracefs is, and which tracepoints this kernel has. Tracepoint
// programs attach through tracefs event ids, and some machines boot without
// it mounted.
#pragma once

#include <filesystem>
#include <string>

#include "core/error.h"
#include "tracefs/format.h"

namespace slowburn {

// The tracefs mount (/sys/kernel/tracing, or the old debugfs path); mounts
// it at /sys/kernel/tracing when it is not mounted and we may.
Result<std::filesystem::path> ensure_tracefs();

// Whether tracefs lists the event (e.g. "ras", "aer_event").
bool tracepoint_exists(const std::filesystem::path& tracefs, const std::string& system, const std::string& event);

Result<TracepointFormat> read_tracepoint_format(const std::filesystem::path& tracefs, const std::string& system,
                                                const std::string& event);

}  // namespace slowburn
