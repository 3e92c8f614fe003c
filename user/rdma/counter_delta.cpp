#include "rdma/counter_delta.h"

#include <array>
#include <utility>

namespace slowburn {

CounterDelta counter_delta(uint64_t prev, uint64_t cur, std::optional<uint64_t> saturation_max) {
  if (saturation_max && prev >= *saturation_max && cur >= *saturation_max) return {0, DeltaKind::saturated};
  if (cur >= prev) return {cur - prev, DeltaKind::normal};
  constexpr uint64_t k32 = uint64_t{1} << 32;
  if (prev >= k32 / 2 && prev < k32) return {k32 - prev + cur, DeltaKind::wrapped};
  if (prev >= (uint64_t{1} << 63)) return {(~uint64_t{0} - prev) + cur + 1, DeltaKind::wrapped};
  return {cur, DeltaKind::reset};
}

std::optional<uint64_t> ib_counter_saturation(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, uint64_t>, 12> kWidths = {{
      {"symbol_error", 0xffff},
      {"link_error_recovery", 0xff},
      {"link_downed", 0xff},
      {"port_rcv_errors", 0xffff},
      {"port_rcv_remote_physical_errors", 0xffff},
      {"port_rcv_switch_relay_errors", 0xffff},
      {"port_xmit_discards", 0xffff},
      {"port_xmit_constraint_errors", 0xff},
      {"port_rcv_constraint_errors", 0xff},
      {"local_link_integrity_errors", 0xf},
      {"excessive_buffer_overrun_errors", 0xf},
      {"VL15_dropped", 0xffff},
  }};
  for (const auto& [counter, max] : kWidths)
    if (counter == name) return max;
  return std::nullopt;
}

}  // namespace slowburn
