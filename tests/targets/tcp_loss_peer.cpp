// A TCP connection over a lossy link, in a network namespace of its own:
// the process enters a new namespace, brings its loopback device up,
// attaches bpf/lossy_port.bpf.c to it (one in N data segments to the
// port dropped on the way in), sends BYTES to itself over 127.0.0.1:PORT
// and prints what the kernel says the two sockets retransmitted
// (getsockopt TCP_INFO), then waits to be killed with the sockets open:
// a tracer reads them from outside (net/tcp_diag.h).
//
//   tcp_loss_peer PORT ONE_IN BYTES   ->  "ready SENDER_RETRANS RECEIVER_RETRANS DROPPED"
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "lossy_port.skel.h"

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "tcp_loss_peer: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

void loopback_up() {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &request) < 0) die("read lo's flags");
  request.ifr_flags |= IFF_UP;
  if (ioctl(fd, SIOCSIFFLAGS, &request) < 0) die("bring lo up");
  close(fd);
}

tcp_info info_of(int fd) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) < 0) die("TCP_INFO");
  return info;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: tcp_loss_peer PORT ONE_IN BYTES\n");
    return 2;
  }
  auto port = static_cast<uint16_t>(std::atoi(argv[1]));
  auto one_in = static_cast<uint32_t>(std::atoi(argv[2]));
  size_t bytes = std::strtoull(argv[3], nullptr, 10);
  if (unshare(CLONE_NEWNET) < 0) die("enter a network namespace of its own");
  loopback_up();

  lossy_port_bpf* skel = lossy_port_bpf__open();
  if (!skel) die("open the BPF program");
  skel->rodata->port = port;
  skel->rodata->one_in = one_in;
  if (lossy_port_bpf__load(skel)) die("load the BPF program");
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = static_cast<int>(if_nametoindex("lo")), .attach_point = BPF_TC_INGRESS);
  if (bpf_tc_hook_create(&hook) && errno != EEXIST) die("create lo's tc ingress hook");
  LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = bpf_program__fd(skel->progs.drop_some));
  if (bpf_tc_attach(&hook, &opts)) die("attach the BPF program to lo's ingress");

  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(port);
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof(at)) < 0 || listen(listener, 1) < 0)
    die("listen");
  int sender = socket(AF_INET, SOCK_STREAM, 0);
  if (sender < 0 || connect(sender, reinterpret_cast<sockaddr*>(&at), sizeof(at)) < 0) die("connect");
  int receiver = accept(listener, nullptr, nullptr);
  if (receiver < 0) die("accept");
  std::thread reader([&] {
    std::vector<char> buffer(64 * 1024);
    for (size_t got = 0; got < bytes;) {
      ssize_t n = read(receiver, buffer.data(), buffer.size());
      if (n <= 0) die("read");
      got += static_cast<size_t>(n);
    }
  });
  std::vector<char> chunk(64 * 1024, 'x');
  for (size_t sent = 0; sent < bytes;) {
    ssize_t n = write(sender, chunk.data(), std::min(chunk.size(), bytes - sent));
    if (n <= 0) die("write");
    sent += static_cast<size_t>(n);
  }
  reader.join();
  // Every segment acknowledged: no tail-loss probe or timeout still to come.
  for (int i = 0; i < 500 && (info_of(sender).tcpi_unacked || info_of(receiver).tcpi_unacked); ++i) usleep(10'000);
  std::printf("ready %u %u %llu\n", info_of(sender).tcpi_total_retrans, info_of(receiver).tcpi_total_retrans,
              static_cast<unsigned long long>(skel->bss->dropped));
  std::fflush(stdout);
  pause();
  return 0;
}
