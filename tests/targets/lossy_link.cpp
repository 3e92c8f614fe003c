// A lossy link: enters the network namespace at NETNS (/proc/PID/ns/net of
// the process holding it) and attaches bpf/lossy_port.bpf.c to DEVICE's tc
// ingress there, dropping one in ONE_IN of the TCP data segments that
// arrive on it (any port), as a cable or NIC that loses frames does: the
// sender's TCP retransmits them. On the switch's side of a rank's link
// (the bridge port of its veth pair), the frames the rank sends. Not on the
// rank's own egress: a frame dropped there is a local drop its TCP is told
// of and sends again as new data, no retransmission. Prints "attached",
// then on SIGTERM or SIGINT (or when its parent dies, or after 900 s)
// detaches and prints "dropped N". Only that namespace's device is
// touched: nothing of the host's.
//
//   lossy_link NETNS DEVICE ONE_IN
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lossy_port.skel.h"

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "lossy_link: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: lossy_link NETNS DEVICE ONE_IN\n");
    return 2;
  }
  int ns = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) die(argv[1]);
  close(ns);
  unsigned ifindex = if_nametoindex(argv[2]);
  if (ifindex == 0) die(argv[2]);
  // Blocked before anything can be sent: sigwait takes them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGALRM);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  // Never outlives its test: a test killed before it could stop it.
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) return 1;
  alarm(900);

  lossy_port_bpf* skel = lossy_port_bpf__open();
  if (!skel) die("open the BPF program");
  skel->rodata->port = 0;
  skel->rodata->one_in = static_cast<uint32_t>(std::atoi(argv[3]));
  if (lossy_port_bpf__load(skel)) die("load the BPF program");
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = static_cast<int>(ifindex), .attach_point = BPF_TC_INGRESS);
  if (bpf_tc_hook_create(&hook) && errno != EEXIST) die("create the device's tc ingress hook");
  LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = bpf_program__fd(skel->progs.drop_some));
  if (bpf_tc_attach(&hook, &opts)) die("attach the BPF program to the device's ingress");
  std::printf("attached\n");
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop, &signal);
  opts.prog_fd = 0;
  opts.prog_id = 0;
  bpf_tc_detach(&hook, &opts);
  std::printf("dropped %llu\n", static_cast<unsigned long long>(skel->bss->dropped));
  std::fflush(stdout);
  lossy_port_bpf__destroy(skel);
  return 0;
}
