// Real jobs traced in process, for the scenario tests: an MPI job of the
// bundled workload, a trace of its ranks with the session's verdict, and
// what the kernel's schedstat says of each rank over the trace (never
// slowburn's own numbers: the tests' independent reading).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "demo/mpi_job.h"
#include "detect/straggler.h"
#include "support/temp_dir.h"
#include "trace/trace_session.h"

namespace slowburn::testing {

struct Traced {
  std::set<int> named;  // the verdict's stragglers
  TraceResult result;
  std::string summaries;  // every finding and episode, for failure messages
  // Each traced pid's run-queue wait over the trace, as a share of its span:
  // read from the kernel's schedstat, not from slowburn.
  std::map<int32_t, double> runq_share;
  double span_ns = 0;  // the trace's wall-clock span those shares are of
  // The node's CPU time over the trace taken by anything but the traced
  // ranks and this process (the tracer), and by the hypervisor (steal), as
  // a share of all of it: how busy the node was beside the job (nullopt
  // where a traced process ended during the trace). Recorded as the test's
  // property others_cpu_share.
  std::optional<double> others_cpu_share;
  std::string json;  // every JSON line of the session (window lines too)
};

// A node busy beside the job: at least 5% of its CPU time to other processes
// or steal over the trace (idle: ~0.5%). Unknown (a traced process ended)
// counts as idle, so a test asserts all it would there.
constexpr double kBusyNodeShare = 0.05;
inline bool node_was_busy(const std::optional<double>& others_cpu_share) {
  return others_cpu_share.value_or(0) >= kBusyNodeShare;
}
inline bool node_was_busy(const Traced& t) { return node_was_busy(t.others_cpu_share); }

// The time `pid` has waited in run queues, in ns (schedstat's second field).
uint64_t runq_wait_ns(int32_t pid);
// The node's CPU time from /proc/stat's first line, in clock ticks: busy
// (steal included: the hypervisor ran something else) and in all.
struct NodeTicks {
  uint64_t busy = 0, total = 0;
};
NodeTicks node_ticks();
// A process's CPU time (utime + stime), in clock ticks; 0 once it is gone.
uint64_t process_ticks(int32_t pid);

// How busy the node is beside a job: from construction, the share of the
// node's CPU time (steal included) that went to anything but `pids` and this
// process; nullopt where one of them ended meanwhile.
class CpuWatch {
 public:
  explicit CpuWatch(std::vector<int32_t> pids);
  std::optional<double> others_share() const;

 private:
  std::vector<int32_t> pids_;
  NodeTicks node_;
  std::map<int32_t, uint64_t> ours_;
};
// Records `share` as the running test's property others_cpu_share.
void record_others_cpu_share(const std::optional<double>& share);

// Traces `pids` in this process for `seconds` (hardware and RDMA sources off).
Traced trace(const std::vector<int32_t>& pids, const std::vector<std::string>& probes, double seconds,
             uint64_t window_ns = DetectorConfig{}.window_ns);
// `on_call`: sees every traced collective call as the session judges it
// (a test that starts its fault once the job is traced).
Traced trace(const std::vector<int32_t>& pids, const std::vector<std::string>& probes, double seconds,
             const DetectorConfig& detector,
             const std::function<void(const CallEvent&, const CallComm&)>& on_call = {});

// build/libexec/NAME, when built.
std::optional<std::string> workload(const std::string& name);

// An MPI job of the bundled workload, optionally laid out in
// tensor-parallel groups of `tp`; `extra`: more of the workload's options.
std::optional<MpiJob> mpi_job(int ranks, int tp, int slow_rank, const TempDir& dir, double slowdown = 1.5,
                              double compute_us = 3000, const std::vector<std::string>& extra = {});
// The same workload built against MPICH (build/tests/targets/mpich-workload)
// under hydra (mpirun.mpich).
std::optional<MpiJob> mpich_job(int ranks, int tp, int slow_rank, const TempDir& dir, double slowdown = 1.5,
                                const std::vector<std::string>& extra = {});

// The pid of `rank` among `ranks`, 0 when none.
int32_t pid_of_rank(const std::vector<RankIdentity>& ranks, int rank);

// Every thread of `pid` (and those it starts later: they inherit it) on `cpu`.
bool pin(int32_t pid, int cpu);

// The verdict's finding on `rank`, or nullptr.
const Finding* named_finding(const Traced& t, int rank);
// Every host.* event of the session, one per line (for failure messages).
std::string host_events(const Traced& t);
// `rank`'s window lines, one compact row each, with the lane's time after
// its last arrival and the inside test's reading (for failure messages:
// which of the rule's conditions failed).
std::string window_rows(const Traced& t, int rank);

}  // namespace slowburn::testing
