// A process's TCP sockets as the kernel's sock_diag reports them (what
// `ss -tip` reads): per socket its smoothed RTT and its retransmissions,
// from the kernel's tcp_info. Which rank a socket is is found by its inode
// among the rank's /proc/PID/fd links. Gloo, Open MPI's TCP BTL and NCCL's
// socket transport move a collective's data over such sockets: a rank
// whose sockets retransmit while its peers' do not is where the data waits.
// The dump sees one network namespace's sockets: the rank's is entered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace slowburn {

inline constexpr uint8_t kTcpEstablished = 1;  // TCP_ESTABLISHED (include/net/tcp_states.h)

struct TcpSocket {
  uint64_t inode = 0;
  uint8_t state = 0;  // kTcpEstablished, ...
  std::string local;  // "127.0.0.1:4000", "[::1]:4000"
  std::string remote;
  uint32_t rtt_us = 0;  // smoothed
  uint32_t rttvar_us = 0;
  uint32_t total_retrans = 0;  // segments retransmitted over the socket's life
  // Bytes sent and retransmitted over its life (64-bit: no wrap; Linux
  // 4.19+, else 0).
  uint64_t bytes_sent = 0;
  uint64_t bytes_retrans = 0;
  uint64_t bytes_acked = 0;  // 0 where the kernel's tcp_info is too short to carry it
  uint64_t bytes_received = 0;
};

// Pure: the TCP sockets in one buffer of netlink messages (a part of a
// SOCK_DIAG_BY_FAMILY dump); `done` is set at NLMSG_DONE. A message that
// does not fit, or the kernel's NLMSG_ERROR, is an error naming it.
Result<std::vector<TcpSocket>> parse_inet_diag(std::span<const std::byte> buffer, bool& done);

// Every TCP socket of a network namespace, IPv4 and IPv6, with its
// tcp_info. `netns`: a namespace file ("/proc/PID/ns/net": a rank in a
// container has its own), entered by a short-lived thread to open the
// netlink socket (needs CAP_SYS_ADMIN); empty: the caller's own.
Result<std::vector<TcpSocket>> read_tcp_sockets(const std::filesystem::path& netns = {});

// The socket inodes among proc_root/PID/fd's links ("socket:[N]");
// nullopt where the directory cannot be read (gone, or not allowed).
std::optional<std::set<uint64_t>> socket_inodes(const std::filesystem::path& proc_root, int32_t pid);

// A socket's inode from its fd link's target ("socket:[N]" -> N); 0 for
// any other target.
uint64_t socket_inode_of(std::string_view target);

}  // namespace slowburn
