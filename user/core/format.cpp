#include "core/format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace slowburn {

std::string format_ns(double ns, bool sign) {
  double a = std::fabs(ns);
  const char* unit = "ns";
  double v = ns;
  if (a >= 1e9) {
    unit = "s";
    v = ns / 1e9;
  } else if (a >= 1e6) {
    unit = "ms";
    v = ns / 1e6;
  } else if (a >= 1e3) {
    unit = "us";
    v = ns / 1e3;
  }
  int decimals = std::string_view(unit) == "ns" ? 0 : 2;
  return sign ? fmt::format("{:+.{}f} {}", v, decimals, unit) : fmt::format("{:.{}f} {}", v, decimals, unit);
}

std::string format_ns(const std::optional<double>& ns, bool sign) { return ns ? format_ns(*ns, sign) : "-"; }

std::string format_duration_s(double seconds) {
  if (seconds < 120) return fmt::format("{:.0f} s", std::max(seconds, 0.0));
  if (seconds < 2 * 3600) return fmt::format("{:.0f} min", seconds / 60);
  if (seconds < 2 * 86400) return fmt::format("{:.1f} h", seconds / 3600);
  return fmt::format("{:.1f} days", seconds / 86400);
}

std::string format_rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

namespace {

// value in the largest unit it reaches (step `base`), 3 significant digits.
std::string scaled(double value, double base, std::initializer_list<const char*> units) {
  auto unit = units.begin();
  while (value >= base && unit + 1 != units.end()) value /= base, ++unit;
  int decimals = unit == units.begin() ? 0 : value < 10 ? 2 : value < 100 ? 1 : 0;
  return fmt::format("{:.{}f} {}", value, decimals, *unit);
}

}  // namespace

std::string format_bytes_per_s(double bytes_per_s) {
  return scaled(bytes_per_s, 1000, {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"});
}

std::string format_bytes(double bytes) { return scaled(bytes, 1024, {"B", "KiB", "MiB", "GiB", "TiB"}); }

}  // namespace slowburn
