// The detector's hang, mismatch and failure findings on hand-made calls:
// positions learnt from completed calls, the kernel's view through the
// lookup, ends ordered by time.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>

#include "detect/straggler.h"
#include "support/synthetic_job.h"

namespace slowburn::hang_detector_test {
namespace {

using namespace testing;

constexpr uint32_t kAllreduce = 1, kAllgather = 2, kBcast = 3;
constexpr uint64_t kMs = 1'000'000, kS = 1'000'000'000;

StragglerDetector two_collective_detector(int ranks, DetectorConfig config = {}) {
  StragglerDetector d(config, {{kAllreduce, "mpi.allreduce", CallKind::synchronizing},
                               {kAllgather, "mpi.allgather", CallKind::synchronizing},
                               {kBcast, "mpi.bcast", CallKind::synchronizing}});
  for (const RankIdentity& id : identities(ranks)) {
    d.add_rank(id);
    for (uint32_t probe : {kAllreduce, kAllgather, kBcast}) d.add_participant(probe, id.pid);
  }
  return d;
}

CallEvent call(int rank, uint32_t probe, uint64_t seq, uint64_t entry_ns, uint64_t exit_ns) {
  CallEvent e;
  e.pid = e.tid = static_cast<uint32_t>(SyntheticJob::pid(rank));
  e.probe_id = probe;
  e.seq = seq;
  e.entry_ns = entry_ns;
  e.exit_ns = exit_ns;
  return e;
}

// Steps 0..steps-1 of (allgather, allreduce); `skip` leaves out one call.
std::vector<CallEvent> steps(int ranks, int count, const std::function<bool(int rank, int step, uint32_t)>& skip) {
  std::vector<CallEvent> out;
  for (int s = 0; s < count; ++s)
    for (int r = 0; r < ranks; ++r) {
      uint64_t t = static_cast<uint64_t>(s) * 10 * kMs + static_cast<uint64_t>(r) * 10'000;
      if (!skip(r, s, kAllgather))
        out.push_back(call(r, kAllgather, static_cast<uint64_t>(s + 1), t + 1 * kMs,
                           static_cast<uint64_t>(s) * 10 * kMs + 3 * kMs));
      if (!skip(r, s, kAllreduce))
        out.push_back(call(r, kAllreduce, static_cast<uint64_t>(s + 1), t + 5 * kMs,
                           static_cast<uint64_t>(s) * 10 * kMs + 7 * kMs));
    }
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.exit_ns < b.exit_ns; });
  return out;
}

InFlightCall in_flight(int rank, uint32_t probe, uint64_t entry_ns) {
  auto pid = static_cast<uint32_t>(SyntheticJob::pid(rank));
  return {pid, pid, probe, entry_ns, 0, job_comm().comm};
}

ProcessView view(ProcessView::State state, uint64_t on_cpu_ns) {
  ProcessView v;
  v.state = state;
  v.on_cpu_ns = on_cpu_ns;
  v.off_cpu_ns = 12 * kS - on_cpu_ns;
  return v;
}

TEST(HangDetector, TheFrozenRankIsNamedAndThePeerBlockedBehindItIsNot) {
  // The job: rank 4 left allreduce N (step 9) and froze inside
  // allgather N+1; rank 0 still waits in allreduce N for its last message;
  // ranks 1-3 wait in allgather N+1.
  StragglerDetector d = two_collective_detector(5);
  feed(d, steps(5, 10, [](int r, int s, uint32_t p) { return r == 0 && s == 9 && p == kAllreduce; }), false);
  std::vector<InFlightCall> calls = {in_flight(0, kAllreduce, 95 * kMs)};
  for (int r = 1; r <= 4; ++r) calls.push_back(in_flight(r, kAllgather, 101 * kMs));
  auto kernel = [](int32_t pid, uint64_t) -> std::optional<ProcessView> {
    if (pid == SyntheticJob::pid(4)) return view(ProcessView::State::stopped, 0);
    return view(ProcessView::State::running, 12 * kS);
  };
  uint64_t now = 101 * kMs + 12 * kS;
  DetectorOutput out = d.check_in_flight(now, calls, kernel);
  ASSERT_EQ(out.findings.size(), 1u);
  const Finding& f = out.findings[0];
  EXPECT_EQ(f.type, "hang");
  EXPECT_EQ(f.culprit.rank, 4) << f.summary;
  EXPECT_EQ(f.probe, "mpi.allgather");
  EXPECT_EQ(f.blocked_behind, std::vector<int>{0});
  EXPECT_EQ(f.waiting_ranks, (std::vector<int>{1, 2, 3}));
  ASSERT_TRUE(f.position.has_value());
  EXPECT_EQ(*f.position, 21u) << "10 steps of 2 collectives completed: the 21st";
  ASSERT_TRUE(f.process.has_value());
  EXPECT_EQ(f.process->state, ProcessView::State::stopped);
  EXPECT_NE(f.summary.find("stopped"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("blocked behind"), std::string::npos) << f.summary;
  // Kept current, reported once.
  EXPECT_TRUE(d.check_in_flight(now + kS, calls, kernel).findings.empty());
  SessionVerdict v = d.verdict(now + kS);
  ASSERT_EQ(v.hangs.size(), 1u);
  EXPECT_EQ(v.hangs[0].waited_ns, 13 * kS);
}

TEST(HangDetector, WithoutTheKernelsViewTheSameHangNamesNobody) {
  StragglerDetector d = two_collective_detector(5);
  feed(d, steps(5, 10, [](int r, int s, uint32_t p) { return r == 0 && s == 9 && p == kAllreduce; }), false);
  std::vector<InFlightCall> calls = {in_flight(0, kAllreduce, 95 * kMs)};
  for (int r = 1; r <= 4; ++r) calls.push_back(in_flight(r, kAllgather, 101 * kMs));
  DetectorOutput out = d.check_in_flight(101 * kMs + 12 * kS, calls);
  EXPECT_TRUE(out.findings.empty()) << out.findings[0].summary;
  ASSERT_EQ(out.notes.size(), 1u);
  EXPECT_NE(out.notes[0].find("name nobody"), std::string::npos) << out.notes[0];
}

TEST(HangDetector, ARankAttachedLaterIsPlacedByTheInstancesNotByItsCount) {
  // Rank 2's first three steps were not seen (attached late): its count is
  // 6 behind, yet it completed the same collectives as the others.
  StragglerDetector d = two_collective_detector(3);
  feed(d, steps(3, 10, [](int r, int s, uint32_t) { return r == 2 && s < 3; }), false);
  std::vector<InFlightCall> calls = {in_flight(0, kAllgather, 101 * kMs), in_flight(1, kAllgather, 101 * kMs)};
  DetectorOutput out = d.check_in_flight(101 * kMs + 12 * kS, calls);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].culprit.rank, 2);
  EXPECT_NE(out.findings[0].summary.find("completed position 20"), std::string::npos) << out.findings[0].summary;
}

CallComm pair_comm(uint32_t id, int first_rank) {
  auto info = std::make_shared<CommunicatorInfo>();
  info->id = id;
  info->key = "mpi:pair" + std::to_string(first_rank);
  info->label = "pair " + std::to_string(first_rank);
  info->source = CommSource::memory;
  info->size = 2;
  info->members = {first_rank, first_rank + 1};
  info->local_pids = std::set<int32_t>{SyntheticJob::pid(first_rank), SyntheticJob::pid(first_rank + 1)};
  return {CommunicatorRef(info), std::nullopt, 0, false};
}

TEST(HangDetector, TwoCommunicatorsAreJudgedApart) {
  // Tensor-parallel pairs {0,1} and {2,3}, each on its own communicator.
  // On the second, rank 2 waits for rank 3, which stays outside; the first
  // pair both wait inside theirs: a member of another group is never its
  // culprit, and a group where everyone is inside names nobody.
  StragglerDetector d = two_collective_detector(4);
  CallComm a = pair_comm(10, 0), b = pair_comm(11, 2);
  auto all = steps(4, 5, [](int, int, uint32_t) { return false; });
  std::vector<CallEvent> on_a, on_b;
  for (const CallEvent& e : all) (e.pid < static_cast<uint32_t>(SyntheticJob::pid(2)) ? on_a : on_b).push_back(e);
  feed(d, on_a, false, a);
  feed(d, on_b, false, b);
  auto inside = [](int rank, const CallComm& comm) {
    auto pid = static_cast<uint32_t>(SyntheticJob::pid(rank));
    return InFlightCall{pid, pid, kAllgather, 51 * kMs, 0, comm.comm};
  };
  std::vector<InFlightCall> calls = {inside(0, a), inside(1, a), inside(2, b)};
  DetectorOutput out = d.check_in_flight(51 * kMs + 12 * kS, calls);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].culprit.rank, 3);
  ASSERT_TRUE(out.findings[0].comm);
  EXPECT_EQ(out.findings[0].comm->id, 11u);
  EXPECT_EQ(out.findings[0].waiting_ranks, std::vector<int>{2});
  ASSERT_EQ(out.notes.size(), 1u) << "pair {0,1}: everyone inside, nobody named";
  EXPECT_NE(out.notes[0].find("name nobody"), std::string::npos) << out.notes[0];
}

TEST(HangDetector, RanksInDifferentCollectivesAtOnePositionAreAMismatch) {
  StragglerDetector d = two_collective_detector(4);
  feed(d, steps(4, 5, [](int, int, uint32_t) { return false; }), false);
  std::vector<InFlightCall> calls;
  for (int r = 0; r < 4; ++r) calls.push_back(in_flight(r, r == 2 ? kBcast : kAllreduce, 51 * kMs));
  auto running = [](int32_t, uint64_t) -> std::optional<ProcessView> {
    return view(ProcessView::State::running, 12 * kS);
  };
  DetectorOutput out = d.check_in_flight(51 * kMs + 12 * kS, calls, running);
  ASSERT_EQ(out.findings.size(), 1u);
  const Finding& f = out.findings[0];
  EXPECT_EQ(f.type, "mismatch");
  EXPECT_EQ(f.culprit.rank, 2);
  EXPECT_EQ(f.probe, "mpi.bcast");
  ASSERT_EQ(f.calls.size(), 4u);
  EXPECT_EQ(f.calls[2].probe, "mpi.bcast");
  EXPECT_EQ(f.calls[0].probe, "mpi.allreduce");
  EXPECT_EQ(f.calls[0].position, 11u);
  EXPECT_NE(f.summary.find("disagree"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("where rank(s) 0, 1, 3 called mpi.allreduce"), std::string::npos) << f.summary;
  EXPECT_EQ(d.verdict(51 * kMs + 12 * kS).hangs.size(), 1u);
}

TEST(HangDetector, AWaitBelowTheThresholdIsAPendingHang) {
  StragglerDetector d = two_collective_detector(3);
  feed(d, steps(3, 5, [](int, int, uint32_t) { return false; }), false);
  std::vector<InFlightCall> calls = {in_flight(0, kAllgather, 51 * kMs), in_flight(1, kAllgather, 51 * kMs)};
  EXPECT_TRUE(d.check_in_flight(51 * kMs + 3 * kS, calls).findings.empty());
  SessionVerdict v = d.verdict(51 * kMs + 3 * kS);
  ASSERT_EQ(v.pending_hangs.size(), 1u);
  EXPECT_EQ(v.pending_hangs[0].waiting_ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(v.pending_hangs[0].behind_ranks, std::vector<int>{2});
  EXPECT_EQ(v.pending_hangs[0].waited_ns, 3 * kS);
  // Released: nothing pending any more.
  d.check_in_flight(51 * kMs + 4 * kS, {});
  EXPECT_TRUE(d.verdict(51 * kMs + 4 * kS).pending_hangs.empty());
}

ProcessEnd end_at(uint64_t ts_ns, std::optional<int> signal, std::optional<int> code) {
  ProcessEnd e;
  e.ts_ns = ts_ns;
  e.signal = signal;
  e.exit_code = code;
  return e;
}

TEST(HangDetector, TheFirstFailureIsNamedWithTheRanksThatFollowedIt) {
  StragglerDetector d = two_collective_detector(4);
  feed(d, steps(4, 5, [](int, int, uint32_t) { return false; }), false);
  d.check_in_flight(5 * kS, {in_flight(0, kAllreduce, 4 * kS), in_flight(1, kAllreduce, 4 * kS)});
  DetectorOutput out;
  d.remove_rank(SyntheticJob::pid(2), out, end_at(5 * kS, SIGKILL, std::nullopt));
  d.remove_rank(SyntheticJob::pid(0), out, end_at(5 * kS + 200 * kMs, std::nullopt, 1));
  d.remove_rank(SyntheticJob::pid(1), out, end_at(5 * kS + 210 * kMs, SIGTERM, std::nullopt));
  d.remove_rank(SyntheticJob::pid(3), out, end_at(5 * kS + 300 * kMs, std::nullopt, 0));
  SessionVerdict v = d.verdict(6 * kS);
  ASSERT_EQ(v.failures.size(), 3u) << "rank 3 exited normally";
  EXPECT_EQ(v.failures[0].culprit.rank, 2);
  EXPECT_EQ(v.failures[0].type, "failure");
  EXPECT_EQ(v.failures[0].followed_by, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(v.failures[0].followed_within_ns, 300 * kMs);
  EXPECT_NE(v.failures[0].summary.find("killed by SIGKILL"), std::string::npos) << v.failures[0].summary;
  EXPECT_NE(v.failures[0].summary.find("rank(s) 0, 1 were inside mpi.allreduce"), std::string::npos)
      << v.failures[0].summary;
  EXPECT_NE(v.failures[1].summary.find("exited with status 1"), std::string::npos) << v.failures[1].summary;
  EXPECT_NE(v.failures[1].summary.find("after rank 2"), std::string::npos) << v.failures[1].summary;
  EXPECT_TRUE(v.judged);
}

}  // namespace
}  // namespace slowburn::hang_detector_test
