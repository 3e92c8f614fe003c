// The log2 histogram: slot 0 holds values 0 and 1, slot k >= 1 holds
// [2^k, 2^(k+1)); the last slot also holds everything above it. The same
// layout as the kernel side (bpf/bits.bpf.h) and libbpf-tools.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slowburn {

class Log2Histogram {
 public:
  // unit: what one count of a value means ("usecs", "nsecs", "bytes").
  explicit Log2Histogram(std::string unit, size_t slot_count = 40);

  static size_t slot_of(uint64_t value, size_t slot_count);

  void add(uint64_t value, uint64_t times = 1);
  // Adds a raw slot count (e.g. from one CPU's copy of a kernel histogram);
  // a slot past our last folds into the last, as the kernel clamps.
  void add_slot_count(size_t slot, uint64_t count);
  void merge(const Log2Histogram& other);

  uint64_t count() const;
  // The upper bound of the slot holding the q-quantile (q in [0,1]): "p99 <=
  // this"; nullopt when empty.
  std::optional<uint64_t> quantile_bound(double q) const;
  const std::vector<uint64_t>& slots() const { return slots_; }
  const std::string& unit() const { return unit_; }
  // Inclusive value range of a slot, as libbpf-tools prints it.
  static uint64_t slot_low(size_t slot);
  static uint64_t slot_high(size_t slot);

 private:
  std::string unit_;
  std::vector<uint64_t> slots_;
};

}  // namespace slowburn
