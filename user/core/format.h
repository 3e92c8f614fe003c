// Human formatting of durations and shares, shared by the text renderings.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace slowburn {

// 1.23 ms, 45.6 us, 2.00 s; signed when `sign` (lateness: +2.01 ms).
std::string format_ns(double ns, bool sign = false);
std::string format_ns(const std::optional<double>& ns, bool sign = false);

// 1.2 GB/s, 340 MB/s, 12 B/s: decimal units, as link rates are quoted.
std::string format_bytes_per_s(double bytes_per_s);
// 4 KiB, 1.5 MiB, 12 B: binary units, as buffer sizes are.
std::string format_bytes(double bytes);

// 42 s, 12 min, 3.2 h, 4.1 days: how long ago something was.
std::string format_duration_s(double seconds);

// "0,1,3": a list of ranks; empty for none.
std::string format_rank_list(const std::vector<int>& ranks);

}  // namespace slowburn
