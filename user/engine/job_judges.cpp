#include "engine/job_judges.h"

#include <algorithm>

namespace slowburn {

namespace {
void append(DetectorOutput& into, DetectorOutput&& from) {
  for (auto& n : from.notes) into.notes.push_back(std::move(n));
  for (auto& w : from.windows) into.windows.push_back(std::move(w));
  for (auto& f : from.findings) into.findings.push_back(std::move(f));
}
}  // namespace

JobJudges::JobJudges(const DetectorConfig& config, const std::vector<const ProbeSpec*>& probes,
                     const std::vector<RankIdentity>& ranks, CommRegistry registry)
    : JobJudges(config, probes, ranks) {
  registry_ = std::move(registry);
  for (const RankIdentity& rank : ranks) registry_->add_rank(rank);
}

JobJudges::JobJudges(const DetectorConfig& config, const std::vector<const ProbeSpec*>& probes,
                     const std::vector<RankIdentity>& ranks) {
  std::vector<ProbeInfo> infos;
  for (const ProbeSpec* spec : probes) {
    probes_[spec->id] = spec;
    infos.push_back({spec->id, spec->name, spec->kind});
  }
  for (const RankIdentity& rank : ranks) {
    auto& detector = by_job_[rank.job];
    if (!detector) detector = std::make_unique<StragglerDetector>(config, infos);
    detector->add_rank(rank);
    by_pid_[rank.pid] = detector.get();
  }
  ranks_ = ranks;
}

StragglerDetector* JobJudges::for_pid(uint32_t pid) {
  auto it = by_pid_.find(static_cast<int32_t>(pid));
  return it == by_pid_.end() ? nullptr : it->second;
}

template <typename F>
DetectorOutput JobJudges::each(F&& f) {
  DetectorOutput out;
  for (auto& [job, detector] : by_job_) append(out, f(*detector));
  return out;
}

void JobJudges::attached(uint32_t probe_id, int32_t pid) {
  if (StragglerDetector* d = for_pid(static_cast<uint32_t>(pid))) d->add_participant(probe_id, pid);
}

void JobJudges::on_call(const CallEvent& call) {
  auto spec = probes_.find(call.probe_id);
  if (!registry_ || !for_pid(call.pid) || spec == probes_.end()) return;
  if (spec->second->kind == CallKind::comm_lifecycle) {
    registry_->on_lifecycle(call, *spec->second);
    return;
  }
  on_named_call(call, registry_->classify(call, *spec->second));
}

void JobJudges::on_named_call(const CallEvent& call, const CallComm& comm) {
  StragglerDetector* detector = for_pid(call.pid);
  if (!detector) return;
  if (tap_) tap_(call, comm);
  detector->ingest(call, comm);
}

void JobJudges::device_event(const DeviceEvent& event, uint64_t ts_ns, const ConcernsCulprit& concerns) {
  for (auto& [pid, evidence] : transport_evidence_of(event, ts_ns, ranks_, concerns))
    if (StragglerDetector* d = for_pid(static_cast<uint32_t>(pid))) d->transport_evidence(pid, std::move(evidence));
  for (const OwnCpuCause& cause : own_cpu_cause_of(event, ts_ns, ranks_, concerns))
    if (StragglerDetector* d = for_pid(static_cast<uint32_t>(cause.pid))) d->own_cpu_cause(cause);
}

void JobJudges::set_instance_tap(const StragglerDetector::InstanceTap& tap) {
  for (auto& [job, detector] : by_job_) detector->set_instance_tap(tap);
}

DetectorOutput JobJudges::advance(uint64_t now_ns) {
  return each([&](StragglerDetector& d) { return d.advance(now_ns); });
}

DetectorOutput JobJudges::check_in_flight(uint64_t now_ns, std::vector<InFlightCall> calls,
                                          const StragglerDetector::ProcessLookup& kernel) {
  for (InFlightCall& call : calls) {
    auto spec = probes_.find(call.probe_id);
    if (!registry_ || call.communicator || spec == probes_.end()) continue;
    CommBackend backend = call.comm ? spec->second->backend : CommBackend::none;
    call.communicator = registry_->lookup(static_cast<int32_t>(call.tgid), backend, call.comm);
  }
  if (in_flight_tap_) in_flight_tap_(now_ns, calls);
  return each([&](StragglerDetector& d) { return d.check_in_flight(now_ns, calls, kernel); });
}

DetectorOutput JobJudges::retire(int32_t pid, const Drained&, const std::optional<ProcessEnd>& end) {
  DetectorOutput out;
  if (StragglerDetector* d = for_pid(static_cast<uint32_t>(pid))) d->remove_rank(pid, out, end);
  if (registry_) registry_->remove_rank(pid);
  return out;
}

DetectorOutput JobJudges::finish(uint64_t now_ns) {
  return each([&](StragglerDetector& d) { return d.finish(now_ns); });
}

SessionVerdict JobJudges::verdict(uint64_t now_ns) const {
  // Judged when some job could be; a job that ended before it could is said.
  SessionVerdict all;
  for (const auto& [job, detector] : by_job_) {
    SessionVerdict v = detector->verdict(now_ns);
    all.judged = all.judged || v.judged;
    if (!v.judged)
      all.reason += (all.reason.empty() ? "" : "; ") + (by_job_.size() > 1 ? "job " + job + ": " : "") + v.reason;
    all.instances += v.instances;
    all.windows_judged += v.windows_judged;
    for (auto& f : v.stragglers) all.stragglers.push_back(std::move(f));
    for (auto& f : v.hangs) all.hangs.push_back(std::move(f));
    for (auto& f : v.failures) all.failures.push_back(std::move(f));
    for (auto& p : v.pending_hangs) all.pending_hangs.push_back(std::move(p));
    for (auto& e : v.episodes) all.episodes.push_back(std::move(e));
    for (auto& w : v.withheld) all.withheld.push_back(std::move(w));
  }
  std::stable_sort(all.failures.begin(), all.failures.end(),
                   [](const Finding& a, const Finding& b) { return a.ended_ns < b.ended_ns; });
  return all;
}

std::vector<Finding> JobJudges::findings() const {
  std::vector<Finding> all;
  for (const auto& [job, detector] : by_job_)
    for (Finding& f : detector->findings()) all.push_back(std::move(f));
  return all;
}

DetectorCounters JobJudges::counters(const std::string& job) const {
  auto it = by_job_.find(job);
  return it == by_job_.end() ? DetectorCounters{} : it->second->counters();
}

DetectorCounters JobJudges::counters() const {
  DetectorCounters sum;
  for (const auto& [job, detector] : by_job_) sum += detector->counters();
  return sum;
}

}  // namespace slowburn
