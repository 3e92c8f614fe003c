#include "service/calibrate.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "probes/cookie.h"
#include "symbols/elf_symbols.h"

// Kept out of line and observable, so every call really enters it.
extern "C" __attribute__((noinline, used)) uint64_t slowburn_calibration_target(uint64_t x) {
  asm volatile("" : "+r"(x));
  return x + 1;
}

namespace slowburn {

namespace {
double time_calls_ns(int calls) {
  auto start = std::chrono::steady_clock::now();
  uint64_t x = 0;
  for (int i = 0; i < calls; ++i) x = slowburn_calibration_target(x);
  auto end = std::chrono::steady_clock::now();
  asm volatile("" : : "r"(x));
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
}

double monotonic_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
}  // namespace

Result<ProbeCosts> calibrate_probe_costs(CollaggProgram& program, int calls_per_round, int rounds) {
  const std::string exe = "/proc/self/exe";
  auto symbols = ElfSymbols::open(exe);
  if (!symbols) return make_error("cannot calibrate the probe cost: {}", symbols.error().message);
  auto found = symbols->lookup("slowburn_calibration_target");
  if (found.empty())
    return make_error(
        "cannot calibrate the probe cost: slowburn_calibration_target is not in {} (a stripped "
        "binary? pass --call-cost-ns)",
        exe);
  std::vector<UprobeSite> sites{{found.front().file_offset, make_cookie(CookieFields{.probe_id = 0xffff})}};
  int32_t self = getpid();
  // Registered under a job slot no job uses; forgotten when done.
  if (auto ok = program.add_target(self, UINT32_MAX); !ok) return ok.error();
  std::vector<double> with, without, toggles;
  for (int r = 0; r < rounds; ++r) {
    without.push_back(time_calls_ns(calls_per_round));
    double t0 = monotonic_ns();
    auto links = program.attach(exe, self, sites);
    double attach_ns = monotonic_ns() - t0;
    if (!links) {
      program.forget_process(self);
      return make_error("cannot calibrate the probe cost: {}", links.error().message);
    }
    with.push_back(time_calls_ns(calls_per_round));
    t0 = monotonic_ns();
    program.detach(*links);  // the link's release (its RCU waits) runs in this close
    toggles.push_back(attach_ns + monotonic_ns() - t0);
  }
  program.forget_process(self);
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // Medians of the rounds: one preempted round does not set the budget.
  ProbeCosts costs;
  costs.call_ns = std::max((median(with) - median(without)) / calls_per_round, 1.0);
  costs.toggle_ns = median(toggles);
  return costs;
}

}  // namespace slowburn
