// A session's align and judge stages: each call to its job's detector, with
// the communicator it ran on. Ranks of different jobs on one node never wait
// for each other. Live, a registry names each call's communicator; a
// replayed recording arrives with its communicators named (analyze), and
// goes through the same judges.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/comm_registry.h"
#include "detect/causes.h"
#include "detect/straggler.h"
#include "engine/call_stream.h"

namespace slowburn {

class JobJudges {
 public:
  // Live: `registry` names the calls' communicators.
  JobJudges(const DetectorConfig& config, const std::vector<const ProbeSpec*>& probes,
            const std::vector<RankIdentity>& ranks, CommRegistry registry);
  // Replay: every call comes with its communicator (on_named_call).
  JobJudges(const DetectorConfig& config, const std::vector<const ProbeSpec*>& probes,
            const std::vector<RankIdentity>& ranks);

  // The probe is attached in the rank: it takes part in that probe's alignment.
  void attached(uint32_t probe_id, int32_t pid);
  // A live call: its communicator named by the registry (lifecycle calls
  // teach the registry, they are not judged).
  void on_call(const CallEvent& call);
  // A call whose communicator is known (a recording's).
  void on_named_call(const CallEvent& call, const CallComm& comm);
  // Also hands every collective call, with its communicator, to `tap` (a
  // recording), before it is judged.
  using CallTap = std::function<void(const CallEvent&, const CallComm&)>;
  void set_call_tap(CallTap tap) { tap_ = std::move(tap); }
  // And every reading of the calls in flight (at `now_ns`), communicators named.
  using InFlightTap = std::function<void(uint64_t now_ns, const std::vector<InFlightCall>&)>;
  void set_in_flight_tap(InFlightTap tap) { in_flight_tap_ = std::move(tap); }
  DetectorOutput advance(uint64_t now_ns);
  // Calls in flight (the kernel's, or a recording's), their communicators
  // named by the registry where they are not yet.
  // `kernel` reads the ranks' processes (the engine's ProcessWatch, or a
  // recording's states).
  DetectorOutput check_in_flight(uint64_t now_ns, std::vector<InFlightCall> calls,
                                 const StragglerDetector::ProcessLookup& kernel = {});
  // A node event: where it is evidence about a rank's data path
  // (detect/causes.h data_path_cause) and concerns a rank of a job here, the
  // inside test of that job's detector weighs it (detect/inside.h). `ts_ns`:
  // the event's time on the calls' clock.
  void device_event(const DeviceEvent& event, uint64_t ts_ns, const ConcernsCulprit& concerns = event_names_rank);

  // The rank exited: after its last records were consumed. `end`: how, where
  // the kernel said.
  DetectorOutput retire(int32_t pid, const Drained& drained, const std::optional<ProcessEnd>& end = std::nullopt);
  DetectorOutput finish(uint64_t now_ns);
  std::vector<std::string> take_notes() { return registry_ ? registry_->take_notes() : std::vector<std::string>{}; }
  // Sees every aligned instance of a synchronizing collective (analyze's clock check).
  void set_instance_tap(const StragglerDetector::InstanceTap& tap);

  SessionVerdict verdict(uint64_t now_ns) const;
  std::vector<Finding> findings() const;
  DetectorCounters counters() const;
  // One job's (zero for a job it does not judge).
  DetectorCounters counters(const std::string& job) const;
  // Live only (a replay's communicators are its caller's).
  std::vector<CommunicatorRef> communicators() const {
    return registry_ ? registry_->communicators() : std::vector<CommunicatorRef>{};
  }
  CommunicatorRef communicator_of(int32_t pid, CommBackend backend, uint64_t handle) {
    return registry_ ? registry_->lookup(pid, backend, handle) : nullptr;
  }

 private:
  StragglerDetector* for_pid(uint32_t pid);
  template <typename F>
  DetectorOutput each(F&& f);

  std::map<std::string, std::unique_ptr<StragglerDetector>> by_job_;
  std::map<int32_t, StragglerDetector*> by_pid_;
  std::vector<RankIdentity> ranks_;
  std::map<uint32_t, const ProbeSpec*> probes_;
  std::optional<CommRegistry> registry_;
  CallTap tap_;
  InFlightTap in_flight_tap_;
};

}  // namespace slowburn
