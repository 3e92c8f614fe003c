// The probe mode's counts for one (process, probe), as the kernel keeps them
// (bpf/collagg.bpf.c): cumulative sums the service differences per interval
// and per window. One type for the reading and for the window's difference.
#pragma once

#include <cstdint>

namespace slowburn {

struct AggCounts {
  uint64_t calls = 0;
  uint64_t wait_ns = 0;           // sum of exit - entry
  uint64_t gaps = 0;              // calls with a previous traced return in the thread
  uint64_t gap_ns = 0;            // sum of entry - that return
  uint64_t arrivals = 0;          // synchronizing calls placed in an instance
  uint64_t lateness_ns = 0;       // sum of entry - the instance's first arrival
  uint64_t lasts = 0;             // instances this process arrived last in
  uint64_t blame_ns = 0;          // sum of (last - second-to-last arrival) when last
  uint64_t blame_leaving_ns = 0;  // of that: from leaving its previous collective later than usual
  uint64_t instances = 0;         // instances closed by one of its returns
  uint64_t seq_events = 0;        // instances it was last in with the sequential test's event (collagg.h)
  // Synchronizing calls with the thread's CPU times: their count and wait,
  // the time on a CPU and waiting for one inside them (runq_calls: those
  // whose wait the kernel keeps).
  uint64_t cpu_calls = 0;
  uint64_t cpu_wait_ns = 0;
  uint64_t oncpu_ns = 0;
  uint64_t runq_calls = 0;
  uint64_t runq_ns = 0;

  // What accrued since `earlier`. A sum below its earlier value means the
  // kernel entry was dropped and made again: it counts from zero.
  AggCounts since(const AggCounts& earlier) const {
    auto d = [](uint64_t now, uint64_t then) { return now >= then ? now - then : now; };
    return {d(calls, earlier.calls),
            d(wait_ns, earlier.wait_ns),
            d(gaps, earlier.gaps),
            d(gap_ns, earlier.gap_ns),
            d(arrivals, earlier.arrivals),
            d(lateness_ns, earlier.lateness_ns),
            d(lasts, earlier.lasts),
            d(blame_ns, earlier.blame_ns),
            d(blame_leaving_ns, earlier.blame_leaving_ns),
            d(instances, earlier.instances),
            d(seq_events, earlier.seq_events),
            d(cpu_calls, earlier.cpu_calls),
            d(cpu_wait_ns, earlier.cpu_wait_ns),
            d(oncpu_ns, earlier.oncpu_ns),
            d(runq_calls, earlier.runq_calls),
            d(runq_ns, earlier.runq_ns)};
  }
};

}  // namespace slowburn
