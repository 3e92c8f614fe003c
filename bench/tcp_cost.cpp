// Cost of reading a node's TCP sockets as the host monitor does (one
// sock_diag dump with every socket's tcp_info, net/tcp_diag.h), against
// reading the kernel's text table of the same sockets (/proc/net/tcp and
// tcp6, no tcp_info) in the same process, with N loopback connections
// open (2N sockets and a listener), in a network namespace of its own;
// and the cost of finding one process's sockets among its N fds.
//
//   tcp_cost [CONNECTIONS...]   (default 100 1000 9000; at most what the fd limit allows)
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "net/socket_inode_cache.h"
#include "net/tcp_diag.h"

using namespace slowburn;

namespace {

bool loopback_up() {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &request) == 0;
  request.ifr_flags |= IFF_UP;
  ok = ok && ioctl(fd, SIOCSIFFLAGS, &request) == 0;
  if (fd >= 0) close(fd);
  return ok;
}

template <typename Fn>
double median_ms(int runs, Fn fn) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return bench::median(ms);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> counts;
  for (int i = 1; i < argc; ++i) counts.push_back(std::atoi(argv[i]));
  if (counts.empty()) counts = {100, 1000, 9000};
  // Two fds a connection: as many as the hard limit allows.
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);
  for (int& c : counts)
    if (2 * static_cast<rlim_t>(c) + 64 > files.rlim_cur) c = static_cast<int>((files.rlim_cur - 64) / 2);
  if (unshare(CLONE_NEWNET) != 0 || !loopback_up()) {
    std::fprintf(stderr, "tcp_cost: needs root (a network namespace of its own): %s\n", std::strerror(errno));
    return 1;
  }
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(47200);
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0 || listen(listener, 4096) != 0) return 1;
  std::printf(
      "| connections | sockets | sock_diag dump (tcp_info) | /proc/net/tcp + tcp6 | ratio | this process's fds | its "
      "fds, "
      "cached |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  int open_connections = 0;
  for (int want : counts) {
    for (; open_connections < want; ++open_connections) {
      int c = socket(AF_INET, SOCK_STREAM, 0);
      if (c < 0 || connect(c, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0 ||
          accept(listener, nullptr, nullptr) < 0) {
        std::fprintf(stderr, "tcp_cost: connection %d: %s\n", open_connections, std::strerror(errno));
        return 1;
      }
    }
    size_t sockets = 0;
    double dump = median_ms(21, [&] {
      auto all = read_tcp_sockets();
      sockets = all ? all->size() : 0;
    });
    double text = median_ms(21, [] {
      volatile size_t n = bench::read_text("/proc/net/tcp").size() + bench::read_text("/proc/net/tcp6").size();
      (void)n;
    });
    double fds = median_ms(21, [] { (void)socket_inodes("/proc", getpid()); });
    // The host monitor's way since stop 55 (net/socket_inode_cache.h): a
    // readlink only for new fds and closed TCP sockets, and every link on
    // one reading in SocketInodeCache::kFullScanEvery; the median reading.
    std::set<uint64_t> open;
    if (auto all = read_tcp_sockets())
      for (const TcpSocket& s : *all) open.insert(s.inode);
    SocketInodeCache cache;
    auto tcp_open = [&open](uint64_t inode) { return open.contains(inode); };
    double cached = median_ms(21, [&] { (void)cache.read("/proc", getpid(), tcp_open); });
    std::printf("| %d | %zu | %.2f ms | %.2f ms | %.2fx | %.2f ms | %.2f ms |\n", want, sockets, dump, text,
                dump / text, fds, cached);
  }
  return 0;
}
