// The pure parsers of `slowburn check`: the text of a procfs or securityfs
// file in, the value out (an Error naming what was malformed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace slowburn {

// CapEff of a /proc/PID/status ("CapEff:\t000001ffffffffff"): bit N is
// capability N.
Result<uint64_t> parse_cap_effective(std::string_view status);

// The active mode of /sys/kernel/security/lockdown ("none [integrity]
// confidentiality" -> "integrity").
Result<std::string> parse_lockdown(std::string_view text);

struct KernelVersion {
  int major = 0, minor = 0;
  auto operator<=>(const KernelVersion&) const = default;
};

// "6.18.44-fc-v1098" -> 6.18; nullopt when it does not start with N.M.
std::optional<KernelVersion> parse_kernel_release(std::string_view release);

// Where /proc/mounts (or /proc/self/mounts) has a tracefs mounted, the first
// one listed; nullopt when none is.
std::optional<std::string> tracefs_mount_point(std::string_view mounts);

}  // namespace slowburn
