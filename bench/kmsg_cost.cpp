// Cost per kernel log line of the printk:console Xid filter: bursts of
// ordinary (non-NVRM) lines written to /dev/kmsg with and without the
// program attached, alternating, as a ratio. The lines carry level <6> so
// the serial console does not print them (that would dwarf both).
//
//   kmsg_cost ROUNDS LINES
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "loader/kmsg_program.h"

using namespace slowburn;

namespace {

double write_burst(int fd, long lines) {
  char line[96];
  auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < lines; ++i) {
    int n = std::snprintf(line, sizeof(line), "<6>slowburn bench: an ordinary kernel message %ld", i);
    if (write(fd, line, static_cast<size_t>(n)) != n) return -1;
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
         static_cast<double>(lines);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s ROUNDS LINES\n", argv[0]);
    return 2;
  }
  int rounds = std::atoi(argv[1]);
  long lines = std::atol(argv[2]);
  libbpf_set_print(nullptr);
  // /dev/kmsg drops a writer's lines past a burst of 10 unless this is "on";
  // dropped lines would never reach printk and measure nothing.
  std::string previous;
  std::getline(std::ifstream("/proc/sys/kernel/printk_devkmsg"), previous);
  std::ofstream("/proc/sys/kernel/printk_devkmsg") << "on\n";
  int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    std::perror("/dev/kmsg");
    return 1;
  }
  std::vector<double> off, on;
  uint64_t seen = 0, matched = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < 2; ++k) {
      bool attach = (k + round) % 2 == 1;  // alternate which goes first
      if (!attach) {
        off.push_back(write_burst(fd, lines));
        continue;
      }
      auto program = KmsgXidProgram::load_and_attach();
      if (!program) {
        std::fprintf(stderr, "%s\n", program.error().message.c_str());
        return 1;
      }
      on.push_back(write_burst(fd, lines));
      seen += (*program)->counters().lines_seen;
      matched += (*program)->counters().lines_matched;
    }
  }
  close(fd);
  std::ofstream("/proc/sys/kernel/printk_devkmsg") << previous << "\n";
  double a = median(off), b = median(on);
  std::printf("| configuration | ns per kernel log line (median of %d bursts of %ld) |\n|---|---|\n", rounds, lines);
  std::printf("| no program | %.0f |\n| printk:console Xid filter attached | %.0f |\n\n", a, b);
  std::printf(
      "Ratio with/without: %.3fx (%.0f ns added per line). The filter ran on %llu lines and passed %llu "
      "to user space.\n",
      b / a, b - a, static_cast<unsigned long long>(seen), static_cast<unsigned long long>(matched));
  return 0;
}
