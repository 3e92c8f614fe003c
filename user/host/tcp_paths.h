// The rank whose every TCP connection is slow: a link that adds delay (a
// flapping or congested port, a NIC trained down and queueing) lengthens
// the round trip of each connection through it, at both of its ends. Of a
// node's ranks, the one whose *fastest* connection is several times the
// others' fastest is the one on the slow link: a peer of it has one slow
// connection (to it) and fast ones to the rest. It is named only where
// such a peer is here to say so: a rank whose only peers are on other
// nodes, one of them on a slow link, has every connection slow as well. A connection's round trip
// is what its ends' kernels measured (smoothed RTT) where that end sent
// data over the span: an idle end's RTT is as old as its last data. With
// two ranks, one connection, both ends alike: nobody is set apart. Pure:
// socket ends in, judgements out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slowburn {

// One established TCP socket of a rank over a span.
struct TcpEnd {
  std::string local, remote;  // "10.0.0.1:4000" (IPv4 peers of IPv6 sockets as IPv4)
  uint64_t netns = 0;         // its network namespace (loopback ends meet only within one)
  uint32_t rtt_us = 0;        // smoothed, at the span's end
  bool fresh = false;         // it sent data over the span: its RTT was measured in it
};

struct TcpPathThresholds {
  // Its fastest connection at least this many times the others' fastest
  // (median), and this much longer: a busy node's scheduler delays ACKs by
  // a fraction of a millisecond on every rank alike.
  double versus_peers = 4.0;
  uint32_t min_excess_us = 1000;
  size_t min_ranks = 3;  // with connections: two are one connection seen twice
};

struct TcpPathJudgement {
  size_t index = 0;                  // of the rank, in the input
  uint32_t fastest_us = 0;           // its fastest connection's round trip
  size_t connections = 0;            // its connections with a fresh end
  double peers_fastest_us = 0;       // the other ranks' fastest, median
  std::vector<std::string> remotes;  // where its connections go (distinct, at most 4)
};

// The ranks set apart by their connections, of one job's ranks on one node
// (`ranks[i]`: rank i's sockets). A connection seen at both ends (two
// ranks here) takes the shorter of its fresh ends' RTTs.
std::vector<TcpPathJudgement> judge_tcp_paths(const std::vector<std::vector<TcpEnd>>& ranks,
                                              const TcpPathThresholds& thresholds = {});

}  // namespace slowburn
