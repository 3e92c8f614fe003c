#include "net/ethtool.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace slowburn {

namespace {

class Socket {
 public:
  Socket() : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

int ethtool_ioctl(int fd, const std::string& ifname, void* data) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = static_cast<char*>(data);
  return ::ioctl(fd, SIOCETHTOOL, &ifr) == 0 ? 0 : errno;
}

// Buffers with a flexible array after the header, 8-byte aligned.
template <typename Header>
std::unique_ptr<uint64_t[]> header_buffer(size_t extra_bytes, Header** header) {
  size_t words = (sizeof(Header) + extra_bytes + 7) / 8;
  auto buffer = std::make_unique<uint64_t[]>(words);
  std::memset(buffer.get(), 0, words * 8);
  *header = reinterpret_cast<Header*>(buffer.get());
  return buffer;
}

Error ioctl_error(int err, const std::string& ifname, const char* what) {
  if (err == ENODEV) return make_error("no network interface {} (in this network namespace)", ifname);
  if (err == EOPNOTSUPP) return make_error("{}: the driver reports no {} through ethtool", ifname, what);
  if (err == EPERM) return make_error("{}: reading {} needs CAP_NET_ADMIN; run as root", ifname, what);
  return make_sys_error(err, fmt::format("{}: SIOCETHTOOL ({})", ifname, what));
}

}  // namespace

Result<EthtoolStats> read_ethtool_stats(const std::string& ifname) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ) return make_error("'{}' is not an interface name", ifname);
  Socket sock;
  if (sock.fd() < 0) return make_sys_error(errno, "socket(AF_INET) for ethtool");

  // How many statistics: GSSET_INFO, else (old drivers) GDRVINFO's n_stats.
  uint32_t count = 0;
  ethtool_sset_info* info = nullptr;
  auto info_buffer = header_buffer(sizeof(uint32_t), &info);
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ull << ETH_SS_STATS;
  if (int err = ethtool_ioctl(sock.fd(), ifname, info); err == 0) {
    count = info->sset_mask & (1ull << ETH_SS_STATS) ? info->data[0] : 0;
  } else if (err == EOPNOTSUPP) {
    ethtool_drvinfo drvinfo{};
    drvinfo.cmd = ETHTOOL_GDRVINFO;
    if (int err2 = ethtool_ioctl(sock.fd(), ifname, &drvinfo); err2) return ioctl_error(err2, ifname, "driver info");
    count = drvinfo.n_stats;
  } else {
    return ioctl_error(err, ifname, "statistics");
  }
  if (count == 0) return EthtoolStats{};
  if (count > 1u << 16) return make_error("{}: the driver claims {} statistics; refusing", ifname, count);

  // The kernel writes as many entries as the driver has *now*, whatever
  // len/n_stats say: the set can grow between these calls (mlx5 after
  // `ethtool -L` adds queues). Room for twice as many, and a check after.
  const uint32_t capacity = count * 2 + 64;
  ethtool_gstrings* strings = nullptr;
  auto strings_buffer = header_buffer(size_t{capacity} * ETH_GSTRING_LEN, &strings);
  strings->cmd = ETHTOOL_GSTRINGS;
  strings->string_set = ETH_SS_STATS;
  strings->len = count;
  if (int err = ethtool_ioctl(sock.fd(), ifname, strings); err) return ioctl_error(err, ifname, "statistic names");

  ethtool_stats* stats = nullptr;
  auto stats_buffer = header_buffer(size_t{capacity} * sizeof(uint64_t), &stats);
  stats->cmd = ETHTOOL_GSTATS;
  stats->n_stats = count;
  if (int err = ethtool_ioctl(sock.fd(), ifname, stats); err) return ioctl_error(err, ifname, "statistics");

  if (strings->len > capacity || stats->n_stats > capacity)
    return make_error("{}: the driver's statistics grew from {} to {} while being read; try again", ifname, count,
                      std::max(strings->len, stats->n_stats));
  // The set can change between the calls (a queue added): use what both agree on.
  uint32_t n = std::min(strings->len, stats->n_stats);
  EthtoolStats out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const char* name = reinterpret_cast<const char*>(strings->data) + size_t{i} * ETH_GSTRING_LEN;
    out.emplace_back(std::string(name, strnlen(name, ETH_GSTRING_LEN)), stats->data[i]);
  }
  return out;
}

}  // namespace slowburn
