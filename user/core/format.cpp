#include "core/format.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>

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

std::string format_rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

std::string format_bytes_per_s(double bytes_per_s) {
  static constexpr const char* kUnits[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
  size_t unit = 0;
  while (bytes_per_s >= 1000 && unit + 1 < std::size(kUnits)) bytes_per_s /= 1000, ++unit;
  return unit == 0 ? fmt::format("{:.0f} {}", bytes_per_s, kUnits[unit])
                   : fmt::format("{:.{}f} {}", bytes_per_s,
                                 bytes_per_s < 10    ? 2
                                 : bytes_per_s < 100 ? 1
                                                     : 0,
                                 kUnits[unit]);
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) bytes /= 1024, ++unit;
  return unit == 0 ? fmt::format("{:.0f} {}", bytes, kUnits[unit])
                   : fmt::format("{:.{}f} {}", bytes,
                                 bytes < 10    ? 2
                                 : bytes < 100 ? 1
                                               : 0,
                                 kUnits[unit]);
}

}  // namespace slowburn
