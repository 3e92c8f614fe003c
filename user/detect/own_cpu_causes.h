// When the node said each rank's own cgroup throttled it (detect/causes.h,
// own_cpu_cause_of), as spans of time, for the scheduler's-choice rule: a
// minor finding of a rank throttled over at least half of the stretch it
// was judged on is the rank's own, not the scheduler's choice. A rank
// throttled once (at its start, loading data) is not exempt for the rest
// of a session or a service's days. The host monitor says a cause that
// holds again every 30 s (HostMonitorOptions::refresh_s): sayings that far
// apart are one span, and the latest reaches 30 s on while it may still
// hold (its next saying not due yet), no further. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace slowburn {

// The node said the rank's own cgroup throttled it over [from_ns, to_ns]:
// live, or at the session's end over the whole of it (whole_session).
struct OwnCpuCause {
  int32_t pid = 0;
  uint64_t from_ns = 0;
  uint64_t to_ns = 0;
  bool whole_session = false;
};

class OwnCpuCauses {
 public:
  // The cause judged of the rank over [from_ns, to_ns]. A whole session's
  // saying of a rank said live already places nothing: the live sayings
  // placed it in time (a rank throttled for its first minute of four is
  // throttled in a quarter of the session's periods, and said so at its end).
  void said(const OwnCpuCause& cause);
  // Said over at least half of [from_ns, to_ns].
  bool over_half(int32_t pid, uint64_t from_ns, uint64_t to_ns) const;
  void forget(int32_t pid) { spans_.erase(pid); }

 private:
  std::map<int32_t, std::vector<std::pair<uint64_t, uint64_t>>> spans_;  // per rank, disjoint, in order
};

}  // namespace slowburn
