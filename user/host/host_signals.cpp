#include "host/host_signals.h"

namespace slowburn {

const char* off_cpu_words(OffCpuReason reason) {
  switch (reason) {
    case OffCpuReason::runnable:
      return "waiting for a CPU";
    case OffCpuReason::io:
      return "blocked on I/O";
    case OffCpuReason::fault:
      return "in page faults";
    case OffCpuReason::futex:
      return "in futex waits";
    case OffCpuReason::sleep:
      return "asleep";
  }
  return "off the CPU";
}

SchedSums SchedSums::minus(const SchedSums& earlier) const {
  auto d = [](uint64_t now, uint64_t then) { return now > then ? now - then : 0; };
  SchedSums out;
  out.oncpu_ns = d(oncpu_ns, earlier.oncpu_ns);
  for (size_t i = 0; i < kOffCpuReasons; ++i) out.offcpu_ns[i] = d(offcpu_ns[i], earlier.offcpu_ns[i]);
  out.involuntary_switches = d(involuntary_switches, earlier.involuntary_switches);
  out.voluntary_switches = d(voluntary_switches, earlier.voluntary_switches);
  out.runq_waits = d(runq_waits, earlier.runq_waits);
  const auto& now_slots = runq_ns.slots();
  const auto& then_slots = earlier.runq_ns.slots();
  for (size_t s = 0; s < now_slots.size(); ++s)
    out.runq_ns.add_slot_count(s, d(now_slots[s], s < then_slots.size() ? then_slots[s] : 0));
  return out;
}

}  // namespace slowburn
