// A barrier-synchronised job simulated call by call, and the helpers that
// feed it to the straggler detector as a session does: shared by the
// detector's and the verdict's unit tests.
#pragma once

#include <algorithm>
#include <functional>
#include <random>
#include <set>
#include <vector>

#include "detect/straggler.h"

namespace slowburn::testing {

constexpr uint32_t kProbe = 1;  // mpi.allreduce

// A barrier-synchronised job in simulation: each step every rank computes,
// then enters the collective; the collective releases all ranks together
// once the last one arrived.
struct SyntheticJob {
  int ranks = 4;
  std::function<double(int rank, int step)> compute_ns = [](int, int) { return 3e6; };
  // Extra time a rank takes to leave the collective of a step (descheduled
  // inside it): it then arrives late at the next one without computing longer.
  std::function<double(int rank, int step)> leave_ns = [](int, int) { return 0.0; };
  double noise_ns = 50e3;
  double collective_ns = 50e3;
  // Extra time the collective of a step takes after its last arrival (a
  // lost frame's retransmission timeout: every member waits for it).
  std::function<double(int step)> stall_ns = [](int) { return 0.0; };
  uint64_t seed = 1;

  std::vector<CallEvent> run(int steps, int first_step = 0) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0, noise_ns);
    std::uniform_real_distribution<double> exit_jitter(0, 20e3);
    if (prev_exit.empty()) prev_exit.assign(static_cast<size_t>(ranks), 1e9);
    std::vector<CallEvent> events;
    for (int s = first_step; s < first_step + steps; ++s) {
      std::vector<double> entry(static_cast<size_t>(ranks));
      for (int r = 0; r < ranks; ++r)
        entry[static_cast<size_t>(r)] =
            prev_exit[static_cast<size_t>(r)] + std::max(1e3, compute_ns(r, s) + (noise_ns ? noise(rng) : 0));
      double release = *std::max_element(entry.begin(), entry.end()) + collective_ns + stall_ns(s);
      std::vector<CallEvent> step_events;
      for (int r = 0; r < ranks; ++r) {
        double exit = release + (noise_ns ? exit_jitter(rng) : 0) + leave_ns(r, s);
        CallEvent e;
        e.pid = e.tid = static_cast<uint32_t>(pid(r));
        e.probe_id = kProbe;
        e.seq = static_cast<uint64_t>(s + 1);
        e.entry_ns = static_cast<uint64_t>(entry[static_cast<size_t>(r)]);
        e.exit_ns = static_cast<uint64_t>(exit);
        prev_exit[static_cast<size_t>(r)] = exit;
        step_events.push_back(e);
      }
      std::sort(step_events.begin(), step_events.end(),
                [](const CallEvent& a, const CallEvent& b) { return a.exit_ns < b.exit_ns; });
      events.insert(events.end(), step_events.begin(), step_events.end());
    }
    return events;
  }

  static int32_t pid(int rank) { return 1000 + rank; }
  std::vector<double> prev_exit;
};

// A communication-bound job of 4 ranks, every one on time (0.5 ms of
// compute), whose collective takes 3 ms after its last arrival for 1500
// steps, then 9 ms for 600 (a lossy link, a congested fabric). No CPU times.
struct SlowStretch {
  std::vector<CallEvent> events;
  uint64_t slow_from_ns = 0;  // the last healthy call's exit
};
inline SlowStretch collective_slows() {
  SyntheticJob job;
  job.compute_ns = [](int, int) { return 0.5e6; };
  job.collective_ns = 3e6;
  SlowStretch out;
  out.events = job.run(1500);
  out.slow_from_ns = out.events.back().exit_ns;
  job.collective_ns = 9e6;
  std::vector<CallEvent> slower = job.run(600, 1500);
  out.events.insert(out.events.end(), slower.begin(), slower.end());
  return out;
}

inline std::vector<RankIdentity> identities(int ranks) {
  std::vector<RankIdentity> ids;
  for (int r = 0; r < ranks; ++r) {
    RankIdentity id;
    id.pid = SyntheticJob::pid(r);
    id.rank = r;
    id.job = "test";
    ids.push_back(id);
  }
  return ids;
}

// Every rank on one communicator, not told apart: how calls without a
// communicator (or before communicators were known) are judged.
inline CallComm job_comm() {
  static CommunicatorRef comm = [] {
    auto info = std::make_shared<CommunicatorInfo>();
    info->id = 1;
    info->key = "job:test";
    info->label = "all ranks";
    return CommunicatorRef(info);
  }();
  return {comm, std::nullopt, 0, false};
}

struct Feed {
  std::vector<Finding> findings;  // as raised
  std::vector<WindowReport> windows;
  std::vector<std::string> notes;
};

// Feeds events in order, advancing the detector's clock as a session does.
inline Feed feed(StragglerDetector& d, const std::vector<CallEvent>& events, bool finish = true,
                 const CallComm& comm = job_comm()) {
  Feed run;
  auto take = [&](DetectorOutput out) {
    run.findings.insert(run.findings.end(), out.findings.begin(), out.findings.end());
    run.windows.insert(run.windows.end(), out.windows.begin(), out.windows.end());
    run.notes.insert(run.notes.end(), out.notes.begin(), out.notes.end());
  };
  uint64_t next_advance = 0;
  for (const CallEvent& e : events) {
    d.ingest(e, comm);
    if (e.exit_ns >= next_advance) {
      take(d.advance(e.exit_ns));
      next_advance = e.exit_ns + 100'000'000;
    }
  }
  if (finish && !events.empty()) take(d.finish(events.back().exit_ns));
  return run;
}

inline StragglerDetector make_detector(int ranks, DetectorConfig config = {}) {
  StragglerDetector d(config, {{kProbe, "mpi.allreduce", CallKind::synchronizing}});
  for (const RankIdentity& id : identities(ranks)) {
    d.add_rank(id);
    d.add_participant(kProbe, id.pid);
  }
  return d;
}

// Each call of rank r spent `runq_share(r)` of its time runnable but off
// a CPU, the rest on one.
inline void set_cpu_waits(std::vector<CallEvent>& events, const std::function<double(int)>& runq_share) {
  for (CallEvent& e : events) {
    double wait = runq_share(static_cast<int>(e.pid) - SyntheticJob::pid(0));
    e.runq_ns = static_cast<uint64_t>(wait * static_cast<double>(e.duration_ns()));
    e.oncpu_ns = e.duration_ns() - *e.runq_ns;
  }
}

inline std::set<int> culprits(const std::vector<Finding>& findings) {
  std::set<int> ranks;
  for (const Finding& f : findings) ranks.insert(f.culprit.rank);
  return ranks;
}

}  // namespace slowburn::testing
