#include "core/clock.h"

#include <time.h>

namespace slowburn {

namespace {
int64_t read_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

uint64_t monotonic_ns() { return static_cast<uint64_t>(read_ns(CLOCK_MONOTONIC)); }

int64_t wall_offset_ns() { return read_ns(CLOCK_REALTIME) - read_ns(CLOCK_MONOTONIC); }

double unix_now_s() { return static_cast<double>(read_ns(CLOCK_REALTIME)) / 1e9; }

}  // namespace slowburn
