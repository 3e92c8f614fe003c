// The slow burn in the probe mode (detect/aggregate_slow_burn.h, through
// the AggregateDetector): a rank that costs the job a few percent is named
// minor from the kernel's window sums, dated, and kept across a restart of
// the service; healthy jobs and healthy structure stay silent.
#include "detect/aggregate_slow_burn.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>

#include "detect/aggregate_detector.h"

namespace slowburn::aggregate_slow_burn_test {
namespace {

constexpr uint32_t kAllreduce = 1;
constexpr uint64_t kSecondNs = 1'000'000'000;
constexpr uint64_t kWindowNs = 5 * kSecondNs;
constexpr double kStepNs = 50e6;

std::vector<ProbeInfo> probes() { return {{kAllreduce, "mpi.allreduce", CallKind::synchronizing}}; }

// 8 ranks on a node, 50 ms steps, compute noise 1% of the step (0.5 ms);
// `factor(rank, t_ns)` scales a rank's compute at job time t. Each window
// is what the kernel counts (bpf/collagg.bpf.c): per rank its arrivals, the
// instances it came last in and its lead over the runner-up there.
struct Job {
  int ranks = 8;
  std::function<double(int, uint64_t)> factor = [](int, uint64_t) { return 1.0; };
  // Every rank's time inside its calls waiting for a CPU (unset: the
  // kernel kept no CPU times).
  std::optional<double> runq_share;
  // A rank's step now and then stalls 100 ms (a collector's pause, a
  // descheduled step): the chance per rank and step.
  double stall_chance = 0;
  double noise_share = 0.01;  // of the step, one standard deviation
  // A rank that computes longer by this share of the step but arrives on
  // time (its collective lets it go first): healthy structure.
  int early_leaver = -1;
  double early_leaver_gap_share = 0;
  // A rank whose every lead, when last, the kernel says came from leaving
  // its previous collective later than usual (blame_leaving_ns).
  int late_leaver = -1;
  std::mt19937_64 rng{7};
  std::shared_ptr<CommunicatorInfo> comm = [] {
    auto c = std::make_shared<CommunicatorInfo>();
    c->id = 1;
    c->key = "mpi:42:cid=0:ranks=0-7";
    c->label = "MPI_COMM_WORLD";
    c->size = 8;
    return c;
  }();

  std::vector<AggWindowInput> window(uint64_t start_ns) {
    std::normal_distribution<double> noise(0, noise_share * kStepNs);
    std::vector<AggWindowInput> inputs(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      AggWindowInput& in = inputs[static_cast<size_t>(r)];
      in.identity.pid = 2000 + r;
      in.identity.rank = r;
      in.identity.local_rank = r;
      in.identity.world_size = ranks;
      in.identity.job = "42";
      in.probe_id = kAllreduce;
      in.comm = comm;
      in.comm_rank = r;
    }
    const uint64_t steps = kWindowNs / static_cast<uint64_t>(kStepNs);
    for (uint64_t s = 0; s < steps; ++s) {
      uint64_t t = start_ns + s * static_cast<uint64_t>(kStepNs);
      std::vector<double> arrival(static_cast<size_t>(ranks));
      for (int r = 0; r < ranks; ++r) arrival[static_cast<size_t>(r)] = kStepNs * factor(r, t) + noise(rng);
      if (stall_chance > 0)
        for (double& a : arrival)
          if (std::uniform_real_distribution<double>(0, 1)(rng) < stall_chance) a += 100e6;
      auto order = arrival;
      std::sort(order.begin(), order.end());
      size_t last = static_cast<size_t>(std::max_element(arrival.begin(), arrival.end()) - arrival.begin());
      for (size_t r = 0; r < arrival.size(); ++r) {
        AggWindowInput& in = inputs[r];
        in.calls += 1;
        in.arrivals += 1;
        in.lateness_ns += static_cast<uint64_t>(arrival[r] - order.front());
        in.gaps += 1;
        in.gap_ns += static_cast<uint64_t>(arrival[r]);
        if (static_cast<int>(r) == early_leaver) in.gap_ns += static_cast<uint64_t>(early_leaver_gap_share * kStepNs);
        if (runq_share) {
          auto wait = static_cast<uint64_t>(order.back() - arrival[r]) + 100'000;  // until the last arrival
          in.cpu_calls += 1;
          in.cpu_wait_ns += wait;
          in.runq_calls += 1;
          in.runq_ns += static_cast<uint64_t>(static_cast<double>(wait) * *runq_share);
        }
      }
      inputs[last].lasts += 1;
      inputs[last].blame_ns += static_cast<uint64_t>(order.back() - order[order.size() - 2]);
      if (static_cast<int>(last) == late_leaver)
        inputs[last].blame_leaving_ns += static_cast<uint64_t>(order.back() - order[order.size() - 2]);
      inputs[0].instances += 1;
    }
    return inputs;
  }
};

struct Found {
  Finding finding;
  uint64_t at_ns = 0;
};

// Runs [from_s, to_s) of the job through `d`, window by window.
std::vector<Found> run(AggregateDetector& d, Job& job, uint64_t from_s, uint64_t to_s) {
  std::vector<Found> found;
  for (uint64_t t = from_s * kSecondNs; t < to_s * kSecondNs; t += kWindowNs)
    for (Finding& f : d.evaluate(t, t + kWindowNs, job.window(t)).findings)
      found.push_back({std::move(f), t + kWindowNs});
  return found;
}

Job slower_from(int rank, double factor, uint64_t from_ns = 0) {
  Job job;
  job.factor = [=](int r, uint64_t t) { return r == rank && t >= from_ns ? factor : 1.0; };
  return job;
}

TEST(AggregateSlowBurn, ARankThreePercentSlowerIsNamedMinorWithItsCost) {
  AggregateDetector d(DetectorConfig{}, probes());
  Job job = slower_from(5, 1.03);
  auto found = run(d, job, 0, 300);
  ASSERT_EQ(found.size(), 1u) << (found.empty() ? "" : found.front().finding.summary);
  const Finding& f = found.front().finding;
  EXPECT_EQ(f.culprit.rank, 5);
  EXPECT_EQ(f.detector, "session-cost");
  EXPECT_EQ(f.severity, "minor");
  EXPECT_EQ(f.probe, "mpi.allreduce");
  ASSERT_TRUE(f.session_cost.has_value());
  // 1.5 ms a step, less what the runner-up's noise hides, of a ~51 ms step.
  EXPECT_GT(f.cost_share, 0.01);
  EXPECT_LT(f.cost_share, 0.03);
  EXPECT_GT(f.last_fraction, 0.5);
  EXPECT_NE(f.summary.find("is a minor straggler over the session"), std::string::npos) << f.summary;
  // Judged once two minutes are traced, on the minute.
  EXPECT_GE(found.front().at_ns, 120 * kSecondNs);
  EXPECT_LE(found.front().at_ns, 185 * kSecondNs);
  ASSERT_TRUE(f.session_cost->onset.has_value());
  EXPECT_TRUE(f.session_cost->onset->from_start) << f.summary;
  // It stands (slowburn_straggler) while the rule holds, though no window
  // flags it, with its evidence as of the latest look (said once).
  ASSERT_TRUE(d.active().contains(2005));
  const Finding& standing = d.active().at(2005);
  EXPECT_GT(standing.cost_ns, f.cost_ns) << "the cost it has grown to since it was said";
  EXPECT_EQ(standing.severity, "minor");
  std::cout << f.summary << "\n";
}

TEST(AggregateSlowBurn, ALatenessFromLeavingLateIsNoCostOfItsOwn) {
  // Rank 5 last as above, every lead of it from leaving its previous
  // collective late (held inside it): its window reports say so, and the
  // slow burn, which counts a rank's own lateness only, names nobody.
  AggregateDetector d(DetectorConfig{}, probes());
  Job job = slower_from(5, 1.03);
  job.late_leaver = 5;
  std::vector<Finding> findings;
  double leaving_share = 0;
  for (uint64_t t = 0; t < 300 * kSecondNs; t += kWindowNs) {
    DetectorOutput out = d.evaluate(t, t + kWindowNs, job.window(t));
    findings.insert(findings.end(), out.findings.begin(), out.findings.end());
    for (const WindowReport& w : out.windows)
      for (const RankWindowStats& s : w.ranks)
        if (s.identity.pid == 2005) leaving_share = s.blame_leaving_share;
  }
  EXPECT_TRUE(findings.empty()) << findings.front().summary;
  EXPECT_DOUBLE_EQ(leaving_share, 1.0);
  const AggSlowBurnState state = d.slow_burn_state();
  ASSERT_EQ(state.lanes.size(), 1u);
  const LaneRankTotals& t = state.lanes[0].totals.ranks.at(2005);
  EXPECT_GT(t.blame_ns, 0u);
  EXPECT_EQ(t.blame_leaving_ns, t.blame_ns);
}

TEST(AggregateSlowBurn, AHealthyJobAndHealthyStructureNameNobody) {
  {
    AggregateDetector d(DetectorConfig{}, probes());
    Job job;
    EXPECT_TRUE(run(d, job, 0, 1800).empty()) << "30 minutes of a healthy 8-rank job";
  }
  // Last in nearly every step, by a hair (0.5% of the step, beside 1% noise):
  // it costs the job little, and the cost decides.
  AggregateDetector d(DetectorConfig{}, probes());
  Job job = slower_from(2, 1.005);
  auto found = run(d, job, 0, 900);
  EXPECT_TRUE(found.empty()) << (found.empty() ? "" : found.front().finding.summary);
}

TEST(AggregateSlowBurn, ADayOfAHealthyJobWithStallsAndALeanNamesNobody) {
  // A day of looks (1,440 of the slow burn's, each with its drift test):
  // rank 2 last in most steps by a little (1.2% more compute: its gap
  // CUSUM stands alarmed), and a 100 ms stall on some rank about once a
  // minute.
  AggregateDetector d(DetectorConfig{}, probes());
  Job job = slower_from(2, 1.012);
  job.stall_chance = 1.0 / (60 * 20 * 8);
  auto found = run(d, job, 0, 24 * 3600);
  EXPECT_TRUE(found.empty()) << found.size() << " findings, the first at " << found.front().at_ns / kSecondNs
                             << " s: " << found.front().finding.summary;
  EXPECT_GT(d.slow_burn_state().lanes.at(0).gap_cusum.at(2002), 20.0) << "its step is longer than its peers'";
}

TEST(AggregateSlowBurn, ACostThatBeganLateIsNamedOnTheLatestStretchAndDated) {
  AggregateDetector d(DetectorConfig{}, probes());
  // An hour of healthy baseline, then rank 3 slows 3%.
  Job job = slower_from(3, 1.03, 3600 * kSecondNs);
  auto found = run(d, job, 0, 4500);
  ASSERT_EQ(found.size(), 1u) << (found.empty() ? "" : found.front().finding.summary);
  const Finding& f = found.front().finding;
  EXPECT_EQ(f.culprit.rank, 3);
  ASSERT_TRUE(f.session_cost.has_value());
  EXPECT_TRUE(f.session_cost->latest) << "over an hour of baseline its cost is under the floor";
  EXPECT_LE(found.front().at_ns, 3600 * kSecondNs + 600 * kSecondNs) << "named within the ten-minute stretch";
  ASSERT_TRUE(f.session_cost->onset.has_value()) << f.summary;
  EXPECT_FALSE(f.session_cost->onset->from_start);
  // Dated on the history's one-minute points.
  EXPECT_NEAR(static_cast<double>(f.session_cost->onset->at_ns) / 1e9, 3600, 120) << f.summary;
  std::cout << f.summary << "\n";
}

TEST(AggregateSlowBurn, ARestoredBaselineGoesOnAcrossARestart) {
  Job job = slower_from(5, 1.03);
  AggregateDetector before(DetectorConfig{}, probes());
  ASSERT_EQ(run(before, job, 0, 300).size(), 1u);
  AggSlowBurnState saved = before.slow_burn_state();
  ASSERT_EQ(saved.lanes.size(), 1u);
  EXPECT_EQ(saved.lanes[0].comm_key, "mpi:42:cid=0:ranks=0-7");
  EXPECT_EQ(saved.lanes[0].totals.ranks.size(), 8u);

  // The service restarts 30 s later: with its baseline it names the rank
  // at its first look; without it, only after two minutes more.
  AggregateDetector restored(DetectorConfig{}, probes());
  restored.restore_slow_burn(saved);
  auto found = run(restored, job, 330, 400);
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.front().finding.culprit.rank, 5);
  EXPECT_EQ(found.front().at_ns, 335 * kSecondNs) << "named at the first window after the restart";
  EXPECT_GE(found.front().finding.session_cost->traced_ns, 300 * kSecondNs) << "judged on the whole baseline";

  AggregateDetector fresh(DetectorConfig{}, probes());
  auto late = run(fresh, job, 330, 400);
  EXPECT_TRUE(late.empty()) << "without the baseline, 70 s are too short to judge";
}

TEST(AggregateSlowBurn, WhereEveryRankWaitsForACpuTheMinorCostIsWithheldAndSaidOnce) {
  // Rank 5 3% slower, every rank waiting for a CPU 66% of its time inside
  // its calls (more runnable threads than CPUs): who is last is the
  // scheduler's choice, and a minor cost is not named; it is said, once.
  AggregateDetector d(DetectorConfig{}, probes());
  Job job = slower_from(5, 1.03);
  job.runq_share = 0.66;
  std::vector<std::string> notes;
  std::vector<Finding> findings;
  for (uint64_t t = 0; t < 400 * kSecondNs; t += kWindowNs) {
    DetectorOutput out = d.evaluate(t, t + kWindowNs, job.window(t));
    notes.insert(notes.end(), out.notes.begin(), out.notes.end());
    findings.insert(findings.end(), out.findings.begin(), out.findings.end());
  }
  EXPECT_TRUE(findings.empty()) << findings.front().summary;
  EXPECT_FALSE(d.active().contains(2005)) << "withheld: it does not stand";
  ASSERT_EQ(notes.size(), 1u) << "said once, not at every look";
  EXPECT_EQ(notes.front().find("withheld: rank 5 (pid 2005) is a minor straggler"), 0u) << notes.front();
  EXPECT_NE(notes.front().find("waited for a CPU 66% of their time inside their calls, it 66%"), std::string::npos)
      << notes.front();
  std::cout << notes.front() << "\n";

  // The same, where the node said rank 5's own cgroup throttled it all
  // along: named. Said over its first minute only: withheld as before.
  AggregateDetector throttled(DetectorConfig{}, probes());
  throttled.own_cpu_cause({2005, 0, 300 * kSecondNs});
  Job busy = slower_from(5, 1.03);
  busy.runq_share = 0.66;
  auto own_cause = run(throttled, busy, 0, 300);
  ASSERT_EQ(own_cause.size(), 1u);
  EXPECT_EQ(own_cause.front().finding.culprit.rank, 5);
  AggregateDetector once(DetectorConfig{}, probes());
  once.own_cpu_cause({2005, 0, 60 * kSecondNs});
  Job busy_again = slower_from(5, 1.03);
  busy_again.runq_share = 0.66;
  EXPECT_TRUE(run(once, busy_again, 0, 300).empty()) << "throttled for its first minute, not its cost's stretch";

  // The same rank on a node with a CPU for each: named.
  AggregateDetector quiet(DetectorConfig{}, probes());
  Job own = slower_from(5, 1.03);
  own.runq_share = 0.0;
  auto found = run(quiet, own, 0, 300);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.front().finding.culprit.rank, 5);
}

// Rank 6 in line for `healthy_s`, then its compute ramps by `slope` a
// minute (1.00x to 1.10x over ten minutes at 0.01).
Job ramping_after(uint64_t healthy_s, double slope_per_min) {
  Job job;
  job.factor = [=](int r, uint64_t t) {
    if (r != 6 || t < healthy_s * kSecondNs) return 1.0;
    return 1.0 + slope_per_min * static_cast<double>(t - healthy_s * kSecondNs) / 60e9;
  };
  return job;
}

TEST(AggregateSlowBurn, ARampIsNamedAsADriftBeforeItPassesOnePointZeroFour) {
  // Five minutes in line, then 1.00x to 1.10x over ten minutes: at 1.04x
  // (four minutes in) its cost is still under the 1% floor on the latest
  // stretch; its step, growing against its peers', names it as a drift.
  AggregateDetector d(DetectorConfig{}, probes());
  Job job = ramping_after(300, 0.01);
  auto found = run(d, job, 0, 900);
  ASSERT_FALSE(found.empty()) << "the ramp was not named";
  const Finding& f = found.front().finding;
  const double factor = job.factor(6, found.front().at_ns);
  std::cout << "named at " << found.front().at_ns / kSecondNs << " s, at " << factor << "x: " << f.summary << "\n";
  EXPECT_EQ(f.culprit.rank, 6);
  EXPECT_EQ(f.detector, "session-cost");
  ASSERT_TRUE(f.session_cost.has_value());
  EXPECT_TRUE(f.session_cost->drift) << f.summary;
  EXPECT_LT(factor, 1.04) << "named before it passes 1.04x";
  EXPECT_LT(f.cost_share, 0.01) << "under the floor: what the drift rule is for";
  ASSERT_TRUE(f.session_cost->onset.has_value());
  EXPECT_FALSE(f.session_cost->onset->from_start);
  EXPECT_GE(f.session_cost->onset->at_ns, 300 * kSecondNs) << "not before the ramp began";
  EXPECT_NE(f.summary.find("drift"), std::string::npos) << f.summary;
  EXPECT_EQ(found.size(), 1u) << "said once: a drift does not come and go as its step's rises do";
  for (const Found& other : found) EXPECT_EQ(other.finding.culprit.rank, 6) << other.finding.summary;
}

TEST(AggregateSlowBurn, ARampAfterHoursOfBaselineIsNamedAsSoonAndDated) {
  // The same ramp six hours into the service's baseline: its history's
  // points are minutes apart by then (the latest minutes' snapshots date
  // the change), and the whole baseline dilutes nothing on the stretch.
  constexpr uint64_t kHealthyS = 6 * 3600;
  AggregateDetector d(DetectorConfig{}, probes());
  Job job = ramping_after(kHealthyS, 0.01);
  auto found = run(d, job, 0, kHealthyS + 600);
  ASSERT_FALSE(found.empty()) << "the ramp was not named";
  const Finding& f = found.front().finding;
  const double factor = job.factor(6, found.front().at_ns);
  std::cout << "named at " << found.front().at_ns / kSecondNs - kHealthyS << " s into the ramp, at " << factor
            << "x: " << f.summary << "\n";
  EXPECT_EQ(f.culprit.rank, 6);
  ASSERT_TRUE(f.session_cost.has_value());
  EXPECT_TRUE(f.session_cost->drift) << f.summary;
  EXPECT_LT(factor, 1.04) << "named before it passes 1.04x";
  ASSERT_TRUE(f.session_cost->onset.has_value());
  EXPECT_FALSE(f.session_cost->onset->from_start);
  EXPECT_NEAR(static_cast<double>(f.session_cost->onset->at_ns) / 1e9, kHealthyS + 60, 90) << f.summary;
}

TEST(AggregateSlowBurn, ARankSlightlySlowerFromTheStartIsNoDrift) {
  // 1.5% more compute from the first step: its gap CUSUM alarms and rises,
  // but its cost has no onset: not a drift. Under the floor, not named.
  AggregateDetector d(DetectorConfig{}, probes());
  Job job = slower_from(6, 1.015);
  auto found = run(d, job, 0, 1200);
  for (const Found& f : found) {
    ASSERT_TRUE(f.finding.session_cost.has_value()) << f.finding.summary;
    EXPECT_FALSE(f.finding.session_cost->drift) << f.finding.summary;
    EXPECT_GE(f.finding.cost_share, 0.01) << "named under the floor: " << f.finding.summary;
  }
  const AggSlowBurnState state = d.slow_burn_state();
  ASSERT_EQ(state.lanes.size(), 1u);
  EXPECT_GT(state.lanes[0].gap_cusum.at(2006), 20.0) << "its step is longer than its peers'";
}

TEST(AggregateSlowBurn, ALeanThatStallsOnceIsNoDrift) {
  // Rank 0 computes 2% longer every step but is let go first, and arrives
  // 0.2% late (0.1 ms, beside 0.05 ms of noise): last in nearly every step,
  // at a cost under a quarter of the floor, its gap CUSUM alarmed for
  // hours. Two hours in, one of its steps stalls a second (a checkpoint):
  // that second has a dated onset and costs the next two minutes ~0.8%,
  // but its step did not begin to grow then.
  AggregateDetector d(DetectorConfig{}, probes());
  Job job;
  job.noise_share = 0.001;
  job.early_leaver = 0;
  job.early_leaver_gap_share = 0.018;
  job.factor = [](int r, uint64_t t) { return r != 0 ? 1.0 : t == 7200 * kSecondNs ? 21.0 : 1.002; };
  auto found = run(d, job, 0, 7500);
  for (const Found& f : found) {
    ASSERT_TRUE(f.finding.session_cost.has_value()) << f.finding.summary;
    EXPECT_FALSE(f.finding.session_cost->drift) << f.at_ns / kSecondNs << " s: " << f.finding.summary;
  }
  EXPECT_GT(d.slow_burn_state().lanes.at(0).gap_cusum.at(2000), 20.0) << "its step is longer than its peers'";
}

TEST(AggregateSlowBurn, ARankThatExitsLeavesItsLanes) {
  AggregateSlowBurn s(DetectorConfig{}, probes());
  Job job;
  s.add(0, kWindowNs, job.window(0));
  ASSERT_EQ(s.state().lanes.size(), 1u);
  for (int r = 0; r < 7; ++r) s.remove_rank(2000 + r);
  EXPECT_EQ(s.state().lanes.front().totals.ranks.size(), 1u);
  s.remove_rank(2007);
  EXPECT_TRUE(s.state().lanes.empty()) << "a lane with no rank left goes";
}

}  // namespace
}  // namespace slowburn::aggregate_slow_burn_test
