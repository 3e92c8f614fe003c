#include "stats/log2_hist.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace slowburn {

Log2Histogram::Log2Histogram(std::string unit, size_t slot_count) : unit_(std::move(unit)), slots_(slot_count, 0) {}

size_t Log2Histogram::slot_of(uint64_t value, size_t slot_count) {
  size_t slot = value == 0 ? 0 : static_cast<size_t>(std::bit_width(value) - 1);
  return slot >= slot_count ? slot_count - 1 : slot;
}

void Log2Histogram::add(uint64_t value, uint64_t times) { slots_[slot_of(value, slots_.size())] += times; }

void Log2Histogram::add_slot_count(size_t slot, uint64_t count) {
  slots_[slot < slots_.size() ? slot : slots_.size() - 1] += count;
}

void Log2Histogram::merge(const Log2Histogram& other) {
  for (size_t slot = 0; slot < other.slots_.size(); ++slot) add_slot_count(slot, other.slots_[slot]);
}

uint64_t Log2Histogram::count() const {
  uint64_t total = 0;
  for (uint64_t c : slots_) total += c;
  return total;
}

uint64_t Log2Histogram::slot_low(size_t slot) { return slot == 0 ? 0 : (uint64_t{1} << slot); }

uint64_t Log2Histogram::slot_high(size_t slot) { return (uint64_t{1} << (slot + 1)) - 1; }

std::optional<uint64_t> Log2Histogram::quantile_bound(double q) const {
  uint64_t total = count();
  if (total == 0) return std::nullopt;
  // Nearest rank: the ceil(q * total)-th value, at least the first.
  uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(total))));
  uint64_t seen = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    seen += slots_[i];
    if (seen >= rank) return slot_high(i);
  }
  return slot_high(slots_.size() - 1);
}

}  // namespace slowburn
