// Human formatting of durations and shares, shared by the text renderings.
#pragma once

#include <optional>
#include <string>

namespace slowburn {

// 1.23 ms, 45.6 us, 2.00 s; signed when `sign` (lateness: +2.01 ms).
std::string format_ns(double ns, bool sign = false);
std::string format_ns(const std::optional<double>& ns, bool sign = false);

}  // namespace slowburn
