// RDMA requests per connection, as the kernel aggregated them: NCCL IB's
// (one sendComm / recvComm: one peer), or a verbs QP's send completions
// (bpf/verbs.bpf.c's data path, any library over verbs). And the per-peer
// view: which connection of the job is slow compared with the others of
// its direction. Pure.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stats/log2_hist.h"

namespace slowburn {

// qp: a verbs QP's send-side work requests, post to completion.
enum class IbDirection { send = 0, recv = 1, flush = 2, qp = 3 };
std::string_view ib_direction_name(IbDirection direction);

struct IbConnectionStats {
  uint32_t tgid = 0;
  IbDirection direction = IbDirection::send;
  uint64_t comm = 0;  // NCCL's sendComm / recvComm (one connection to one peer), or the QP's number
  Log2Histogram latency{"usecs", 32};
  Log2Histogram size{"bytes", 40};
  uint64_t requests = 0;
  uint64_t bytes = 0;
  uint64_t total_ns = 0;  // sum of post-to-completion times
  uint64_t errors = 0;    // a QP's completions in error (not flushes)
};

struct IbConnectionView {
  const IbConnectionStats* stats = nullptr;
  std::optional<int> rank;
  // The connection's number within its process and direction, in comm
  // pointer order: stable while no connection is added below it.
  int index = 0;
  double mean_latency_ns = 0;
  double in_flight_bytes_per_s = 0;  // bytes / time requests were in flight: what one request achieved
  std::optional<double> z;           // robust z of the mean latency among the job's connections of this direction
  double median_latency_ns = 0;      // of those connections
  bool slow = false;
};

struct IbSlowness {
  double z = 3.5;             // robust z of a connection's mean latency
  double ratio = 1.5;         // and at least this many times the median
  uint64_t min_requests = 8;  // fewer requests say nothing
};

// "send #0": the direction and the connection's number in its process;
// "qp 0x11" for a QP.
std::string ib_connection_label(const IbConnectionView& view);

// A connection found slow: the evidence a finding names as its likely cause.
struct IbSlowConnection {
  uint32_t pid = 0;
  IbDirection direction = IbDirection::send;
  int connection = 0;
  uint64_t comm = 0;
  uint64_t requests = 0;
  double mean_latency_ns = 0;
  double median_latency_ns = 0;  // of the job's connections of this direction
  double z = 0;
};

// A slow connection's evidence from its view (`view.slow`).
IbSlowConnection slow_connection_of(const IbConnectionView& view);

// Every connection with requests, by rank (then pid), direction and comm.
std::vector<IbConnectionView> analyze_ib_connections(const std::vector<IbConnectionStats>& stats,
                                                     const std::function<std::optional<int>(uint32_t)>& rank_of,
                                                     const IbSlowness& slowness = {});

}  // namespace slowburn
