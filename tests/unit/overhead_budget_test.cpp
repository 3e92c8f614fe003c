#include "service/overhead_budget.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace slowburn::overhead_budget_test {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

// 10 us a call, 1% of a CPU: 1000 calls a second fit. Windows of 5 intervals.
BudgetConfig config(double budget = 0.01) {
  BudgetConfig c;
  c.budget_ratio = budget;
  c.call_cost_ns = 10'000;
  c.toggle_cost_ns = 100'000;  // 0.1 ms of CPU per rank to detach and attach a probe again
  c.window_intervals = 5;
  return c;
}

ProbeReading sync(uint64_t calls, double gap_ns, int ranks = 4) { return {calls, ranks, gap_ns, true}; }

// The demo's step: compute, then an allgather (3 ms after the previous
// return) and at once an allreduce (50 us after the allgather's return).
std::map<std::string, ProbeReading> step(uint64_t allgather, uint64_t allreduce) {
  return {{"mpi.allgather", sync(allgather, 3'000'000)}, {"mpi.allreduce", sync(allreduce, 50'000)}};
}

// Runs n intervals, the probes that are off reading no calls; returns, per
// probe, the intervals it was on.
std::map<std::string, int> run(OverheadBudget& b, int n, uint64_t allgather, uint64_t allreduce) {
  std::map<std::string, int> on;
  for (int i = 0; i < n; ++i) {
    auto r = step(b.throttled("mpi.allgather") ? 0 : allgather, b.throttled("mpi.allreduce") ? 0 : allreduce);
    for (auto& [probe, reading] : r) on[probe] += !b.throttled(probe);
    b.update(kSecond, r);
  }
  return on;
}

TEST(OverheadBudget, UnderBudgetWithoutSelectionNothingHappens) {
  BudgetConfig c = config();
  c.select = false;
  OverheadBudget b(c);
  auto d = b.update(kSecond, step(400, 500));
  EXPECT_NEAR(d.estimated_ratio, 0.009, 1e-12);
  EXPECT_NEAR(d.probe_ratio["mpi.allreduce"], 0.005, 1e-12);
  EXPECT_TRUE(d.throttle.empty());
  EXPECT_TRUE(d.restore.empty());
  EXPECT_EQ(b.plans().at("mpi.allreduce").role, ProbeRole::redundant);
  EXPECT_EQ(b.plans().at("mpi.allreduce").off_intervals, 0);
}

TEST(OverheadBudget, TheCollectiveAfterComputeStaysOnAndTheOneBehindItIsSampled) {
  OverheadBudget b(config(0));  // no budget: selection alone
  b.update(kSecond, step(400, 400));
  EXPECT_EQ(b.plans().at("mpi.allgather").role, ProbeRole::signal);
  EXPECT_EQ(b.plans().at("mpi.allreduce").role, ProbeRole::redundant);
  // One window on in every six.
  EXPECT_EQ(b.plans().at("mpi.allreduce").on_intervals, 5);
  EXPECT_EQ(b.plans().at("mpi.allreduce").off_intervals, 25);
  auto on = run(b, 120, 400, 400);
  EXPECT_EQ(on["mpi.allgather"], 120);
  EXPECT_EQ(on["mpi.allreduce"], 20);  // 4 cycles of 30, each on for 5
  EXPECT_EQ(b.throttle_count("mpi.allreduce"), 4u);
  EXPECT_EQ(b.throttle_count("mpi.allgather"), 0u);
}

TEST(OverheadBudget, NoComputeBetweenCallsMeansEveryProbeCarriesTheSignal) {
  OverheadBudget b(config(0));
  b.update(kSecond, {{"mpi.allgather", sync(400, 200'000)}, {"mpi.allreduce", sync(400, 20'000)}});
  EXPECT_EQ(b.plans().at("mpi.allreduce").role, ProbeRole::signal) << "a gap under 1 ms is no compute";
}

TEST(OverheadBudget, ADutyCycleThatDoesNotPayForItsTogglesIsNotUsed) {
  BudgetConfig c = config(0);
  c.toggle_cost_ns = 50'000'000;  // 50 ms a toggle in each of 4 ranks: more than 25 s of 1 call/s saves
  OverheadBudget b(c);
  b.update(kSecond, step(400, 1));
  EXPECT_EQ(b.plans().at("mpi.allreduce").role, ProbeRole::redundant);
  EXPECT_EQ(b.plans().at("mpi.allreduce").off_intervals, 0);
  EXPECT_EQ(run(b, 60, 400, 1)["mpi.allreduce"], 60);
}

TEST(OverheadBudget, OverBudgetTheSignalProbeIsNeverDarkLongerThanTheDetectorRemembers) {
  OverheadBudget b(config());
  // The allgather alone costs 8% of a CPU, eight times the budget: a duty
  // cycle of 12% would hold it, but would leave it dark for 7 windows.
  int dark = 0, longest_dark = 0, on = 0;
  std::vector<std::string> messages;
  for (int i = 0; i < 200; ++i) {
    bool off = b.throttled("mpi.allgather");
    dark = off ? dark + 1 : 0;
    longest_dark = std::max(longest_dark, dark);
    on += !off;
    auto d = b.update(kSecond, step(off ? 0 : 8000, b.throttled("mpi.allreduce") ? 0 : 8000));
    messages.insert(messages.end(), d.messages.begin(), d.messages.end());
  }
  EXPECT_LE(longest_dark, 15) << "3 windows of 5 intervals";
  EXPECT_GT(longest_dark, 0) << "it was cycled";
  EXPECT_NEAR(on / 200.0, 0.25, 0.03) << "on a window in every four, no less";
  size_t said = std::count_if(messages.begin(), messages.end(), [](const std::string& m) {
    return m.find("mpi.allgather carries the signal and stays on 25% of the time, no less") != std::string::npos;
  });
  EXPECT_EQ(said, 1u) << "what the budget cannot hold is said once";
}

TEST(OverheadBudget, OverBudgetTheSampledProbeIsCutFirst) {
  OverheadBudget b(config());
  // 0.9% + 0.9%: sampling the allreduce 1 window in 6 leaves 1.05%; 1 in 24, 0.94%.
  auto on = run(b, 240, 900, 900);
  EXPECT_EQ(on["mpi.allgather"], 240);
  EXPECT_EQ(on["mpi.allreduce"], 1 + 10) << "the interval that learnt its role, then a window in every 24";
}

TEST(OverheadBudget, OfTwoSignalProbesTheCheapestKeepsTheVerdict) {
  OverheadBudget b(config());
  std::map<std::string, int> on;
  for (int i = 0; i < 240; ++i) {
    std::map<std::string, ProbeReading> r{{"a", sync(b.throttled("a") ? 0 : 900, 3'000'000)},
                                          {"b", sync(b.throttled("b") ? 0 : 500, 3'000'000)}};
    for (auto& [probe, reading] : r) on[probe] += !b.throttled(probe);
    b.update(kSecond, r);
  }
  EXPECT_EQ(on["b"], 240);
  EXPECT_LT(on["a"], 30);
}

TEST(OverheadBudget, AProbeNeverCalledIsNotTheOneKeptForTheVerdict) {
  OverheadBudget b(config());
  std::map<std::string, int> on;
  for (int i = 0; i < 100; ++i) {
    auto r = step(b.throttled("mpi.allgather") ? 0 : 2000, b.throttled("mpi.allreduce") ? 0 : 2000);
    r["mpi.barrier"] = ProbeReading{0, 0, std::nullopt, true};
    for (auto& [probe, reading] : r) on[probe] += !b.throttled(probe);
    b.update(kSecond, r);
  }
  EXPECT_EQ(on["mpi.barrier"], 100);
  EXPECT_GT(on["mpi.allgather"], 40) << "the allgather, not the barrier, keeps the verdict";
}

TEST(OverheadBudget, RolesAreNotLearntWhileTheSignalProbeIsOff) {
  OverheadBudget b(config());
  for (int i = 0; i < 100; ++i) {
    // With the allgather off, the allreduce would read the compute gap.
    bool gather_off = b.throttled("mpi.allgather");
    b.update(kSecond,
             {{"mpi.allgather", sync(gather_off ? 0 : 2000, 3'000'000)},
              {"mpi.allreduce", sync(b.throttled("mpi.allreduce") ? 0 : 2000, gather_off ? 3'100'000 : 50'000)}});
    EXPECT_EQ(b.plans().at("mpi.allreduce").role, ProbeRole::redundant) << "interval " << i;
  }
}

// 2% against 1%: a cycle of 5 on, 6 or 7 off, whose length moves with the
// rate; a length that moves keeps the phase it is in.
TEST(OverheadBudget, ARateThatWobblesForcesNoExtraToggle) {
  OverheadBudget b(config());
  uint64_t throttles = 0;
  for (int i = 0; i < 100; ++i) {
    uint64_t calls = 1900 + (i % 7) * 30;
    bool off = b.throttled("mpi.allgather");
    b.update(kSecond, step(off ? 0 : calls, b.throttled("mpi.allreduce") ? 0 : calls));
    throttles = b.throttle_count("mpi.allgather");
  }
  EXPECT_GE(throttles, 7u);
  EXPECT_LE(throttles, 10u) << "at most one cycle in 11 intervals";
}

}  // namespace
}  // namespace slowburn::overhead_budget_test
