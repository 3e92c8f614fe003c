// Work due every period of a session's loop (the detector's advance, the
// live table, liveness checks, the service's interval and window), on the
// monotonic clock the loop passes in.
#pragma once

#include <cstdint>

namespace slowburn {

class Periodic {
 public:
  // First due one period after start_ns.
  Periodic(uint64_t period_ns, uint64_t start_ns) : period_ns_(period_ns), next_ns_(start_ns + period_ns) {}

  // True once per period; late, it does not burst to catch up.
  bool due(uint64_t now_ns) {
    if (now_ns < next_ns_) return false;
    next_ns_ += period_ns_;
    if (next_ns_ <= now_ns) next_ns_ = now_ns + period_ns_;
    return true;
  }
  uint64_t period_ns() const { return period_ns_; }

 private:
  uint64_t period_ns_;
  uint64_t next_ns_;
};

}  // namespace slowburn
