// What a toggle of the overhead budget costs the processes it touches: the
// probe pair (collagg's programs, as `slowburn probe` attaches them) is
// attached at one function of a library in each given process and detached
// again, HZ times a second, until SIGTERM. The function is one the job never
// calls (MPI_Comm_spawn in the demo), so the job pays for the toggles only,
// never for a trap. bench/alternate.py runs this as a configuration beside
// the demo job: the job's slowdown over the toggles made is what a toggle
// costs the job, to set against the charge the budget calibrates at start-up.
//
//   toggle_cost LIBRARY SYMBOL HZ PID...
//
// On SIGTERM prints "toggles N cpu_s C wall_s W": link sets attached and
// detached (one per process per cycle), and this process's own CPU (user
// and system) over its run.
#include <signal.h>
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "loader/collagg_program.h"
#include "probes/cookie.h"
#include "symbols/elf_symbols.h"

using namespace slowburn;

namespace {

volatile sig_atomic_t stop_requested = 0;
void on_term(int) { stop_requested = 1; }

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Sleeps until `deadline` or a signal; false once asked to stop.
bool sleep_until(std::chrono::steady_clock::time_point deadline) {
  while (!stop_requested && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return !stop_requested;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s LIBRARY SYMBOL HZ PID...\n", argv[0]);
    return 2;
  }
  const std::string library = argv[1], symbol = argv[2];
  const double hz = std::atof(argv[3]);
  std::vector<int32_t> pids;
  for (int i = 4; i < argc; ++i) pids.push_back(std::atoi(argv[i]));
  if (hz <= 0) {
    std::fprintf(stderr, "toggle_cost: HZ must be above 0\n");
    return 2;
  }
  auto symbols = ElfSymbols::open(library);
  if (!symbols) {
    std::fprintf(stderr, "toggle_cost: %s\n", symbols.error().message.c_str());
    return 1;
  }
  auto found = symbols->lookup(symbol);
  if (found.empty()) {
    std::fprintf(stderr, "toggle_cost: %s has no symbol %s\n", library.c_str(), symbol.c_str());
    return 1;
  }
  auto program = CollaggProgram::load();
  if (!program) {
    std::fprintf(stderr, "toggle_cost: %s\n", program.error().message.c_str());
    return 1;
  }
  std::vector<UprobeSite> sites{{found.front().file_offset, make_cookie(CookieFields{.probe_id = 0xfffe})}};
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);

  const auto half =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(0.5 / hz));
  const double cpu0 = cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  auto next = start;
  long toggles = 0;
  while (!stop_requested) {
    std::vector<LinkSet::Id> links;
    for (int32_t pid : pids) {
      auto attached = (*program)->attach(library, pid, sites);
      if (!attached) {
        std::fprintf(stderr, "toggle_cost: pid %d: %s\n", pid, attached.error().message.c_str());
        return 1;
      }
      links.push_back(*attached);
    }
    next += half;
    bool go_on = sleep_until(next);
    for (LinkSet::Id id : links) (*program)->detach(id);  // its RCU waits included, as the budget's throttle does
    toggles += static_cast<long>(pids.size());
    if (!go_on) break;
    next += half;
    sleep_until(next);
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("toggles %ld cpu_s %.4f wall_s %.3f\n", toggles, cpu_seconds() - cpu0, wall);
  return 0;
}
