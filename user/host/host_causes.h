// Which host signal sets a rank apart from its peers: the judge of a job's
// ranks over one stretch of time. A cause is named only when it concerns the
// rank more than the others (a throttled cgroup they all share, or a node
// where every rank waits for a CPU, explains no straggler), with the numbers
// that show it. Pure: intervals in, causes out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "host/host_signals.h"
#include "host/tcp_paths.h"

namespace slowburn {

// One rank's host signals over [start, start + span_ns]: differences of two
// readings. Absent where the node has no such source.
struct HostInterval {
  RankIdentity rank;
  uint64_t span_ns = 0;
  uint64_t end_ns = 0;  // when its later reading was taken (CLOCK_MONOTONIC)
  std::optional<SchedSums> sched;
  std::vector<CpuShare> shares;  // ns in the interval
  std::optional<uint64_t> major_faults;
  std::optional<uint64_t> swap_kb;         // VmSwap at the end
  std::optional<uint64_t> swapped_out_kb;  // VmSwap's growth over the span
  std::optional<CpuStat> throttling;
  std::optional<CpuQuota> quota;
  std::string cgroup;                                                // its CPU cgroup's path
  std::map<std::string, uint64_t> memory_events;                     // increments
  std::optional<double> cpu_pressure, memory_pressure, io_pressure;  // share of the span with "some" stalled
  // Its TCP sockets over the span: segments retransmitted, bytes sent and
  // of them retransmitted (unset unless both readings read them); how many
  // it has, and their highest smoothed RTT at the end.
  std::optional<uint64_t> tcp_retrans;
  uint64_t tcp_bytes_sent = 0;
  uint64_t tcp_bytes_retrans = 0;
  size_t tcp_sockets = 0;
  uint32_t tcp_max_rtt_us = 0;
  std::vector<TcpEnd> tcp_ends;  // its established sockets, for the connections judge
};

struct HostThresholds {
  double throttled_share = 0.2;  // of CFS periods
  uint64_t min_periods = 5;
  double runq_share = 0.2;  // of the time it wanted a CPU, waiting
  // And waiting this much more of the span than the peers' median: where
  // every rank waits (a loaded node; ranks that spin in their collectives
  // are runnable the whole time), 96% against 90% is no one's cause,
  // although its odds (24 against 9) are.
  double runq_excess_share = 0.1;
  double blocked_share = 0.1;  // of the span in I/O
  double fault_share = 0.05;   // of the span in page faults
  uint64_t min_major_faults = 100;
  uint64_t min_swapped_out_kb = 16 * 1024;  // pushed to swap over the span
  // Its TCP sockets retransmitting (a collective's data over gloo, Open
  // MPI's TCP BTL or NCCL's sockets waits for each): at least this many
  // segments over the span, and this share of the bytes they sent (a
  // healthy fabric loses far under 1%; a count alone names the busiest
  // rank of a long session, or the one whose traffic crosses nodes).
  uint64_t min_tcp_retrans = 20;
  double tcp_retrans_share = 0.01;
  double versus_peers =
      2.0;  // at least this many times the peers' median (waiting per unit of running, for the run queue)
  // Its every TCP connection slow (host.tcp_rtt).
  TcpPathThresholds tcp_paths;
};

// host.cpu_throttled, host.cpu_contention, host.blocked_io, host.page_faults,
// host.swap, host.memory_limit, host.oom_kill, host.tcp_retrans, host.tcp_rtt.
struct HostCause {
  int32_t pid = 0;
  int rank = -1;
  std::string type;
  std::string label;                  // what it is about: "cgroup /job", "CPU 1"
  std::string summary;                // one line, for people
  double value = 0;                   // the measure that set it apart (a share, or a count)
  std::optional<double> peers_value;  // the peers' median of it
  std::optional<int32_t> other_pid;   // the process it shares a CPU with
  std::string other_comm;
  uint64_t span_ns = 0;  // the interval it was judged over,
  uint64_t end_ns = 0;   // ending then (CLOCK_MONOTONIC)
};

// The causes of every rank of one job (on this node) over the same span. A
// process a rank shares its CPUs with is named by its rank when it is one.
std::vector<HostCause> judge_host(const std::vector<HostInterval>& ranks, const HostThresholds& thresholds = {});
// A loss lengthens the round trips of its neighbours' connections too
// (retransmission timeouts, and the job's sparse sends on its stalls, whose
// last segment waits for a delayed ACK): no host.tcp_rtt among one job's
// causes where one is host.tcp_retrans. The cost: a second rank of the job
// on this node whose link only delays is not said while another loses.
void drop_round_trips_beside_loss(std::vector<HostCause>& causes);

}  // namespace slowburn
