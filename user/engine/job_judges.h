// Stages 5 and 6 of a session (align, judge): each call to its job's
// detector, with the communicator the registry says it ran on. Ranks of
// different jobs on one node never wait for each other. A recording
// replays through here as a live session does.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm_registry.h"
#include "detect/straggler.h"
#include "engine/call_stream.h"

namespace slowburn {

class JobJudges {
 public:
  JobJudges(const DetectorConfig& config, const std::vector<const ProbeSpec*>& probes,
            const std::vector<RankIdentity>& ranks, CommRegistry registry);

  // The probe is attached in the rank: it takes part in that probe's alignment.
  void attached(uint32_t probe_id, int32_t pid);
  void on_call(const CallEvent& call);
  // Also hands every collective call, with its communicator, to `tap` (a
  // recording), before it is judged.
  using CallTap = std::function<void(const CallEvent&, const CallComm&)>;
  void set_call_tap(CallTap tap) { tap_ = std::move(tap); }
  // And every reading of the calls in flight (at `now_ns`), communicators named.
  using InFlightTap = std::function<void(uint64_t now_ns, const std::vector<InFlightCall>&)>;
  void set_in_flight_tap(InFlightTap tap) { in_flight_tap_ = std::move(tap); }
  DetectorOutput advance(uint64_t now_ns);
  // Calls the kernel reports in flight, with their communicators named.
  DetectorOutput check_in_flight(uint64_t now_ns, std::vector<InFlightCall> calls);
  // The rank exited: after its last records were consumed.
  DetectorOutput retire(int32_t pid, const Drained& drained);
  DetectorOutput finish(uint64_t now_ns);
  std::vector<std::string> take_notes() { return registry_.take_notes(); }

  SessionVerdict verdict(uint64_t now_ns) const;
  std::vector<Finding> findings() const;
  DetectorCounters counters() const;
  std::vector<CommunicatorRef> communicators() const { return registry_.communicators(); }
  CommunicatorRef communicator_of(int32_t pid, CommBackend backend, uint64_t handle) {
    return registry_.lookup(pid, backend, handle);
  }
  const CommRegistryCounters& comm_counters() const { return registry_.counters(); }

 private:
  StragglerDetector* for_pid(uint32_t pid);
  template <typename F>
  DetectorOutput each(F&& f);

  std::map<std::string, std::unique_ptr<StragglerDetector>> by_job_;
  std::map<int32_t, StragglerDetector*> by_pid_;
  std::map<uint32_t, const ProbeSpec*> probes_;
  CommRegistry registry_;
  CallTap tap_;
  InFlightTap in_flight_tap_;
};

}  // namespace slowburn
