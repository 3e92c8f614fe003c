#include "core/format.h"

#include <fmt/format.h>

#include <cmath>

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

}  // namespace slowburn
