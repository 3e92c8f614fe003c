// The clocks slowburn reads: CLOCK_MONOTONIC is bpf_ktime_get_ns()'s clock,
// so user-space deadlines and kernel timestamps compare directly.
#pragma once

#include <cstdint>

namespace slowburn {

// CLOCK_MONOTONIC in ns.
uint64_t monotonic_ns();
// CLOCK_REALTIME - CLOCK_MONOTONIC, for putting kernel timestamps on the wall clock.
int64_t wall_offset_ns();
// CLOCK_REALTIME in seconds since the epoch.
double unix_now_s();

}  // namespace slowburn
