#include "sinks/hist_printer.h"

#include <fmt/format.h>

#include <algorithm>

namespace slowburn {

std::string format_log2_hist(const Log2Histogram& hist) {
  const auto& slots = hist.slots();
  int last = -1;
  uint64_t max_count = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i]) last = static_cast<int>(i);
    max_count = std::max(max_count, slots[i]);
  }
  if (last < 0) return {};
  bool narrow = last <= 32;
  int stars_max = narrow ? 40 : 20;
  int width = narrow ? 10 : 20;
  std::string out =
      fmt::format("{:>{}}{:<{}} : count    distribution\n", "", narrow ? 5 : 15, hist.unit(), narrow ? 19 : 29);
  for (int i = 0; i <= last; ++i) {
    uint64_t low = Log2Histogram::slot_low(static_cast<size_t>(i));
    uint64_t high = Log2Histogram::slot_high(static_cast<size_t>(i));
    uint64_t count = slots[static_cast<size_t>(i)];
    int stars = max_count ? static_cast<int>(count * static_cast<uint64_t>(stars_max) / max_count) : 0;
    out += fmt::format("{:>{}} -> {:<{}} : {:<8} |{:<{}}|\n", low, width, high, width, count,
                       std::string(static_cast<size_t>(stars), '*'), stars_max);
  }
  return out;
}

}  // namespace slowburn
