// One meaning of a collective instance: the probe mode's kernel (collagg.bpf.c,
// nothing per call leaves the kernel) and trace's user space (the call-pair
// records through the detector's aligner) watch the same calls, on real
// uprobes in forked "ranks" of this binary that the test drives call by
// call, and must agree on the instances, who arrived last, and the blame.
// Both programs are attached at once, so both see exactly the same calls.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <thread>

#include "detect/straggler.h"
#include "events/decoder.h"
#include "loader/callpair_program.h"
#include "loader/collagg_program.h"
#include "loader/ring_buffer.h"
#include "probes/cookie.h"
#include "support/test_support.h"
#include "symbols/elf_symbols.h"

// The "collective": blocks until the test releases it.
extern "C" __attribute__((noinline, used)) int sb_conformance_point(int release_fd) {
  char byte = 0;
  return static_cast<int>(read(release_fd, &byte, 1));
}

namespace slowburn::conformance_test {
namespace {

using namespace std::chrono_literals;

constexpr uint16_t kProbe = 78;
constexpr uint32_t kJobSlot = 9;
constexpr int kRanks = 3;

struct Child {
  pid_t pid = -1;
  int go_fd = -1;          // write: enter the call now ('q': exit)
  int release_fd = -1;     // write: return from it
  int child_release = -1;  // the child's end of it: what it reads inside the call
};

// Blocks until the child is inside the call (reading its release pipe), so
// the order of entries is the test's and not the scheduler's.
void wait_inside(const Child& c) {
  std::string inside = fmt::format("0 0x{:x} ", c.child_release);
  for (int i = 0; i < 5000; ++i) {
    std::ifstream in(fmt::format("/proc/{}/syscall", c.pid));
    std::string line;
    std::getline(in, line);
    if (line.rfind(inside, 0) == 0) return;
    std::this_thread::sleep_for(100us);
  }
  ADD_FAILURE() << "pid " << c.pid << " never entered the call";
}

Child fork_rank() {
  int go[2], release[2];
  EXPECT_EQ(pipe(go), 0);
  EXPECT_EQ(pipe(release), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(go[1]);
    close(release[1]);
    char command;
    while (read(go[0], &command, 1) == 1 && command == 'e')
      if (sb_conformance_point(release[0]) != 1) _exit(2);
    _exit(0);
  }
  close(go[0]);
  close(release[0]);
  return {pid, go[1], release[1], release[0]};
}

void send(int fd, char c = 'e') { ASSERT_EQ(write(fd, &c, 1), 1); }

// Into the call, and there before the test goes on.
void enter(const Child& c) {
  send(c.go_fd);
  wait_inside(c);
}

// Both programs on the same calls; the test drives the ranks.
class Conformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON) to load BPF programs";
    auto agg = CollaggProgram::load();
    ASSERT_TRUE(agg) << agg.error().message;
    agg_ = std::move(*agg);
    auto pair = CallpairProgram::load(CallpairConfig{});
    ASSERT_TRUE(pair) << pair.error().message;
    pair_ = std::move(*pair);
    auto symbols = ElfSymbols::open("/proc/self/exe");
    ASSERT_TRUE(symbols) << symbols.error().message;
    auto found = symbols->lookup("sb_conformance_point");
    ASSERT_EQ(found.size(), 1u);
    uint64_t cookie = make_cookie(CookieFields{.probe_id = kProbe, .synchronizing = true});
    UprobeSite site{found[0].file_offset, cookie};
    for (Child& c : ranks_) {
      c = fork_rank();
      ASSERT_TRUE(agg_->add_target(c.pid, kJobSlot));
      auto links = agg_->attach("/proc/self/exe", c.pid, std::span(&site, 1));
      ASSERT_TRUE(links) << links.error().message;
      ASSERT_TRUE(pair_->attach("/proc/self/exe", c.pid, std::span(&site, 1)));
    }
  }
  void TearDown() override {
    for (Child& c : ranks_) {
      if (c.pid < 0) continue;
      char quit = 'q';
      if (write(c.go_fd, &quit, 1) != 1 || waitpid(c.pid, nullptr, WNOHANG) == 0) {
        std::this_thread::sleep_for(100ms);
        kill(c.pid, SIGKILL);  // still inside a call (a failed step): no one will release it
      }
      waitpid(c.pid, nullptr, 0);
      close(c.go_fd);
      close(c.release_fd);
    }
  }

  // Ranks enter in `order`, `lead` apart (the last one `last_lead` after the
  // one before it), then are released in `release_order`, `release_gap` apart.
  void step(std::array<int, kRanks> order, std::chrono::microseconds lead, std::chrono::microseconds last_lead,
            std::array<int, kRanks> release_order, std::chrono::microseconds release_gap = 0us) {
    for (int i = 0; i < kRanks; ++i) {
      enter(ranks_[order[i]]);
      std::this_thread::sleep_for(i + 2 == kRanks ? last_lead : lead);
    }
    std::this_thread::sleep_for(2ms);
    for (int i = 0; i < kRanks; ++i) {
      send(ranks_[release_order[i]].release_fd);
      if (release_gap.count()) std::this_thread::sleep_for(release_gap);
    }
    std::this_thread::sleep_for(3ms);  // a compute gap
  }

  // The user-space side: the call-pair records through the detector, as trace runs them.
  StragglerDetector detect() {
    StragglerDetector d({}, {{kProbe, "conformance", CallKind::synchronizing}});
    auto comm = std::make_shared<CommunicatorInfo>();
    comm->id = 1;
    comm->key = "job:conformance";
    for (int r = 0; r < kRanks; ++r) {
      RankIdentity id;
      id.pid = ranks_[r].pid;
      id.rank = r;
      id.job = "conformance";
      d.add_rank(id);
      d.add_participant(kProbe, id.pid);
    }
    EventDecoder decoder;
    auto reader = RingBufferReader::open(pair_->events_fd(), [&](std::span<const std::byte> record) {
      if (auto call = decoder.decode_call(record)) d.ingest(*call, CallComm{comm, std::nullopt, 0, false});
    });
    EXPECT_TRUE(reader);
    EXPECT_TRUE((*reader)->drain());
    d.finish(UINT64_MAX / 2);
    return d;
  }

  std::map<int32_t, AggStats> kernel() const {
    std::map<int32_t, AggStats> by_pid;
    for (const AggStats& s : agg_->read()) by_pid[static_cast<int32_t>(s.tgid)] = s;
    return by_pid;
  }

  // The two agree: the same instances, the same last arrivals, blame within
  // what two programs' clock reads on the same hit can differ by. Returns
  // the user-space side (the ring buffer is drained once).
  StragglerDetector expect_agreement(uint64_t expected_instances) {
    StragglerDetector d = detect();
    auto k = kernel();
    uint64_t kernel_instances = 0;
    for (const auto& [pid, s] : k) kernel_instances += s.instances;
    EXPECT_EQ(kernel_instances, expected_instances);
    EXPECT_EQ(d.counters().instances, expected_instances);
    for (int r = 0; r < kRanks; ++r) {
      int32_t pid = ranks_[r].pid;
      EXPECT_EQ(k[pid].lasts, d.lasts(kProbe, pid)) << "rank " << r;
      double kernel_blame = static_cast<double>(k[pid].blame_ns),
             user_blame = static_cast<double>(d.blame_ns(kProbe, pid));
      EXPECT_NEAR(kernel_blame, user_blame, 200'000.0 + 0.05 * user_blame) << "rank " << r;
      // The part from leaving late rests on each side's usual time to
      // leave (instance_rules.h, sb_leave_allowance): a quantile estimate
      // stepping by 1/16 of itself, at least 32 us, whose direction a
      // clock read's difference flips where a delay is near the usual. It
      // differed by 63-67 us an instance the rank was last in (4 and 10
      // instances, 253 and 669 us): bounded per such instance, not summed.
      double kernel_leaving = static_cast<double>(k[pid].blame_leaving_ns),
             user_leaving = static_cast<double>(d.blame_leaving_ns(kProbe, pid));
      EXPECT_NEAR(kernel_leaving, user_leaving,
                  200'000.0 + 150'000.0 * static_cast<double>(k[pid].lasts) + 0.05 * user_leaving)
          << "rank " << r;
      EXPECT_LE(k[pid].blame_leaving_ns, k[pid].blame_ns) << "rank " << r;
    }
    return d;
  }

  std::unique_ptr<CollaggProgram> agg_;
  std::unique_ptr<CallpairProgram> pair_;
  std::array<Child, kRanks> ranks_;
};

TEST_F(Conformance, TheLastArrivalOfEachInstanceAndItsBlame) {
  for (int s = 0; s < 12; ++s) {
    int late = s % kRanks;
    std::array<int, kRanks> order{(late + 1) % kRanks, (late + 2) % kRanks, late};
    step(order, 1ms, 30ms, {0, 1, 2});
  }
  StragglerDetector d = expect_agreement(12);
  auto k = kernel();
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(k[ranks_[r].pid].lasts, 4u) << "rank " << r;
  // A 30 ms lead in a step of ~36 ms is the sequential test's event (>= 10%
  // of the step) in every instance but the first, which has no step yet. A
  // 6 ms lead was too close: beside two busy loops this test's own polling
  // stretched a step past 60 ms and both sides (agreeing) missed one event.
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(k[ranks_[r].pid].seq_events, r == 0 ? 3u : 4u) << "rank " << r;
    EXPECT_EQ(d.sequential_events(kProbe, ranks_[r].pid), r == 0 ? 3u : 4u) << "rank " << r;
  }
}

// The sequential test's event, on both sides (collagg.h; trace's
// StragglerDetector::sequential_test): leads well clear of its two bounds,
// so the two programs' clock reads of the same hit cannot tip it.
TEST_F(Conformance, ALeadOwedToLeavingLateIsNoSequentialEventAndOneComputedIs) {
  constexpr int kRounds = 5;
  // Every interval below, stretched: at 1x, two busy loops beside the test
  // delayed its own steps by as much as the intervals (1 run in 5 failed).
  constexpr int kScale = 8;
  auto release = [&](int r) { send(ranks_[r].release_fd); };
  for (int round = 0; round < kRounds; ++round) {
    // A: everyone computed 8 ms and enters at once (rank 2 last by a hair:
    // no event); rank 2 is let go 6 ms after the others (descheduled inside).
    std::this_thread::sleep_for(kScale * 8ms);
    for (const Child& c : ranks_) enter(c);
    std::this_thread::sleep_for(kScale * 2ms);
    release(0);
    release(1);
    std::this_thread::sleep_for(kScale * 6ms);
    release(2);
    // B: ranks 0 and 1 enter 7 ms after their return, rank 2 3 ms after its
    // own: last by ~1.5 ms (over 10% of the step), all of it from leaving A
    // late: no event.
    std::this_thread::sleep_for(kScale * 1ms);
    enter(ranks_[0]);
    std::this_thread::sleep_for(kScale * 500us);
    enter(ranks_[1]);
    std::this_thread::sleep_for(kScale * 1500us);
    enter(ranks_[2]);
    std::this_thread::sleep_for(kScale * 2ms);
    for (int r = 0; r < kRanks; ++r) release(r);
    // C: rank 2 computes 6 ms longer than its peers: an event.
    std::this_thread::sleep_for(kScale * 3ms);
    enter(ranks_[0]);
    enter(ranks_[1]);
    std::this_thread::sleep_for(kScale * 6ms);
    enter(ranks_[2]);
    std::this_thread::sleep_for(kScale * 2ms);
    for (int r = 0; r < kRanks; ++r) release(r);
  }
  std::this_thread::sleep_for(3ms);  // the last returns recorded
  StragglerDetector d = expect_agreement(3 * kRounds);
  auto k = kernel();
  EXPECT_EQ(k[ranks_[2].pid].lasts, 3u * kRounds);
  // B's lead (~1.5 ms at 1x) is all from leaving A late: on both sides
  // part of rank 2's blame, that part said apart.
  EXPECT_GT(k[ranks_[2].pid].blame_leaving_ns, kRounds * kScale * 500'000u) << "kernel";
  EXPECT_GT(d.blame_leaving_ns(kProbe, ranks_[2].pid), kRounds * kScale * 500'000u) << "user space";
  EXPECT_LT(k[ranks_[2].pid].blame_leaving_ns, k[ranks_[2].pid].blame_ns / 2) << "C's lead is its own";
  for (int r = 0; r < kRanks; ++r) {
    uint64_t expected = r == 2 ? kRounds : 0;
    EXPECT_EQ(k[ranks_[r].pid].seq_events, expected) << "kernel, rank " << r;
    EXPECT_EQ(d.sequential_events(kProbe, ranks_[r].pid), expected) << "user space, rank " << r;
  }
}

TEST_F(Conformance, ARankThatLeavesLateIsLateByItsOwnDoing) {
  // Rank 2 is descheduled inside the collective: released 8 ms after the
  // others, it then arrives last at the next one with a normal gap. Both
  // sides charge that lead to it (its own delay since the release).
  for (int s = 0; s < 10; ++s) step({0, 1, 2}, 500us, 500us, {0, 1, 2}, s % 2 ? 8ms : 0us);
  expect_agreement(10);
  EXPECT_GT(kernel()[ranks_[2].pid].blame_ns, 0u);
}

TEST_F(Conformance, ARankThatAlwaysLeavesLateLearnsItsUsualTimeToLeave) {
  // Ranks are let go 1 ms apart in the same order every time (a position in
  // the collective's algorithm, not a delay of their own), then enter the
  // next one 0.5 ms apart in that order. While the usual time to leave is
  // learnt the late leavers are charged; once it is, they are not.
  constexpr int kLearning = 150, kLearnt = 40;
  for (int s = 0; s < kLearning; ++s) step({0, 1, 2}, 500us, 500us, {0, 1, 2}, 1ms);
  uint64_t while_learning = kernel()[ranks_[2].pid].blame_ns;
  // Once learnt, per step: the median, since a step the VM's scheduler
  // delays is charged its delay (a clean-clone run summed 4.8 ms over 40
  // steps, most of it in a few), while a lead still charged would be in
  // every step.
  std::vector<uint64_t> once_learnt;
  for (int s = 0; s < kLearnt; ++s) {
    uint64_t prior = kernel()[ranks_[2].pid].blame_ns;
    step({0, 1, 2}, 500us, 500us, {0, 1, 2}, 1ms);
    once_learnt.push_back(kernel()[ranks_[2].pid].blame_ns - prior);
  }
  std::nth_element(once_learnt.begin(), once_learnt.begin() + kLearnt / 2, once_learnt.end());
  EXPECT_GT(while_learning, 10 * 500'000u) << "charged while the usual time was being learnt";
  EXPECT_LT(once_learnt[kLearnt / 2], 500'000u / 5) << "still charged after it was learnt (median step)";
  StragglerDetector d = expect_agreement(kLearning + kLearnt);
  EXPECT_EQ(d.lasts(kProbe, ranks_[2].pid), static_cast<uint64_t>(kLearning + kLearnt));
}

TEST_F(Conformance, NearSimultaneousArrivals) {
  // Entered together: last and second-to-last may swap between the two
  // programs' clock reads; the blame stays tiny on both sides.
  for (int s = 0; s < 20; ++s) step({0, 1, 2}, 0us, 0us, {2, 1, 0});
  StragglerDetector d = detect();
  auto k = kernel();
  uint64_t kernel_instances = 0, kernel_blame = 0, user_blame = 0;
  for (int r = 0; r < kRanks; ++r) {
    kernel_instances += k[ranks_[r].pid].instances;
    kernel_blame += k[ranks_[r].pid].blame_ns;
    user_blame += d.blame_ns(kProbe, ranks_[r].pid);
  }
  EXPECT_EQ(kernel_instances, 20u);
  EXPECT_EQ(d.counters().instances, 20u);
  // Who is last may differ by a clock read; how much blame there is may not.
  EXPECT_NEAR(static_cast<double>(kernel_blame), static_cast<double>(user_blame),
              20 * 200'000.0 + 0.05 * static_cast<double>(user_blame));
}

TEST_F(Conformance, AReturnFromAnInstanceOthersHaveLeftIsPlacedInIt) {
  // Ranks 0 and 1 are released and enter the next instance before rank 2
  // returns from this one: the kernel places rank 2's return by the
  // previous instance's first arrival, the aligner by exit time; both count
  // 6 instances, the same last arrivals.
  for (int s = 0; s < 6; ++s) {
    enter(ranks_[0]);
    enter(ranks_[1]);
    std::this_thread::sleep_for(1ms);
    enter(ranks_[2]);
    std::this_thread::sleep_for(4ms);
    send(ranks_[0].release_fd);
    send(ranks_[1].release_fd);
    std::this_thread::sleep_for(2ms);
    if (s + 1 < 6) {
      enter(ranks_[0]);  // into instance s+1 while rank 2 is still in s
      enter(ranks_[1]);
      std::this_thread::sleep_for(2ms);
    }
    send(ranks_[2].release_fd);
    std::this_thread::sleep_for(3ms);
    if (s + 1 < 6) {
      // Rank 2 joins instance s+1; everyone is released from it below
      // (the next loop's first lines start the one after).
      enter(ranks_[2]);
      std::this_thread::sleep_for(2ms);
      for (Child& c : ranks_) send(c.release_fd);
      std::this_thread::sleep_for(3ms);
    }
  }
  // Instances: 6 driven by the loop heads, 5 in between.
  expect_agreement(11);
  EXPECT_EQ(agg_->counters().unplaced, 0u);
}

TEST_F(Conformance, ARankAttachedButAbsentIsLeftOutByBoth) {
  // Rank 2 never calls: the kernel forms instances of the two that do; the
  // aligner waits for rank 2 until it is idle (2 s), then aligns without it.
  for (int s = 0; s < 8; ++s) {
    enter(ranks_[0]);
    std::this_thread::sleep_for(3ms);
    enter(ranks_[1]);
    std::this_thread::sleep_for(2ms);
    send(ranks_[0].release_fd);
    send(ranks_[1].release_fd);
    std::this_thread::sleep_for(3ms);
  }
  StragglerDetector d = detect();  // finished long after: rank 2 is idle
  auto k = kernel();
  EXPECT_EQ(k[ranks_[0].pid].instances + k[ranks_[1].pid].instances, 8u);
  EXPECT_EQ(d.counters().instances, 8u) << "aligned once rank 2 was left out";
  EXPECT_EQ(k[ranks_[1].pid].lasts, 8u);
  EXPECT_EQ(d.lasts(kProbe, ranks_[1].pid), 8u);
  EXPECT_FALSE(k.contains(ranks_[2].pid)) << "no calls, no statistics";
}

}  // namespace
}  // namespace slowburn::conformance_test
