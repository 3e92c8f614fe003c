// The straggler that arrives on time: the pure judge of CPU times inside a
// collective (detect/inside.h), and the detector naming such a rank.
#include "detect/inside.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "detect/straggler.h"
#include "detect/verdict.h"
#include "sinks/json_sink.h"
#include "support/synthetic_job.h"

namespace slowburn::inside_test {
namespace {

using namespace testing;

constexpr uint64_t kMs = 1'000'000;

// `calls` calls of 10 ms, `oncpu` and `runq` the shares of each.
InsideSums sums(double oncpu, double runq, uint64_t calls = 20) {
  InsideSums s;
  for (uint64_t i = 0; i < calls; ++i)
    s.add(10 * kMs, static_cast<uint64_t>(oncpu * 10 * kMs), static_cast<uint64_t>(runq * 10 * kMs));
  return s;
}

std::set<int32_t> apart(const std::vector<InsideJudgement>& judged) {
  std::set<int32_t> out;
  for (const InsideJudgement& j : judged)
    if (j.apart) out.insert(j.pid);
  return out;
}

const InsideJudgement& of(const std::vector<InsideJudgement>& judged, int32_t pid) {
  return *std::find_if(judged.begin(), judged.end(), [&](const InsideJudgement& j) { return j.pid == pid; });
}

// 20 calls of 10 ms in a 250 ms window, 8 ms of each after the last arrival.
constexpr uint64_t kAfterLast = 20 * 8 * kMs;
constexpr uint64_t kElapsed = 250 * kMs;

TEST(InsideJudge, TheRankThatWaitsForItsCpuIsSetApart) {
  // Spinning peers run ~95% of their time inside; the throttled rank 25%.
  std::map<int32_t, InsideSums> ranks{
      {1, sums(0.95, 0.02)}, {2, sums(0.25, 0.75)}, {3, sums(0.94, 0.03)}, {4, sums(0.96, 0.02)}};
  auto judged = judge_inside(ranks, kAfterLast, kElapsed);
  EXPECT_EQ(apart(judged), std::set<int32_t>{2});
  const InsideJudgement& j = of(judged, 2);
  EXPECT_NEAR(j.oncpu_share, 0.25, 1e-9);
  EXPECT_NEAR(*j.runq_share, 0.75, 1e-9);
  EXPECT_NEAR(*j.peers_oncpu_share, 0.95, 1e-9);
  EXPECT_NEAR(*j.peers_runq_share, 0.02, 1e-9);
  // Its wait beyond the peers' median: 20 x (7.5 - 0.2) ms.
  EXPECT_EQ(j.cost_ns, 20 * 73 * kMs / 10);
  EXPECT_NEAR(j.cost_share, 146.0 / 250.0, 1e-9);
}

TEST(InsideJudge, WhereEveryRankWaitsNobodyIsApart) {
  // More spinning ranks than cores: every one waits about half the time.
  std::map<int32_t, InsideSums> ranks{
      {1, sums(0.55, 0.62)}, {2, sums(0.52, 0.66)}, {3, sums(0.57, 0.60)}, {4, sums(0.50, 0.70)}};
  EXPECT_TRUE(apart(judge_inside(ranks, kAfterLast, kElapsed)).empty());
}

TEST(InsideJudge, TwoThrottledRanksAreBothApart) {
  std::map<int32_t, InsideSums> ranks{{1, sums(0.95, 0.02)},
                                      {2, sums(0.25, 0.75)},
                                      {3, sums(0.94, 0.03)},
                                      {4, sums(0.30, 0.70)},
                                      {5, sums(0.96, 0.02)}};
  EXPECT_EQ(apart(judge_inside(ranks, kAfterLast, kElapsed)), (std::set<int32_t>{2, 4}));
}

TEST(InsideJudge, ALittleMoreWaitingOnALoadedNodeIsNoCause) {
  // 70% against peers' 55%: above the excess floor, but not twice their
  // odds (70/30 = 2.3 against 55/45 = 1.2: 1.9x).
  std::map<int32_t, InsideSums> ranks{{1, sums(0.45, 0.55)}, {2, sums(0.30, 0.70)}, {3, sums(0.45, 0.55)}};
  EXPECT_TRUE(apart(judge_inside(ranks, kAfterLast, kElapsed)).empty());
}

TEST(InsideJudge, TheCostIsWhatTheCollectiveCouldHaveWaited) {
  std::map<int32_t, InsideSums> ranks{{1, sums(0.95, 0.02)}, {2, sums(0.25, 0.75)}, {3, sums(0.95, 0.02)}};
  // The instances spent only 20 ms after their last arrivals: no more is its doing.
  auto capped = judge_inside(ranks, 20 * kMs, kElapsed);
  EXPECT_EQ(of(capped, 2).cost_ns, 20 * kMs);
  EXPECT_TRUE(apart(capped).empty()) << "8% of the window is under the 10% floor";
  // The same in a window ten times longer: a cost too small to name.
  EXPECT_TRUE(apart(judge_inside(ranks, kAfterLast, 10 * kElapsed)).empty());
}

TEST(InsideJudge, WithoutRunQueueTimesNobodyIsNamed) {
  // A kernel without CONFIG_SCHED_INFO: on-CPU shares only, said but not judged.
  InsideSums low, high;
  for (int i = 0; i < 20; ++i) {
    low.add(10 * kMs, 2 * kMs, std::nullopt);
    high.add(10 * kMs, 9 * kMs, std::nullopt);
  }
  auto judged = judge_inside({{1, high}, {2, low}, {3, high}}, kAfterLast, kElapsed);
  EXPECT_TRUE(apart(judged).empty());
  EXPECT_NEAR(of(judged, 2).oncpu_share, 0.2, 1e-9);
  EXPECT_FALSE(of(judged, 2).runq_share.has_value());
}

TEST(InsideJudge, TooFewCallsAreNotJudged) {
  std::map<int32_t, InsideSums> ranks{{1, sums(0.95, 0.02, 3)}, {2, sums(0.25, 0.75, 3)}, {3, sums(0.95, 0.02, 3)}};
  EXPECT_TRUE(apart(judge_inside(ranks, kAfterLast, kElapsed)).empty());
}

TEST(InsideBaseline, RatioAgainstTheLowQuantileOfEarlierWindows) {
  InsideBaseline b;
  for (double m : {2e6, 1e6, 1.5e6}) EXPECT_FALSE(b.observe(m).has_value()) << "too short a past";
  EXPECT_NEAR(*b.observe(4e6), 4.0, 1e-9);  // against 1 ms, the 20th percentile of 2, 1 and 1.5
  EXPECT_EQ(b.windows(), 4u);
}

TEST(InsideBaseline, OneLuckyWindowIsNotTheBaseline) {
  InsideBaseline b;
  b.observe(0.2e6);  // a window with a few fast instances
  for (int i = 0; i < 20; ++i) b.observe(2e6);
  EXPECT_NEAR(*b.observe(2e6), 1.0, 1e-9);
  EXPECT_NEAR(*b.observe(5e6), 2.5, 1e-9);
}

// A communication-bound synthetic job: 0.5 ms of compute, 3 ms of
// collective; `waits(rank)` is the share of each call a rank spends
// waiting for its CPU (the rest on it).
std::vector<CallEvent> comm_bound(const std::function<double(int)>& waits, int steps) {
  SyntheticJob job;
  job.compute_ns = [](int, int) { return 0.5e6; };
  job.collective_ns = 3e6;
  std::vector<CallEvent> events = job.run(steps);
  set_cpu_waits(events, waits);
  return events;
}

TEST(StragglerDetectorInside, ARankOnTimeThatWaitsForItsCpuIsNamedInside) {
  StragglerDetector d = make_detector(4);
  std::vector<CallEvent> events = comm_bound([](int rank) { return rank == 1 ? 0.75 : 0.02; }, 2000);
  Feed run = feed(d, events);
  ASSERT_EQ(culprits(run.findings), std::set<int>{1});
  const Finding& f = run.findings.front();
  EXPECT_EQ(f.detector, "inside");
  EXPECT_EQ(f.where, "inside");
  ASSERT_TRUE(f.inside.has_value());
  EXPECT_NEAR(f.inside->runq_share, 0.75, 0.01);
  EXPECT_NEAR(*f.inside->peers_runq_share, 0.02, 0.01);
  ASSERT_TRUE(f.inside->after_last_arrival_ns.has_value());
  EXPECT_NEAR(*f.inside->after_last_arrival_ns, 3e6, 0.1e6);
  EXPECT_NE(f.summary.find("is the straggler inside mpi.allreduce"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("arrives on time"), std::string::npos) << f.summary;
  SessionVerdict v = d.verdict(events.back().exit_ns);
  ASSERT_EQ(v.stragglers.size(), 1u);
  EXPECT_EQ(v.stragglers.front().where, "inside");
  EXPECT_GT(v.stragglers.front().cost_share, 0.3);
}

TEST(StragglerDetectorInside, ARankStarvedWhileItWaitsForALateRankIsNotNamedForItsCpu) {
  // The CI failure of stop 50: 4 ranks on 2 CPUs, rank 3 computing 2x;
  // rank 2 waited for a CPU 99% of its time inside the all-gather and was
  // named inside before rank 3. The collective waited longer for rank 3's
  // arrival than for rank 2's CPU: who ran instead of rank 2 was the
  // scheduler's choice among the job's own ranks.
  SyntheticJob job;
  job.compute_ns = [](int rank, int) { return rank == 3 ? 10e6 : 5e6; };
  job.collective_ns = 3e6;
  std::vector<CallEvent> events = job.run(1500);
  set_cpu_waits(events, [](int rank) { return rank == 2 ? 0.95 : 0.5; });
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, events);
  bool apart = false;
  for (const WindowReport& w : run.windows)
    for (const RankWindowStats& r : w.ranks) apart = apart || (r.identity.rank == 2 && r.inside_cost_share >= 0.1);
  EXPECT_TRUE(apart) << "the premise: rank 2's wait alone passes the inside test's floor";
  for (const Finding& f : run.findings) EXPECT_EQ(f.culprit.rank, 3) << f.summary;
  EXPECT_EQ(culprits(run.findings), std::set<int>{3});
  SessionVerdict v = d.verdict(events.back().exit_ns);
  EXPECT_EQ(culprits(v.stragglers), std::set<int>{3});
}

TEST(StragglerDetectorInside, AHealthyCommunicationBoundJobNamesNobody) {
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, comm_bound([](int rank) { return 0.02 + 0.01 * rank; }, 2000));
  EXPECT_TRUE(run.findings.empty()) << run.findings.front().summary;
}

TEST(StragglerDetectorInside, TheInsideTestCanBeTurnedOff) {
  DetectorConfig config;
  config.inside = false;
  StragglerDetector d = make_detector(4, config);
  Feed run = feed(d, comm_bound([](int rank) { return rank == 1 ? 0.75 : 0.02; }, 2000));
  EXPECT_TRUE(run.findings.empty());
}

TEST(StragglerDetectorInside, ACollectiveSlowerForEveryoneIsSaidNotBlamedOnARank) {
  // Nobody waits for a CPU; from step 1500 every instance takes 9 ms
  // after its last arrival instead of 3 (a congested fabric).
  std::vector<CallEvent> events = collective_slows().events;
  for (CallEvent& e : events) {
    e.runq_ns = e.duration_ns() / 50;
    e.oncpu_ns = e.duration_ns() - *e.runq_ns;
  }
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, events);
  EXPECT_TRUE(run.findings.empty()) << run.findings.front().summary;
  std::vector<std::string> said;
  for (const std::string& n : run.notes)
    if (n.find("the collective itself is slower for everyone") != std::string::npos) said.push_back(n);
  ASSERT_EQ(said.size(), 1u) << "said once for the run of slow windows";
  EXPECT_NE(said[0].find("3.0x"), std::string::npos) << said[0];
}

TEST(InsideTransport, OneRankApartIsNamedWithItsShareOfTheExcess) {
  std::map<int32_t, std::string> evidence{{2, "its TCP sockets retransmitted"}};
  auto judged = judge_transport(evidence, 4, 2.0, 100 * kMs, 0, kElapsed);
  ASSERT_EQ(apart(judged), std::set<int32_t>{2});
  EXPECT_EQ(judged[0].cost_ns, 100 * kMs);
  EXPECT_FALSE(judged[0].cpu_read);
  EXPECT_EQ(judged[0].transport, "its TCP sockets retransmitted");
}

TEST(InsideTransport, TwoRanksApartShareTheExcess) {
  auto judged = judge_transport({{1, "a"}, {3, "b"}}, 4, 2.0, 100 * kMs, 0, kElapsed);
  EXPECT_EQ(apart(judged), (std::set<int32_t>{1, 3}));
  for (const InsideJudgement& j : judged) EXPECT_EQ(j.cost_ns, 50 * kMs);
}

TEST(InsideTransport, EvidenceOnMostMembersIsTheFabricsNotARanks) {
  EXPECT_TRUE(judge_transport({{1, "a"}, {2, "b"}, {3, "c"}}, 4, 2.0, 100 * kMs, 0, kElapsed).empty());
  EXPECT_EQ(apart(judge_transport({{1, "a"}}, 2, 2.0, 100 * kMs, 0, kElapsed)).size(), 1u) << "one of a pair";
}

TEST(InsideTransport, NotNamedWhereTheCollectiveIsNotSlowerThanItsUsualOrCostsLittle) {
  std::map<int32_t, std::string> evidence{{2, "a"}};
  EXPECT_TRUE(judge_transport(evidence, 4, 1.1, 0.2 * kElapsed, 0.2 * kElapsed, kElapsed).empty())
      << "1.1x its usual, no stall";
  EXPECT_TRUE(judge_transport(evidence, 4, std::nullopt, 100 * kMs, 0, kElapsed).empty()) << "no past to compare";
  EXPECT_TRUE(judge_transport(evidence, 4, 2.0, 0.05 * kElapsed, 0, kElapsed).empty()) << "5% of the window";
}

TEST(InsideTransport, StallsOfAFewInstancesNameItWhereTheMedianInstanceIsNotSlower) {
  // A lost frame stalls an instance for a retransmission timeout: the
  // median instance is as fast as usual, the window is not.
  std::map<int32_t, std::string> evidence{{2, "a"}};
  auto judged = judge_transport(evidence, 4, 1.0, 0.35 * kElapsed, 0.3 * kElapsed, kElapsed);
  ASSERT_EQ(apart(judged), std::set<int32_t>{2});
  EXPECT_NEAR(judged[0].cost_share, 0.35, 1e-6) << "charged all the time beyond the usual";
  EXPECT_TRUE(judge_transport(evidence, 4, 1.0, 0.35 * kElapsed, 0.2 * kElapsed, kElapsed).empty())
      << "stalls 20% of the window";
  // Noise above the usual is no stall, however much of the window it adds up to.
  EXPECT_TRUE(judge_transport(evidence, 4, 1.0, 0.4 * kElapsed, 0.0, kElapsed).empty()) << "no instance stalled";
}

TEST(InsideTransport, AVictimsLatenessFromLeavingLateDoesNotOutweighTheDataPath) {
  // Rank 0 was held inside the previous collective (the lost frame was
  // its), and arrives late to this one: flagged, all of it from leaving.
  std::map<int32_t, LateBlame> late{{0, {200.0 * kMs, 200.0 * kMs}}};
  std::vector<InsideJudgement> by_path = judge_transport({{2, "a"}}, 4, 3.0, 0.5 * kElapsed, 0, kElapsed);
  outweigh_by_late_arrivals(by_path, late);
  EXPECT_EQ(apart(by_path), std::set<int32_t>{2});
  // Its own lateness (arriving late having left on time) still outweighs.
  std::vector<InsideJudgement> again = judge_transport({{2, "a"}}, 4, 3.0, 0.5 * kElapsed, 0, kElapsed);
  outweigh_by_late_arrivals(again, {{0, {200.0 * kMs, 0}}});
  EXPECT_TRUE(apart(again).empty());
  // Against a rank's CPU wait all of a flagged rank's blame counts, as before.
  InsideJudgement cpu;
  cpu.pid = 2;
  cpu.cost_ns = 100 * kMs;
  cpu.apart = true;
  std::vector<InsideJudgement> by_cpu{cpu};
  outweigh_by_late_arrivals(by_cpu, late);
  EXPECT_TRUE(apart(by_cpu).empty());
}

// The job of ACollectiveSlowerForEveryone..., the node saying of ranks
// `lossy` that their sockets retransmit during the slow stretch.
SlowStretch slow_stretch() {
  SlowStretch out = collective_slows();
  set_cpu_waits(out.events, [](int) { return 0.02; });
  return out;
}

Feed with_transport_evidence(StragglerDetector& d, const std::set<int>& lossy) {
  SlowStretch job = slow_stretch();
  // Said as the stretch begins (live, a host cause is said once its 5 s
  // window passes its floor: the windows judged before weigh none of it).
  for (int rank : lossy)
    d.transport_evidence(SyntheticJob::pid(rank),
                         {job.slow_from_ns, "its TCP sockets retransmitted 3.0% of the bytes they sent"});
  return feed(d, job.events);
}

bool said_slower_for_everyone(const Feed& run) {
  return std::any_of(run.notes.begin(), run.notes.end(),
                     [](const std::string& n) { return n.find("slower for everyone") != std::string::npos; });
}

TEST(StragglerDetectorInside, ARankWhoseDataPathIsSetApartIsNamedWhenTheCollectiveSlows) {
  StragglerDetector d = make_detector(4);
  Feed run = with_transport_evidence(d, {1});
  ASSERT_EQ(culprits(run.findings), std::set<int>{1});
  const Finding& f = run.findings.front();
  EXPECT_EQ(f.where, "inside");
  ASSERT_TRUE(f.inside.has_value());
  EXPECT_EQ(f.inside->transport, "its TCP sockets retransmitted 3.0% of the bytes they sent");
  EXPECT_TRUE(f.inside->cpu_read) << "its CPU times were read, and are said beside";
  EXPECT_NE(f.summary.find("data path is set apart"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("3.0x this communicator's usual"), std::string::npos) << f.summary;
  EXPECT_FALSE(said_slower_for_everyone(run)) << "a rank explains it";
  SessionVerdict v = d.verdict(run.windows.back().end_ns);
  ASSERT_EQ(culprits(v.stragglers), std::set<int>{1});
  // What the instances took beyond their usual 3 ms: 6 ms of each of ~600.
  EXPECT_NEAR(static_cast<double>(v.stragglers.front().cost_ns), 600 * 6e6, 600 * 6e6 * 0.25);
}

// As rank 1's lossy link did in the real test: from step 1500 every 5th
// instance stalls 150 ms for a retransmission (the median instance keeps
// its 3 ms), and rank 0, the lost frames' receiver, leaves it `held_ns`
// after the others, so it arrives that late at the next one without
// computing longer. The node says rank 1's sockets retransmit `said_after_ns`
// after the first stall. `off_the_stalls`: rank 0 leaves late two steps
// after each stall instead (descheduled at that release: its own).
Feed lossy_link(StragglerDetector& d, double held_ns, uint64_t said_after_ns, bool off_the_stalls = false) {
  SyntheticJob job;
  job.compute_ns = [](int, int) { return 0.5e6; };
  job.collective_ns = 3e6;
  std::vector<CallEvent> events = job.run(1500);
  uint64_t lossy_from_ns = events.back().exit_ns;
  job.stall_ns = [](int step) { return step % 5 == 0 ? 150e6 : 0.0; };
  int late_step = off_the_stalls ? 2 : 0;
  job.leave_ns = [held_ns, late_step](int rank, int step) {
    return rank == 0 && step % 5 == late_step ? held_ns : 0.0;
  };
  std::vector<CallEvent> lossy = job.run(400, 1500);
  events.insert(events.end(), lossy.begin(), lossy.end());
  set_cpu_waits(events, [](int) { return 0.02; });
  d.transport_evidence(SyntheticJob::pid(1), {lossy_from_ns + said_after_ns, "its TCP sockets retransmitted"});
  return feed(d, events);
}

using WindowTest = std::function<bool(const WindowReport&, const RankWindowStats&)>;
bool any_window_of(const Feed& run, int rank, const WindowTest& is) {
  return std::any_of(run.windows.begin(), run.windows.end(), [&](const WindowReport& w) {
    return std::any_of(w.ranks.begin(), w.ranks.end(),
                       [&](const RankWindowStats& s) { return s.identity.pid == SyntheticJob::pid(rank) && is(w, s); });
  });
}

TEST(StragglerDetectorInside, ALossyLinksStallsNameItsRankAndNotTheRankHeldByThem) {
  StragglerDetector d = make_detector(4);
  Feed run = lossy_link(d, 100e6, 0);
  ASSERT_EQ(culprits(run.findings), std::set<int>{1});
  const Finding& f = run.findings.front();
  EXPECT_EQ(f.where, "inside");
  ASSERT_TRUE(f.inside.has_value());
  EXPECT_EQ(f.inside->transport, "its TCP sockets retransmitted");
  EXPECT_EQ(culprits(d.verdict(run.windows.back().end_ns).stragglers), std::set<int>{1});
  // Flagged by its stalls: the median instance was not slower.
  EXPECT_TRUE(any_window_of(run, 1, [](const WindowReport& w, const RankWindowStats& s) {
    return s.inside_flagged && w.after_last_arrival_ratio && *w.after_last_arrival_ratio < 1.25;
  }));
  // The premise: rank 0 was late enough to be flagged, and held instead.
  EXPECT_TRUE(any_window_of(run, 0, [](const WindowReport&, const RankWindowStats& s) {
    return s.held_by_data_path && !s.flagged && s.blame_leaving_share >= kMostlyLeaving;
  }));
}

TEST(StragglerDetectorInside, AHeldRankNamedBeforeTheNodeSaidWhyIsNotTheVerdict) {
  // Live, the node says the retransmissions some 6 s into the loss: rank 0,
  // late from leaving, may be named before; once rank 1's path is known the
  // verdict names rank 1 only.
  StragglerDetector d = make_detector(4);
  Feed run = lossy_link(d, 100e6, 6'000'000'000);
  EXPECT_TRUE(culprits(run.findings).contains(1));
  SessionVerdict v = d.verdict(run.windows.back().end_ns);
  std::string named;
  for (const Finding& g : v.stragglers) named += "\n" + g.summary;
  EXPECT_EQ(culprits(v.stragglers), std::set<int>{1}) << named;
  // Said, not dropped: who was held, and by whose path.
  ASSERT_EQ(v.withheld.size(), 1u);
  EXPECT_EQ(v.withheld.front().finding.culprit.rank, 0);
  EXPECT_FALSE(v.withheld.front().finding.severity.empty());
  EXPECT_NE(v.withheld.front().reason.find("held inside it by rank 1 (pid 1001)'s data path (named: its TCP sockets "
                                           "retransmitted)"),
            std::string::npos)
      << v.withheld.front().reason;
}

TEST(StragglerDetectorInside, ARankLeavingLateOffTheStallsKeepsItsFlag) {
  // Rank 0 leaves 400 ms late two steps after each stall (descheduled at
  // that release): the path held nobody then; its lateness is its own.
  StragglerDetector d = make_detector(4);
  Feed run = lossy_link(d, 400e6, 0, true);
  EXPECT_FALSE(
      any_window_of(run, 0, [](const WindowReport&, const RankWindowStats& s) { return s.held_by_data_path; }));
  // The premise: flagged, mostly from leaving late, in a window where rank
  // 1 was flagged by its data path.
  EXPECT_TRUE(any_window_of(run, 0, [](const WindowReport& w, const RankWindowStats& s) {
    return s.flagged && s.blame_leaving_share >= kMostlyLeaving &&
           std::any_of(w.ranks.begin(), w.ranks.end(), [](const RankWindowStats& o) {
             return o.identity.pid == SyntheticJob::pid(1) && o.inside_flagged && !o.inside_transport.empty();
           });
  }));
  // Named by the verdict beside rank 1.
  SessionVerdict v = d.verdict(run.windows.back().end_ns);
  EXPECT_TRUE(culprits(v.stragglers).contains(0));
  EXPECT_TRUE(culprits(v.stragglers).contains(1));
}

TEST(StragglerDetectorInside, AReceiverWaitingForTheRetransmissionLongerThanTheStallsIsHeldNotNamed) {
  // 400 ms late out of each stalled instance: rank 0 waits inside for the
  // resent frame after the sender has left (the UCX guest's receiver,
  // RESULTS 43), longer than the stall held everyone (150 ms).
  StragglerDetector d = make_detector(4);
  Feed run = lossy_link(d, 400e6, 0);
  EXPECT_TRUE(any_window_of(run, 0, [](const WindowReport&, const RankWindowStats& s) {
    return s.held_by_data_path && !s.flagged && s.blame_leaving_share >= kMostlyLeaving;
  }));
  EXPECT_EQ(culprits(d.verdict(run.windows.back().end_ns).stragglers), std::set<int>{1});
}

// The UCX guest's job (RESULTS 43): each step an all-reduce, then an
// all-gather, on one communicator. From step 1500 every 5th all-reduce
// stalls 150 ms for a retransmission of rank 1's lost frame, and rank 0,
// its receiver, waits inside it `held_ns` more: it arrives that late at
// the all-gather, another lane. `off_the_stalls`: rank 0 leaves late out
// of the all-reduce two steps later instead (descheduled: its own).
Feed reduce_then_gather(StragglerDetector& d, double held_ns, bool off_the_stalls) {
  SyntheticJob job;
  job.compute_ns = [](int, int) { return 0.5e6; };
  job.collective_ns = 3e6;
  auto reduce = [](int step, int nth) { return step >= 3000 && step % 2 == 0 && (step / 2) % 5 == nth; };
  job.stall_ns = [reduce](int step) { return reduce(step, 0) ? 150e6 : 0.0; };
  job.leave_ns = [reduce, held_ns, off_the_stalls](int rank, int step) {
    return rank == 0 && reduce(step, off_the_stalls ? 2 : 0) ? held_ns : 0.0;
  };
  std::vector<CallEvent> events = job.run(3800);
  set_cpu_waits(events, [](int) { return 0.02; });
  uint64_t lossy_from_ns = 0;
  for (CallEvent& e : events) {
    int step = static_cast<int>(e.seq) - 1;
    if (step == 3000 && !lossy_from_ns) lossy_from_ns = e.entry_ns;
    e.probe_id = step % 2 == 0 ? 1 : 2;  // all-reduce, all-gather
    e.seq = static_cast<uint64_t>(step / 2 + 1);
  }
  // Said again every 30 s while it holds, as the fabric monitor does.
  for (uint64_t ts = lossy_from_ns; ts < events.back().exit_ns; ts += 30'000'000'000)
    d.transport_evidence(SyntheticJob::pid(1), {ts, "its NIC resent"});
  return feed(d, events);
}

StragglerDetector two_lane_detector() {
  StragglerDetector d({},
                      {{1, "mpi.allreduce", CallKind::synchronizing}, {2, "mpi.allgather", CallKind::synchronizing}});
  for (const RankIdentity& id : identities(4)) {
    d.add_rank(id);
    d.add_participant(1, id.pid);
    d.add_participant(2, id.pid);
  }
  return d;
}

TEST(StragglerDetectorInside, TheReceiverLateAtTheNextCollectiveIsHeldByThePathOfAnother) {
  StragglerDetector d = two_lane_detector();
  Feed run = reduce_then_gather(d, 400e6, false);
  // The premise: rank 1 flagged by its path on the all-reduce, rank 0 late
  // on the all-gather (from leaving the all-reduce late), held.
  EXPECT_TRUE(any_window_of(run, 1, [](const WindowReport& w, const RankWindowStats& s) {
    return w.probe_id == 1 && s.inside_flagged && !s.inside_transport.empty();
  }));
  EXPECT_TRUE(any_window_of(run, 0, [](const WindowReport& w, const RankWindowStats& s) {
    return w.probe_id == 2 && s.held_by_data_path && !s.flagged && s.blame_leaving_share >= kMostlyLeaving;
  }));
  SessionVerdict v = d.verdict(run.windows.back().end_ns);
  std::string named;
  for (const Finding& g : v.stragglers) named += "\n" + g.summary;
  EXPECT_EQ(culprits(v.stragglers), std::set<int>{1}) << named;
  std::string live;
  for (const Finding& g : run.findings) live += "\n" + g.summary;
  EXPECT_FALSE(culprits(run.findings).contains(0)) << "no live line names the receiver" << live;
}

TEST(StragglerDetectorInside, ARankLeavingLateOffTheStallsKeepsItsFlagOnTheNextCollective) {
  StragglerDetector d = two_lane_detector();
  Feed run = reduce_then_gather(d, 400e6, true);
  EXPECT_FALSE(
      any_window_of(run, 0, [](const WindowReport&, const RankWindowStats& s) { return s.held_by_data_path; }));
  // The premise: late at the all-gather, from leaving the all-reduce late,
  // in a window where rank 1 is flagged by its path on the all-reduce.
  bool beside = false;
  for (const WindowReport& gather : run.windows)
    for (const WindowReport& reduce : run.windows) {
      if (gather.probe_id != 2 || reduce.probe_id != 1 || gather.end_ns != reduce.end_ns) continue;
      bool late = std::any_of(gather.ranks.begin(), gather.ranks.end(), [](const RankWindowStats& s) {
        return s.identity.rank == 0 && s.flagged && s.blame_leaving_share >= kMostlyLeaving;
      });
      bool path = std::any_of(reduce.ranks.begin(), reduce.ranks.end(), [](const RankWindowStats& s) {
        return s.identity.rank == 1 && s.inside_flagged && !s.inside_transport.empty();
      });
      beside = beside || (late && path);
    }
  EXPECT_TRUE(beside);
  SessionVerdict v = d.verdict(run.windows.back().end_ns);
  EXPECT_TRUE(culprits(v.stragglers).contains(0));
  EXPECT_TRUE(culprits(v.stragglers).contains(1));
}

TEST(StragglerDetectorInside, ARankLateBeforeIsNamedInsideOnceItsDataPathHoldsEveryoneUp) {
  // As in the guest's TCP-delay job (tests/kernels/guest/tcp_delay.sh):
  // rank 1 is late first (here 1 ms more compute a step), then on time
  // while its link delays its frames, the collective 3x slower. Its late
  // finding stood when the inside evidence came, and the inside finding
  // was never raised: the verdict had a late spell and no data path.
  StragglerDetector d = make_detector(4);
  SyntheticJob job;
  job.compute_ns = [](int rank, int step) { return rank == 1 && step < 1400 ? 1.5e6 : 0.5e6; };
  job.collective_ns = 3e6;
  std::vector<CallEvent> events = job.run(1500);
  uint64_t slow_from_ns = events.back().exit_ns;
  job.collective_ns = 9e6;
  std::vector<CallEvent> slower = job.run(600, 1500);
  events.insert(events.end(), slower.begin(), slower.end());
  set_cpu_waits(events, [](int) { return 0.02; });
  d.transport_evidence(SyntheticJob::pid(1), {slow_from_ns, "its TCP connections took 50 ms a round trip"});
  Feed run = feed(d, events);
  auto late = std::find_if(run.findings.begin(), run.findings.end(),
                           [](const Finding& f) { return f.culprit.rank == 1 && f.where == "arrival"; });
  ASSERT_NE(late, run.findings.end()) << "the premise: named late first";
  EXPECT_LT(late->detected_ns, slow_from_ns);
  auto inside = std::find_if(run.findings.begin(), run.findings.end(),
                             [](const Finding& f) { return f.culprit.rank == 1 && f.where == "inside"; });
  ASSERT_NE(inside, run.findings.end());
  ASSERT_TRUE(inside->inside.has_value());
  EXPECT_EQ(inside->inside->transport, "its TCP connections took 50 ms a round trip");
  EXPECT_GT(inside->detected_ns, slow_from_ns);
  SessionVerdict v = d.verdict(run.windows.back().end_ns);
  EXPECT_TRUE(std::any_of(v.stragglers.begin(), v.stragglers.end(),
                          [](const Finding& f) { return f.culprit.rank == 1 && f.where == "inside"; }));
  // The late spell, said live, is an episode of the session, ended where
  // the inside one began: no window counted by both.
  auto spell = std::find_if(v.episodes.begin(), v.episodes.end(), [](const Episode& e) {
    return e.finding.culprit.rank == 1 && e.finding.where == "arrival";
  });
  ASSERT_NE(spell, v.episodes.end());
  EXPECT_LE(spell->end_ns, inside->detected_ns);
  EXPECT_GT(spell->windows_evaluated, 0);
}

TEST(StragglerDetectorInside, TwoRanksWhoseDataPathsAreSetApartAreBothNamed) {
  StragglerDetector d = make_detector(4);
  Feed run = with_transport_evidence(d, {1, 2});
  EXPECT_EQ(culprits(run.findings), (std::set<int>{1, 2}));
}

TEST(StragglerDetectorInside, EvidenceOnMostRanksNamesNobodyAndSaysTheCollectiveIsSlower) {
  StragglerDetector d = make_detector(4);
  Feed run = with_transport_evidence(d, {0, 1, 2});
  EXPECT_TRUE(run.findings.empty()) << run.findings.front().summary;
  EXPECT_TRUE(said_slower_for_everyone(run));
}

TEST(StragglerDetectorInside, EvidenceWhileTheCollectiveKeepsItsPaceNamesNobody) {
  StragglerDetector d = make_detector(4);
  std::vector<CallEvent> events = comm_bound([](int) { return 0.02; }, 3000);
  d.transport_evidence(SyntheticJob::pid(1), {events[events.size() / 2].exit_ns, "retransmits"});
  Feed run = feed(d, events);
  EXPECT_TRUE(run.findings.empty()) << run.findings.front().summary;
}

TEST(StragglerDetectorInside, NamedByItsDataPathWithoutCpuTimesItsSharesAreNull) {
  // No CPU times (the sched program off): the data path alone names it,
  // and its JSON says the CPU shares were not read rather than 0.
  SlowStretch job = slow_stretch();
  for (CallEvent& e : job.events) {
    e.oncpu_ns.reset();
    e.runq_ns.reset();
  }
  StragglerDetector d = make_detector(4);
  d.transport_evidence(SyntheticJob::pid(2), {job.slow_from_ns + 2'000 * kMs, "its sockets"});
  Feed run = feed(d, job.events);
  ASSERT_EQ(culprits(run.findings), std::set<int>{2});
  const Finding& f = run.findings.front();
  ASSERT_TRUE(f.inside.has_value());
  EXPECT_FALSE(f.inside->cpu_read);
  EXPECT_EQ(f.summary.find("it ran"), std::string::npos) << f.summary;
  std::ostringstream out;
  JsonSink(out, "node-1", 0).finding(f);
  auto evidence = nlohmann::json::parse(out.str())["evidence"];
  EXPECT_TRUE(evidence["oncpu_share"].is_null()) << evidence;
  EXPECT_TRUE(evidence["runq_share"].is_null()) << evidence;
  EXPECT_EQ(evidence["transport"], "its sockets");
}

TEST(StragglerDetectorInside, ARankWhoseCpuIsSetApartIsNamedBeforeOneWithDataPathEvidence) {
  SlowStretch job = slow_stretch();
  set_cpu_waits(job.events, [](int rank) { return rank == 2 ? 0.75 : 0.02; });
  StragglerDetector d = make_detector(4);
  d.transport_evidence(SyntheticJob::pid(1), {job.slow_from_ns + 2'000 * kMs, "its sockets"});
  Feed run = feed(d, job.events);
  EXPECT_EQ(culprits(run.findings), std::set<int>{2});
}

TEST(StragglerDetectorInside, EvidenceSaidAfterTheWindowsWereJudgedWeighsInNone) {
  // A replay is handed every event at once: it weighs only in the windows
  // judged after it was said, as live.
  SlowStretch job = slow_stretch();
  StragglerDetector d = make_detector(4);
  d.transport_evidence(SyntheticJob::pid(1), {job.events.back().exit_ns + 5'000 * kMs, "late"});
  Feed run = feed(d, job.events);
  EXPECT_TRUE(run.findings.empty()) << run.findings.front().summary;
}

TEST(StragglerDetectorInside, AHealthyJobNeverSaysTheCollectiveIsSlower) {
  StragglerDetector d = make_detector(4);
  Feed run = feed(d, comm_bound([](int) { return 0.02; }, 3000));
  for (const std::string& n : run.notes) EXPECT_EQ(n.find("slower for everyone"), std::string::npos) << n;
}

}  // namespace
}  // namespace slowburn::inside_test
