// The wavefront on hand-written positions: who stops the job, who only
// waits for it, who is blocked behind it, who already left.
#include "detect/wavefront.h"

#include <gtest/gtest.h>

namespace slowburn::wavefront_test {
namespace {

constexpr uint64_t kS = 1'000'000'000;

MemberPosition inside(int32_t pid, uint64_t completed, const std::string& probe, uint64_t position, uint64_t since_ns) {
  MemberPosition m;
  m.pid = pid;
  m.completed = completed;
  m.inside.push_back({1, probe, position, since_ns});
  return m;
}

MemberPosition outside(int32_t pid, uint64_t completed, uint64_t since_ns) {
  MemberPosition m;
  m.pid = pid;
  m.completed = completed;
  m.outside_since_ns = since_ns;
  return m;
}

ProcessView stopped() {
  ProcessView v;
  v.state = ProcessView::State::stopped;
  return v;
}

ProcessView spinning() {
  ProcessView v;
  v.state = ProcessView::State::running;
  v.on_cpu_ns = 10 * kS;
  return v;
}

// The job of the issue: each step an allgather (odd positions) and an
// allreduce (even). Rank 4 left allreduce N (position 8), entered
// allgather N+1 (9) and was frozen there; rank 0 still waits in allreduce N
// for rank 4's last message; ranks 1-3 wait in allgather N+1.
std::vector<MemberPosition> frozen_inside() {
  return {inside(100, 7, "mpi.allreduce", 8, 1 * kS), inside(101, 8, "mpi.allgather", 9, 1 * kS + 5),
          inside(102, 8, "mpi.allgather", 9, 1 * kS + 6), inside(103, 8, "mpi.allgather", 9, 1 * kS + 7),
          inside(104, 8, "mpi.allgather", 9, 1 * kS + 1)};
}

TEST(Wavefront, ARankFrozenInsideACollectiveIsTheCulpritNotThePeerBlockedBehindIt) {
  std::map<int32_t, ProcessView> kernel;
  for (int32_t pid : {100, 101, 102, 103}) kernel[pid] = spinning();
  kernel[104] = stopped();
  WavefrontJudgement j = judge_wavefront(frozen_inside(), kernel, 12 * kS, 10 * kS);
  EXPECT_TRUE(j.stuck);
  EXPECT_EQ(j.position, 9u);
  EXPECT_EQ(j.probe, "mpi.allgather");
  EXPECT_EQ(j.culprits, std::vector<int32_t>{104});
  EXPECT_EQ(j.roles[104], WavefrontRole::does_not_run);
  EXPECT_EQ(j.with(WavefrontRole::blocked_behind), std::vector<int32_t>{100}) << "inside an earlier instance";
  EXPECT_EQ(j.with(WavefrontRole::waiting), (std::vector<int32_t>{101, 102, 103}));
  EXPECT_TRUE(j.mismatched.empty());
}

TEST(Wavefront, WithoutTheKernelsViewPositionsAloneNameNobodyInsideTheWavefront) {
  // Across nodes with no process states: the frozen rank is inside the
  // instance like its peers; rank 0 is blocked behind, not absent.
  WavefrontJudgement j = judge_wavefront(frozen_inside(), {}, 12 * kS, 10 * kS);
  EXPECT_TRUE(j.stuck);
  EXPECT_TRUE(j.culprits.empty()) << "a wrong name is worse than none";
  EXPECT_EQ(j.roles[100], WavefrontRole::blocked_behind);
}

TEST(Wavefront, ARankOutsideEveryCollectiveShortOfTheWavefrontNeverEnteredIt) {
  // Rank 2 completed position 4 and computes (or reads a pipe) ever since.
  std::vector<MemberPosition> members = {inside(10, 4, "gloo.allreduce", 5, 2 * kS),
                                         inside(11, 4, "gloo.allreduce", 5, 2 * kS), outside(12, 4, 2 * kS - 3)};
  WavefrontJudgement j = judge_wavefront(members, {}, 13 * kS, 10 * kS);
  EXPECT_TRUE(j.stuck);
  EXPECT_EQ(j.culprits, std::vector<int32_t>{12});
  EXPECT_EQ(j.roles[12], WavefrontRole::behind);
  EXPECT_EQ(j.since_ns, 2 * kS);
  EXPECT_EQ(j.waited_ns, 11 * kS);
}

TEST(Wavefront, ARankThatAlreadyCompletedTheInstanceIsAheadNotAbsent) {
  // A broadcast's root returns at once: it completed position 6 and waits
  // in nothing; the others are stuck at 6 behind rank 22, outside at 5.
  std::vector<MemberPosition> members = {outside(20, 6, 3 * kS), inside(21, 5, "mpi.bcast", 6, 3 * kS),
                                         outside(22, 5, 3 * kS)};
  WavefrontJudgement j = judge_wavefront(members, {}, 14 * kS, 10 * kS);
  EXPECT_EQ(j.roles[20], WavefrontRole::ahead);
  EXPECT_EQ(j.culprits, std::vector<int32_t>{22});
}

TEST(Wavefront, AnExitedRankWillNeverEnter) {
  std::vector<MemberPosition> members = {inside(30, 9, "mpi.allreduce", 10, 1 * kS),
                                         inside(31, 9, "mpi.allreduce", 10, 1 * kS), outside(32, 9, 1 * kS)};
  members[2].exited = true;
  WavefrontJudgement j = judge_wavefront(members, {}, 11 * kS, 10 * kS);
  EXPECT_EQ(j.culprits, std::vector<int32_t>{32});
  EXPECT_EQ(j.roles[32], WavefrontRole::exited);
}

TEST(Wavefront, RanksAtOnePositionInDifferentCollectivesAreAMismatch) {
  std::vector<MemberPosition> members = {
      inside(40, 11, "mpi.allreduce", 12, 1 * kS), inside(41, 11, "mpi.allreduce", 12, 1 * kS),
      inside(42, 11, "mpi.bcast", 12, 1 * kS), inside(43, 11, "mpi.allreduce", 12, 1 * kS)};
  std::map<int32_t, ProcessView> kernel;
  for (int32_t pid : {40, 41, 42, 43}) kernel[pid] = spinning();
  WavefrontJudgement j = judge_wavefront(members, kernel, 12 * kS, 10 * kS);
  EXPECT_TRUE(j.stuck);
  EXPECT_EQ(j.probe, "mpi.allreduce");
  EXPECT_EQ(j.mismatched, (std::map<int32_t, std::string>{{42, "mpi.bcast"}}));
  EXPECT_TRUE(j.culprits.empty()) << "everyone is inside and running: the disagreement is the diagnosis";
}

TEST(Wavefront, AShortWaitIsNotAHangYet) {
  std::vector<MemberPosition> members = {inside(50, 2, "mpi.allreduce", 3, 5 * kS), outside(51, 2, 5 * kS)};
  WavefrontJudgement j = judge_wavefront(members, {}, 9 * kS, 10 * kS);
  EXPECT_FALSE(j.stuck);
  EXPECT_EQ(j.waited_ns, 4 * kS);
  EXPECT_EQ(j.culprits, std::vector<int32_t>{51}) << "who would be named, kept for a pending hang";
}

TEST(Wavefront, NobodyInsideIsNoWavefront) {
  WavefrontJudgement j = judge_wavefront({outside(60, 3, kS), outside(61, 3, kS)}, {}, 20 * kS, 10 * kS);
  EXPECT_FALSE(j.stuck);
  EXPECT_EQ(j.position, 0u);
  EXPECT_TRUE(j.culprits.empty());
}

TEST(ProcessView, SaysWhatTheKernelSees) {
  ProcessView v = stopped();
  v.signal = 19;
  v.on_cpu_ns = 0;
  v.off_cpu_ns = 18 * kS;
  EXPECT_TRUE(v.does_not_run());
  EXPECT_EQ(describe_process(v), "stopped (SIGSTOP, state T), 0 ns on a CPU in 18.00 s (0%)");
  ProcessView reading;
  reading.state = ProcessView::State::sleeping;
  reading.syscall = "read";
  reading.waits_on = "pipe:[4242]";
  EXPECT_FALSE(reading.does_not_run());
  EXPECT_EQ(describe_process(reading), "sleeping in read on pipe:[4242]");
  ProcessView killed;
  killed.state = ProcessView::State::gone;
  killed.signal = 9;
  EXPECT_EQ(describe_process(killed), "killed by SIGKILL");
  EXPECT_EQ(signal_name(11), "SIGSEGV");
}

}  // namespace
}  // namespace slowburn::wavefront_test
