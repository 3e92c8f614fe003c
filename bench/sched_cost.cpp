// Cost of the sched programs (bpf/sched.bpf.c) per context switch: two
// processes ping-pong a byte over two pipes, so every round trip switches
// each of them out and back in; bursts of round trips with no program, with
// the programs attached but following another process (what every task on
// the node pays: a hash lookup per switch and wakeup), and with them
// following both ping-pong processes (what a rank pays: the sums and the
// run-queue histogram). Configurations alternate in each round; both
// processes share CPU 0.
//
//   sched_cost ROUNDS ROUND_TRIPS
#include <bpf/libbpf.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "loader/sched_program.h"

using namespace slowburn;

namespace {

// Voluntary plus involuntary context switches of one process.
long switches_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  long total = 0;
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("voluntary_ctxt_switches:") || line.starts_with("nonvoluntary_ctxt_switches:"))
      total += std::atol(line.substr(line.find(':') + 1).c_str());
  return total;
}

struct PingPong {
  pid_t child = -1;
  int to_child = -1, from_child = -1;

  bool start() {
    int down[2], up[2];
    if (pipe(down) != 0 || pipe(up) != 0) return false;
    child = fork();
    if (child < 0) return false;
    if (child == 0) {
      close(down[1]);
      close(up[0]);
      char byte;
      while (read(down[0], &byte, 1) == 1)
        if (write(up[1], &byte, 1) != 1) break;
      _exit(0);
    }
    close(down[0]);
    close(up[1]);
    to_child = down[1];
    from_child = up[0];
    return true;
  }
  // Nanoseconds per round trip, and context switches of both per round trip.
  std::pair<double, double> burst(long round_trips) const {
    long switches_before = switches_of(getpid()) + switches_of(child);
    char byte = 'x';
    auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < round_trips; ++i)
      if (write(to_child, &byte, 1) != 1 || read(from_child, &byte, 1) != 1) return {-1, 0};
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    long switches = switches_of(getpid()) + switches_of(child) - switches_before;
    return {ns / static_cast<double>(round_trips), static_cast<double>(switches) / static_cast<double>(round_trips)};
  }
  void stop() {
    close(to_child);
    close(from_child);
    waitpid(child, nullptr, 0);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s ROUNDS ROUND_TRIPS\n", argv[0]);
    return 2;
  }
  int rounds = std::atoi(argv[1]);
  long round_trips = std::atol(argv[2]);
  libbpf_set_print(nullptr);
  // Both on one CPU: each round trip is two direct switches, not wakeups of
  // an idle CPU (whose cost, on a VM, drowns what is measured).
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  sched_setaffinity(0, sizeof(one), &one);
  PingPong pair;
  pid_t bystander = fork();  // the "other process" the programs follow: asleep
  if (bystander == 0) {
    pause();
    _exit(0);
  }
  if (bystander < 0 || !pair.start()) {
    std::perror("fork");
    return 1;
  }
  enum Config { none, other, pair_followed, kConfigs };
  std::vector<double> ns[kConfigs];
  double switches_per_trip = 0;
  int failed = 0;
  for (int round = 0; round < rounds && !failed; ++round) {
    for (int k = 0; k < kConfigs; ++k) {
      auto config = static_cast<Config>((k + round) % kConfigs);  // alternate which goes first
      std::unique_ptr<SchedProgram> program;
      if (config != none) {
        auto loaded = SchedProgram::load_and_attach();
        if (!loaded) {
          std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
          failed = 1;
          break;
        }
        program = std::move(*loaded);
        bool ok = config == other ? program->follow(bystander).ok()
                                  : program->follow(getpid()).ok() && program->follow(pair.child).ok();
        if (!ok) {
          std::fprintf(stderr, "sched_cost: follow failed\n");
          failed = 1;
          break;
        }
      }
      auto [trip_ns, switches] = pair.burst(round_trips);
      if (trip_ns < 0) {
        std::perror("ping-pong");
        failed = 1;
        break;
      }
      ns[config].push_back(trip_ns);
      if (config == none) switches_per_trip = std::max(switches_per_trip, switches);
    }
  }
  pair.stop();
  kill(bystander, SIGKILL);
  waitpid(bystander, nullptr, 0);
  if (failed) return 1;
  double base = bench::median(ns[none]), bystanding = bench::median(ns[other]),
         followed = bench::median(ns[pair_followed]);
  std::printf("| configuration | ns per round trip (median of %d bursts of %ld) | ratio |\n|---|---|---|\n", rounds,
              round_trips);
  std::printf("| no program | %.0f | 1.000 |\n", base);
  std::printf("| sched programs, following another process | %.0f | %.3f |\n", bystanding, bystanding / base);
  std::printf("| sched programs, following both processes | %.0f | %.3f |\n\n", followed, followed / base);
  std::printf(
      "About %.1f context switches (and 2 wakeups) per round trip: %.0f ns added per switch for a process not "
      "followed, %.0f ns for a followed one.\n",
      switches_per_trip, (bystanding - base) / switches_per_trip, (followed - base) / switches_per_trip);
  return 0;
}
