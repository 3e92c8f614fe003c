#include "net/tcp_diag.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

#include "net/netlink_attrs.h"

namespace slowburn {

namespace {

std::string endpoint(uint8_t family, const __be32 (&addr)[4], __be16 port) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (!inet_ntop(family, addr, text.data(), text.size())) return "?";
  std::string host = text.data();
  // An IPv4 peer of a dual-stack socket ("::ffff:10.0.0.1") is written as
  // IPv4, as its other end writes it: one connection, one name for each end.
  constexpr std::string_view kMapped = "::ffff:";
  if (family == AF_INET6 && host.starts_with(kMapped) && host.find('.') != std::string::npos)
    return host.substr(kMapped.size()) + ":" + std::to_string(ntohs(port));
  if (family == AF_INET6) host = "[" + host + "]";
  return host + ":" + std::to_string(ntohs(port));
}

}  // namespace

Result<std::vector<TcpSocket>> parse_inet_diag(std::span<const std::byte> buffer, bool& done) {
  std::vector<TcpSocket> sockets;
  done = false;
  size_t at = 0;
  while (at + NLMSG_HDRLEN <= buffer.size()) {
    nlmsghdr header;
    std::memcpy(&header, buffer.data() + at, sizeof(header));
    if (header.nlmsg_len < NLMSG_HDRLEN || at + header.nlmsg_len > buffer.size())
      return make_error("sock_diag: a netlink message of {} bytes does not fit the {} left of the reply",
                        header.nlmsg_len, buffer.size() - at);
    std::span<const std::byte> message = buffer.subspan(at, header.nlmsg_len);
    at += NLMSG_ALIGN(header.nlmsg_len);
    if (header.nlmsg_type == NLMSG_DONE) {
      done = true;
      break;
    }
    if (header.nlmsg_type == NLMSG_ERROR) {
      nlmsgerr err{};
      if (message.size() < NLMSG_HDRLEN + sizeof(err)) return make_error("sock_diag: a truncated netlink error");
      std::memcpy(&err, message.data() + NLMSG_HDRLEN, sizeof(err));
      return make_sys_error(-err.error, "sock_diag: the kernel refused the TCP socket dump");
    }
    if (header.nlmsg_type != SOCK_DIAG_BY_FAMILY) continue;
    inet_diag_msg msg{};
    if (message.size() < NLMSG_HDRLEN + sizeof(msg))
      return make_error("sock_diag: a socket message of {} bytes, short of its inet_diag_msg", message.size());
    std::memcpy(&msg, message.data() + NLMSG_HDRLEN, sizeof(msg));
    TcpSocket s;
    s.inode = msg.idiag_inode;
    s.state = msg.idiag_state;
    s.local = endpoint(msg.idiag_family, msg.id.idiag_src, msg.id.idiag_sport);
    s.remote = endpoint(msg.idiag_family, msg.id.idiag_dst, msg.id.idiag_dport);
    size_t attrs_at = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(msg));
    if (message.size() > attrs_at)
      if (auto info = find_attribute(netlink_attributes(message.subspan(attrs_at)), INET_DIAG_INFO)) {
        // Older kernels send a shorter tcp_info: what they lack reads 0.
        tcp_info ti{};
        std::memcpy(&ti, info->data(), std::min(info->size(), sizeof(ti)));
        s.rtt_us = ti.tcpi_rtt;
        s.rttvar_us = ti.tcpi_rttvar;
        s.total_retrans = ti.tcpi_total_retrans;
        s.bytes_sent = ti.tcpi_bytes_sent;
        s.bytes_retrans = ti.tcpi_bytes_retrans;
        s.bytes_acked = ti.tcpi_bytes_acked;
        s.bytes_received = ti.tcpi_bytes_received;
      }
    sockets.push_back(std::move(s));
  }
  return sockets;
}

namespace {

// One family's dump on the open socket, appended to `all`.
Result<void> dump_family(int fd, uint8_t family, std::vector<TcpSocket>& all) {
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } query{};
  query.header.nlmsg_len = sizeof(query);
  query.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  query.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  query.request.sdiag_family = family;
  query.request.sdiag_protocol = IPPROTO_TCP;
  query.request.idiag_ext = 1 << (INET_DIAG_INFO - 1);
  query.request.idiag_states = ~0u;  // every state: the caller keeps what it needs
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd, &query, sizeof(query), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) < 0)
    return make_sys_error(errno, "sock_diag: cannot send the TCP socket dump request");
  std::vector<std::byte> reply(64 * 1024);
  for (bool done = false; !done;) {
    ssize_t n = recv(fd, reply.data(), reply.size(), 0);
    if (n < 0) return make_sys_error(errno, "sock_diag: no reply to the TCP socket dump");
    if (n == 0) return make_error("sock_diag: the TCP socket dump ended without NLMSG_DONE");
    auto part = parse_inet_diag(std::span(reply.data(), static_cast<size_t>(n)), done);
    if (!part) return part.error();
    all.insert(all.end(), part->begin(), part->end());
  }
  return {};
}

// A sock_diag socket of the namespace: a socket belongs to the namespace
// its creator was in, and setns moves the calling thread only, so a
// thread of its own enters it and ends.
Result<int> diag_socket(const std::filesystem::path& netns) {
  auto open_diag = [] { return socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG); };
  if (netns.empty()) {
    int fd = open_diag();
    if (fd < 0) return make_sys_error(errno, "sock_diag: cannot open a NETLINK_SOCK_DIAG socket");
    return fd;
  }
  int ns = open(netns.c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0) return make_sys_error(errno, "sock_diag: cannot open the network namespace " + netns.string());
  int fd = -1, failed = 0;
  bool entered = false;
  std::thread([&] {
    entered = setns(ns, CLONE_NEWNET) == 0;
    if (!entered) failed = errno;
    if (entered && (fd = open_diag()) < 0) failed = errno;
  }).join();
  close(ns);
  if (!entered) return make_sys_error(failed, "sock_diag: cannot enter the network namespace " + netns.string());
  if (fd < 0) return make_sys_error(failed, "sock_diag: cannot open a NETLINK_SOCK_DIAG socket in " + netns.string());
  return fd;
}

}  // namespace

Result<std::vector<TcpSocket>> read_tcp_sockets(const std::filesystem::path& netns) {
  auto opened = diag_socket(netns);
  if (!opened) return opened.error();
  int fd = *opened;
  timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::vector<TcpSocket> all;
  Result<void> ok;
  for (uint8_t family : {AF_INET, AF_INET6})
    if (ok = dump_family(fd, family, all); !ok) break;
  close(fd);
  if (!ok) return ok.error();
  return all;
}

std::optional<std::set<uint64_t>> socket_inodes(const std::filesystem::path& proc_root, int32_t pid) {
  std::set<uint64_t> inodes;
  std::error_code ec;
  std::filesystem::directory_iterator it(proc_root / std::to_string(pid) / "fd", ec);
  if (ec) return std::nullopt;
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::string target = std::filesystem::read_symlink(it->path(), ec).string();
    if (ec) {
      ec.clear();  // the fd closed meanwhile
      continue;
    }
    if (uint64_t inode = socket_inode_of(target)) inodes.insert(inode);
  }
  return inodes;
}

uint64_t socket_inode_of(std::string_view target) {
  constexpr std::string_view kPrefix = "socket:[";
  if (!target.starts_with(kPrefix) || !target.ends_with(']')) return 0;
  uint64_t inode = 0;
  const char* first = target.data() + kPrefix.size();
  const char* last = target.data() + target.size() - 1;
  return std::from_chars(first, last, inode).ptr == last ? inode : 0;
}

}  // namespace slowburn
