// The straggler that arrives on time: a rank whose CPU makes every member
// wait inside the collective. Open MPI's and gloo's ranks drive a collective
// from the calling thread; one that wants its CPU and does not get it (its
// cgroup's quota, a busy neighbour on its core) stalls the others' data
// while it sits in the run queue. Its arrival is on time; its evidence is
// what the kernel says of its thread during its calls: time runnable but
// off the CPU, set apart from its peers' in the same calls. Pure: sums in,
// judgements out.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace slowburn {

// One rank's calls on one lane in one window, with the kernel's CPU times.
struct InsideSums {
  uint64_t calls = 0;  // calls with CPU times
  uint64_t duration_ns = 0;
  uint64_t oncpu_ns = 0;
  uint64_t runq_ns = 0;
  bool has_runq = false;  // the kernel keeps run-queue waits (CONFIG_SCHED_INFO)

  void add(uint64_t duration, uint64_t oncpu, std::optional<uint64_t> runq);
};

struct InsideThresholds {
  uint64_t min_calls = 5;
  double min_runq_share = 0.2;  // of its time inside, waiting for a CPU
  // And this much more of it than the peers' median: where every rank
  // waits (more spinning ranks than cores), 60% against 50% is nobody's.
  double runq_excess_share = 0.1;
  // And waiting this many times more per unit of running than the peers'
  // median (odds: 85/15 against 50/50 is 5.7x).
  double versus_peers = 2.0;
  double min_cost_share = 0.1;  // of the window: what the collective waited for it
  // Named by its data path (judge_transport): the lane's time after the
  // last arrival at least this many times its usual,
  double transport_slower = 1.25;
  // or its stalls' time beyond the usual at least this share of the
  // window: a lost frame stalls a few instances for a retransmission
  // timeout (200 ms and more against a usual of ms), the median instance
  // not at all. A stall: an instance at least `stall_times` its usual
  // (noise above the usual is not counted).
  double transport_stalled_share = 0.25;
  double stall_times = 4.0;
  // The node's event holds until it is said again (every 30 s while it
  // does). It weighs in the windows judged after it was said (live, the
  // earlier ones are closed; a replay does the same).
  uint64_t transport_after_ns = 35'000'000'000;
};

struct InsideJudgement {
  int32_t pid = 0;
  double oncpu_share = 0;  // of its time inside, on a CPU
  std::optional<double> runq_share;
  std::optional<double> peers_oncpu_share;  // the other ranks' median
  std::optional<double> peers_runq_share;
  // What the collective waited for it: its run-queue wait beyond the
  // peers' median, no more than the instances spent after their last
  // arrival.
  uint64_t cost_ns = 0;
  double cost_share = 0;  // of the window
  bool apart = false;     // every test holds
  bool cpu_read = true;   // the kernel's CPU times were read (false: named by its transport alone)
  // Named by its data path: what the node said of it (empty: by its CPU).
  std::string transport;
};

// Every rank with CPU times, judged against the others of the same lane.
// `after_last_arrival_ns`: the instances' total time from their last
// arrival to their release; `elapsed_ns`: the window's traced time.
std::vector<InsideJudgement> judge_inside(const std::map<int32_t, InsideSums>& ranks, uint64_t after_last_arrival_ns,
                                          uint64_t elapsed_ns, const InsideThresholds& thresholds = {});

// A rank's windows beside a rank flagged by its data path: its flag cleared
// as held inside by that path, or kept as late of its own.
struct HeldByPath {
  int held = 0;
  int flagged_beside = 0;
};

// A rank the window rule flagged: its blame in the window, and the part of
// it from leaving its previous collective late (held inside it).
struct LateBlame {
  double blame_ns = 0;
  double leaving_ns = 0;
};

// Not apart where the collective waited longer for another rank's arrival
// (a rank the window rule flagged; `late`: pid -> its blame in the window)
// than for this rank's CPU or data path. Against a rank named by its data
// path only the flagged rank's own lateness counts, not what it inherited
// from leaving its previous collective late: a lost frame holds its
// receiver inside that collective until the sender's retransmission, and
// the receiver then arrives late to the next (CI, stop 52: rank 0 flagged
// on a lateness 100% from leaving, 200 ms retransmission timeouts, hid the
// lossy rank 1). On a node with more ranks than CPUs,
// which rank the scheduler leaves off a CPU while they all wait for the
// late one is its choice (CI, stop 50: 4 ranks on 2 CPUs, rank 3 computing
// 2x, rank 2 named inside first, waiting for a CPU 99% of its time in the
// all-gather). A rank starved by a cause of its own is the late one itself,
// or no rank is late.
void outweigh_by_late_arrivals(std::vector<InsideJudgement>& judged, const std::map<int32_t, LateBlame>& late);

// A rank whose data path the node set apart from its peers': its TCP
// sockets retransmitting, its NIC's retransmissions or errors, its link
// down or trained down. The node says it as an event naming the rank
// (host.tcp_retrans, rdma.retrans, ...: detect/causes.h data_path_cause),
// joined to it the way a finding's likely causes are.
struct TransportEvidence {
  uint64_t ts_ns = 0;   // when the node said it
  std::string summary;  // what it said, of the rank ("its TCP sockets ...")
};

// The straggler inside by its data path: a lossy link or NIC slows every
// member's data after the last arrival, not its own CPU. Where nobody's CPU
// is set apart and the lane's time after its last arrival grew to
// transport_slower times its usual (or its stalls took transport_stalled_share
// of the window), the members with evidence in the window
// are named, when they are at most half of them (evidence on most
// members is the fabric's, not a rank's). `excess_ns`: the window's time
// after last arrival beyond the usual; each named rank is charged its part
// of it. `stalled_ns`: the part of it in stalls (instances stall_times
// their usual and more). `evidence`: pid -> what the node said of it in the window.
std::vector<InsideJudgement> judge_transport(const std::map<int32_t, std::string>& evidence, size_t members,
                                             std::optional<double> ratio, double excess_ns, double stalled_ns,
                                             uint64_t elapsed_ns, const InsideThresholds& thresholds = {});

// A lane's time from last arrival to release, for one message size, against
// its own past: the 20th percentile of its recent windows' medians (one
// lucky window is not the baseline; a slowdown that lasts is).
class InsideBaseline {
 public:
  static constexpr size_t kKept = 1024;  // windows
  static constexpr size_t kMinWindows = 3;
  // Records one window's median; returns its ratio to the baseline of the
  // windows before it (nullopt: fewer than kMinWindows yet).
  std::optional<double> observe(double median_ns);
  std::optional<double> baseline_ns() const;
  size_t windows() const { return medians_.size(); }

 private:
  std::deque<double> medians_;
};

}  // namespace slowburn
