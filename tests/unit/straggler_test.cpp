#include "detect/straggler.h"

#include <gtest/gtest.h>

#include "support/synthetic_job.h"

namespace slowburn::straggler_test {
namespace {

using namespace testing;

TEST(StragglerDetector, NamesTheSlowRankNotTheWaiters) {
  SyntheticJob job;
  job.compute_ns = [](int rank, int) { return rank == 2 ? 4.5e6 : 3e6; };
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, job.run(3000));
  ASSERT_FALSE(run.findings.empty());
  EXPECT_EQ(culprits(run.findings), std::set<int>{2});
  const Finding& f = run.findings.front();
  EXPECT_EQ(f.type, "straggler");
  EXPECT_EQ(f.culprit.pid, SyntheticJob::pid(2));
  EXPECT_EQ(f.probe, "mpi.allreduce");
  EXPECT_GT(f.last_fraction, 0.9);
  EXPECT_GT(f.blame_share, 0.2);
  EXPECT_GT(f.lateness_median_ns, 1e6);
  // Found within the persistence requirement: 3 windows of 0.5 s, plus grace.
  EXPECT_LT(f.detected_ns - 1'000'000'000ull, 2'500'000'000ull);
  // Cost: the rank's blame, about 1.5 ms per 4.6 ms step.
  auto all = d.findings();
  EXPECT_GT(all.front().cost_share, 0.25);
  EXPECT_LT(all.front().cost_share, 0.4);
  // The waiters show the longest waits; the culprit the shortest.
  const WindowReport& w = run.windows[3];
  double culprit_wait = 0, max_other_wait = 0;
  for (const RankWindowStats& s : w.ranks) {
    if (s.identity.rank == 2)
      culprit_wait = *s.wait_p50_ns;
    else
      max_other_wait = std::max(max_other_wait, *s.wait_p50_ns);
  }
  EXPECT_LT(culprit_wait, max_other_wait);
}

TEST(StragglerDetector, HealthyJobNamesNobody) {
  SyntheticJob job;
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, job.run(3000));
  EXPECT_TRUE(run.findings.empty()) << run.findings.front().summary;
  EXPECT_EQ(d.counters().instances, 3000u);
  EXPECT_EQ(d.counters().discarded_calls, 0u);
}

TEST(StragglerDetector, HealthyAsymmetryIsNotAStraggler) {
  // DESIGN.md: ranks 0-1 systematically differ from ranks 2-4 (algorithm,
  // CPU placement). With 5 ranks and a bimodal pattern MAD is small and a
  // naive z fires; the effect-size floor keeps it quiet.
  SyntheticJob job;
  job.ranks = 5;
  job.noise_ns = 10e3;
  job.compute_ns = [](int rank, int) { return rank < 2 ? 3.1e6 : 3e6; };
  StragglerDetector d = make_detector(5);
  Feed run = feed(d, job.run(3000));
  EXPECT_TRUE(run.findings.empty()) << run.findings.front().summary;
  // ... even though z is large for ranks 0 and 1.
  double max_z = 0;
  for (const WindowReport& w : run.windows)
    for (const RankWindowStats& s : w.ranks) max_z = std::max(max_z, s.z_lateness.value_or(0));
  EXPECT_GT(max_z, 3.5);
}

TEST(StragglerDetector, MadZeroWithIdenticalPeers) {
  // No noise: the healthy ranks are identical, MAD = 0; the fallback scale
  // (and the cap) must still separate the slow rank, without dividing by 0.
  SyntheticJob job;
  job.noise_ns = 0;
  job.compute_ns = [](int rank, int) { return rank == 3 ? 4e6 : 3e6; };
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, job.run(2000));
  EXPECT_EQ(culprits(run.findings), std::set<int>{3});
  size_t judged = 0;
  for (const WindowReport& w : run.windows)
    for (const RankWindowStats& s : w.ranks) {
      if (!s.lateness_median_ns) continue;
      ASSERT_TRUE(s.z_lateness.has_value()) << "4 ranks: every aligned rank gets a z";
      EXPECT_TRUE(std::isfinite(*s.z_lateness));
      ++judged;
    }
  EXPECT_GE(judged, 20u) << "the assertions above ran";
}

TEST(StragglerDetector, PerfectlyEqualRanksGiveZeroZ) {
  SyntheticJob job;
  job.noise_ns = 0;
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, job.run(1000));
  EXPECT_TRUE(run.findings.empty());
  size_t judged = 0;
  for (const WindowReport& w : run.windows)
    for (const RankWindowStats& s : w.ranks) {
      if (!s.lateness_median_ns) continue;
      ASSERT_TRUE(s.z_lateness.has_value());
      EXPECT_EQ(*s.z_lateness, 0.0);
      ++judged;
    }
  EXPECT_GE(judged, 20u) << "the assertions above ran";
}

TEST(StragglerDetector, TwoRanksUseBlameWithoutZ) {
  SyntheticJob job;
  job.ranks = 2;
  job.compute_ns = [](int rank, int) { return rank == 1 ? 4.5e6 : 3e6; };
  DetectorConfig windows_only;  // the window rule's no-z path (sequential_detector_test: the per-instance one)
  windows_only.sequential = false;
  StragglerDetector d = make_detector(2, windows_only);
  Feed run = feed(d, job.run(2000));
  ASSERT_EQ(culprits(run.findings), std::set<int>{1});
  EXPECT_FALSE(run.findings.front().z_lateness.has_value());
  EXPECT_NE(run.findings.front().summary.find("fewer than 3 ranks"), std::string::npos);

  SyntheticJob healthy;
  healthy.ranks = 2;
  StragglerDetector d2 = make_detector(2);
  EXPECT_TRUE(feed(d2, healthy.run(2000)).findings.empty());
}

TEST(StragglerDetector, OneRankAloneIsNeverAStraggler) {
  SyntheticJob job;
  job.ranks = 1;
  StragglerDetector d = make_detector(1);
  Feed run = feed(d, job.run(500));
  EXPECT_TRUE(run.findings.empty());
  EXPECT_EQ(d.counters().instances, 0u);
}

// 4 ranks for 300 steps, then ranks 0-2 alone for 1500 more, rank 1 slow.
std::vector<CallEvent> rank_3_stops_calling() {
  SyntheticJob job;
  auto events = job.run(300);
  SyntheticJob rest;
  rest.ranks = 3;
  rest.prev_exit = {job.prev_exit[0], job.prev_exit[1], job.prev_exit[2]};
  rest.compute_ns = [](int rank, int) { return rank == 1 ? 4.5e6 : 3e6; };
  auto later = rest.run(1500, 300);
  events.insert(events.end(), later.begin(), later.end());
  return events;
}

TEST(StragglerDetector, RankThatStopsCallingIsLeftOutAndReported) {
  // Rank 3 stops calling after step 300 (it moved to another communicator);
  // the others carry on among themselves. The detector must notice, say so,
  // and keep aligning the rest instead of waiting for rank 3 forever.
  StragglerDetector d = make_detector(4);
  auto events = rank_3_stops_calling();
  Feed run = feed(d, events);
  bool noted = std::any_of(run.notes.begin(), run.notes.end(), [](const std::string& n) {
    return n.find("rank 3 (pid 1003) made no mpi.allreduce call") != std::string::npos;
  });
  EXPECT_TRUE(noted);
  EXPECT_EQ(culprits(run.findings), std::set<int>{1});
  EXPECT_GT(d.counters().instances, 1500u);
}

TEST(StragglerDetector, ARankAbsentFromGroupsNotYetToldApartIsNoNews) {
  // The same job on a provisional communicator (gloo groups of one size the
  // registry has not told apart yet): rank 3 is left out without a note.
  auto info = std::make_shared<CommunicatorInfo>();
  info->id = 7;
  info->key = "gloo:test:size=4";
  info->label = "gloo groups of 4 (not yet told apart)";
  info->source = CommSource::inferred;
  info->size = 4;
  info->provisional = true;
  StragglerDetector d = make_detector(4);
  auto events = rank_3_stops_calling();
  Feed run = feed(d, events, true, CallComm{info, std::nullopt, 0, false});
  for (const std::string& n : run.notes) EXPECT_EQ(n.find("made no"), std::string::npos) << n;
  EXPECT_EQ(culprits(run.findings), std::set<int>{1}) << "rank 3 no longer holds instances back";
}

// A communicator whose members are learnt from its calls (an NCCL split)
// holds its instances back for settle_ns. One used for less than that must
// still count, whether its ranks exit or the session ends first.
CallComm learnt_members_comm() {
  auto info = std::make_shared<CommunicatorInfo>();
  info->id = 9;
  info->key = "nccl:test:id=1/split:color=0#1";
  info->label = "split 0 of nccl 1";
  info->source = CommSource::creation;
  return {info, std::nullopt, 0, false};
}

TEST(StragglerDetector, AShortLivedCommunicatorCountsWhenItsRanksExit) {
  StragglerDetector d = make_detector(4);
  SyntheticJob job;
  auto events = job.run(100);  // 0.3 s, under the 1 s settle
  feed(d, events, false, learnt_members_comm());
  EXPECT_EQ(d.counters().instances, 0u) << "still settling";
  DetectorOutput out;
  for (int r = 0; r < 4; ++r) d.remove_rank(SyntheticJob::pid(r), out);
  EXPECT_EQ(d.counters().instances, 100u);
  EXPECT_EQ(d.counters().discarded_calls, 0u);
}

TEST(StragglerDetector, AShortLivedCommunicatorCountsWhenTheSessionEnds) {
  StragglerDetector d = make_detector(4);
  SyntheticJob job;
  feed(d, job.run(100), true, learnt_members_comm());
  EXPECT_EQ(d.counters().instances, 100u);
}

TEST(StragglerDetector, ExitedRankLeavesAlignment) {
  SyntheticJob job;
  StragglerDetector d = make_detector(4);
  feed(d, job.run(100), false);
  DetectorOutput out;
  d.remove_rank(SyntheticJob::pid(0), out);
  ASSERT_EQ(out.notes.size(), 1u);
  EXPECT_EQ(out.notes[0], "rank 0 (pid 1000) exited");
  // Its last records (drained after the exit) still count as its calls,
  // but no longer hold the others' alignment back.
  uint64_t instances = d.counters().instances;
  SyntheticJob rest;
  rest.ranks = 4;
  rest.prev_exit = job.prev_exit;
  auto later = rest.run(10, 100);
  std::erase_if(later, [](const CallEvent& e) { return e.pid == 1000; });
  feed(d, later, false);
  EXPECT_EQ(d.counters().instances, instances + 10);
  EXPECT_EQ(d.counters().unknown_process, 0u);
}

TEST(StragglerDetector, AnExitedCulpritIsStillNamedByItsRank) {
  SyntheticJob job;
  job.compute_ns = [](int rank, int) { return rank == 2 ? 4.5e6 : 3e6; };
  StragglerDetector d = make_detector(4);
  Feed first = feed(d, job.run(250), false);  // ~1.2 s: not yet persistent
  DetectorOutput out;
  d.remove_rank(SyntheticJob::pid(2), out);
  DetectorOutput rest = d.finish(job.prev_exit[0] + 10'000'000'000ull);
  std::vector<Finding> all = d.findings();
  ASSERT_FALSE(all.empty());
  for (const Finding& f : all) EXPECT_EQ(f.culprit.rank, 2) << f.summary;
}

TEST(StragglerDetector, RankWhoseProbeDidNotAttachDoesNotHoldAlignment) {
  // Rank 3's probe failed to attach: it must not be waited for, nor blamed.
  SyntheticJob job;
  job.compute_ns = [](int rank, int) { return rank == 1 ? 4.5e6 : 3e6; };
  StragglerDetector d({}, {{kProbe, "mpi.allreduce", CallKind::synchronizing}});
  for (const RankIdentity& id : identities(4)) {
    d.add_rank(id);
    if (id.rank != 3) d.add_participant(kProbe, id.pid);
  }
  auto events = job.run(1000);
  std::erase_if(events, [](const CallEvent& e) { return e.pid == 1003; });
  Feed run = feed(d, events);
  EXPECT_EQ(d.counters().instances, 1000u);
  EXPECT_EQ(d.counters().late_calls, 0u);
  EXPECT_EQ(culprits(run.findings), std::set<int>{1});
  // A hang among the attached ranks does not name rank 3.
  DetectorConfig config;
  std::vector<InFlightCall> inside = {{1000, 1000, kProbe, 1'000'000'000, 0, nullptr},
                                      {1001, 1001, kProbe, 1'000'000'000, 0, nullptr}};
  auto hang = d.check_in_flight(20'000'000'000, inside);
  ASSERT_EQ(hang.findings.size(), 1u);
  EXPECT_EQ(hang.findings[0].culprit.rank, 2);
}

TEST(StragglerDetector, SequenceGapsAreCountedAndDetectionSurvives) {
  SyntheticJob job;
  job.compute_ns = [](int rank, int) { return rank == 0 ? 4.5e6 : 3e6; };
  auto events = job.run(2000);
  // Lose every 50th record of rank 2 (a full ring buffer).
  std::vector<CallEvent> lossy;
  for (const CallEvent& e : events)
    if (!(e.pid == 1002 && e.seq % 50 == 25)) lossy.push_back(e);
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, lossy);
  EXPECT_EQ(d.counters().sequence_gaps, 40u);
  EXPECT_EQ(culprits(run.findings), std::set<int>{0});
  EXPECT_EQ(d.counters().instances, 2000u - 40u);
}

TEST(StragglerDetector, HangNamesTheRankThatNeverArrived) {
  DetectorConfig config;
  config.hang_ns = 5'000'000'000;
  StragglerDetector d = make_detector(4, config);
  std::vector<InFlightCall> inside = {{1000, 1000, kProbe, 10'000'000'000, 0, nullptr},
                                      {1001, 1001, kProbe, 10'100'000'000, 0, nullptr},
                                      {1003, 1003, kProbe, 10'200'000'000, 0, nullptr}};
  EXPECT_TRUE(d.check_in_flight(12'000'000'000, inside).findings.empty());  // 2 s: not yet
  auto out = d.check_in_flight(16'000'000'000, inside);
  ASSERT_EQ(out.findings.size(), 1u);
  const Finding& f = out.findings[0];
  EXPECT_EQ(f.type, "hang");
  EXPECT_EQ(f.culprit.rank, 2);
  EXPECT_EQ(f.waiting_ranks, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(f.waited_ns, 6'000'000'000u);
  // Reported once, not every second.
  EXPECT_TRUE(d.check_in_flight(17'000'000'000, inside).findings.empty());
}

TEST(StragglerDetector, HangOnAnExitedRankAndAHangAfterRecovery) {
  DetectorConfig config;
  config.hang_ns = 5'000'000'000;
  StragglerDetector d = make_detector(3, config);
  DetectorOutput gone;
  d.remove_rank(1002, gone);  // rank 2 crashed
  std::vector<InFlightCall> inside = {{1000, 1000, kProbe, 1'000'000'000, 0, nullptr},
                                      {1001, 1001, kProbe, 1'000'000'000, 0, nullptr}};
  auto out = d.check_in_flight(7'000'000'000, inside);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].culprit.rank, 2);
  EXPECT_NE(out.findings[0].summary.find("exited and will never enter mpi.allreduce"), std::string::npos);
  // Once nobody waits any more the hang is over; a new one is reported again.
  EXPECT_TRUE(d.check_in_flight(8'000'000'000, {}).findings.empty());
  std::vector<InFlightCall> again = {{1000, 1000, kProbe, 9'000'000'000, 0, nullptr},
                                     {1001, 1001, kProbe, 9'000'000'000, 0, nullptr}};
  EXPECT_EQ(d.check_in_flight(15'000'000'000, again).findings.size(), 1u);
}

TEST(StragglerDetector, CallsEnteredAfterTheClockWasReadAreNotHangs) {
  // The session reads its clock, then the kernel's in-flight map: a call
  // may have entered in between. Its wait is not negative (or 2^64 ns).
  StragglerDetector d = make_detector(4);
  std::vector<InFlightCall> inside = {{1003, 1003, kProbe, 20'000'000'001, 0, nullptr}};
  EXPECT_TRUE(d.check_in_flight(20'000'000'000, inside).findings.empty());
}

TEST(StragglerDetector, SlowOnsetCaughtByCusumBelowTheMainFloor) {
  // Rank 1's compute drifts up to +6% and stays: a ~6% blame share, below
  // the 10% floor of the per-window test, sustained.
  SyntheticJob job;
  job.noise_ns = 20e3;
  job.compute_ns = [](int rank, int step) {
    if (rank != 1) return 3e6;
    return 3e6 * (1.0 + 0.06 * std::min(1.0, step / 1000.0));
  };
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, job.run(4000));
  ASSERT_EQ(culprits(run.findings), std::set<int>{1});
  EXPECT_EQ(run.findings.front().detector, "cusum");
  EXPECT_LT(run.findings.front().blame_share, 0.10);
}

TEST(StragglerDetector, CostIsTheBlameCharged) {
  SyntheticJob job;
  job.noise_ns = 0;
  job.collective_ns = 0;
  job.compute_ns = [](int rank, int) { return rank == 1 ? 4e6 : 3e6; };
  StragglerDetector d = make_detector(3);
  feed(d, job.run(100));
  // Every step rank 1 arrives 1 ms after the others: 100 x 1 ms.
  EXPECT_EQ(d.blame_ns(kProbe, SyntheticJob::pid(1)), 100'000'000u);
  EXPECT_EQ(d.blame_ns(kProbe, SyntheticJob::pid(0)), 0u);
}

}  // namespace
}  // namespace slowburn::straggler_test
