// The change of a hardware counter between two readings, told apart from
// a wrap, a reset and saturation. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace slowburn {

enum class DeltaKind {
  normal,     // cur >= prev
  wrapped,    // a 32- or 64-bit counter rolled over: delta counts across the wrap
  reset,      // went down without being near a width limit: cleared (driver reload, NIC reset); delta = cur
  saturated,  // an InfiniBand PMA error counter stuck at its maximum: further errors are invisible
};

struct CounterDelta {
  uint64_t delta = 0;
  DeltaKind kind = DeltaKind::normal;
};

// `saturation_max`: the value at which the counter stops (IB PMA counters
// of 4, 8 or 16 bits stop rather than wrap); nullopt for counters that wrap.
//
// A decrease is a wrap only when the previous value was in the top half of
// a 32-bit (mlx5 firmware queue counters) or 64-bit range, else a reset:
// a reset near 2^31 would be misread as a wrap, and costs one interval's
// delta at worst.
CounterDelta counter_delta(uint64_t prev, uint64_t cur, std::optional<uint64_t> saturation_max = std::nullopt);

// The maximum of the standard InfiniBand port counters that saturate
// (IBA 16.1.3.5 PortCounters: symbol_error 16 bits, link_downed 8, ...);
// nullopt for the others.
std::optional<uint64_t> ib_counter_saturation(std::string_view name);

}  // namespace slowburn
