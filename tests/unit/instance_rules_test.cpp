// The probe mode's kernel places every call in a collective instance as the
// call streams by (bpf/collagg.bpf.c); a trace's detector groups the calls
// with CollectiveAligner. Both apply slowburn/instance_rules.h. Here the
// kernel's streaming side runs in user space, on the same shared rules, over
// the same calls as the detector, and the two must agree on every rank's
// instances, last arrivals, blame and sequential events. No root: the
// conformance test (tests/bpf/) checks the real programs the same way.
#include "slowburn/instance_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "detect/straggler.h"

namespace slowburn::instance_rules_test {
namespace {

constexpr uint32_t kProbe = 5;

// One collective call of one rank.
struct Call {
  int32_t pid;
  uint64_t entry_ns, exit_ns;
};

// collagg.bpf.c's maps and programs for one job, probe and communicator:
// agg_enter and agg_exit with the kernel's per-process bookkeeping, every
// rule taken from slowburn/instance_rules.h.
class KernelSide {
 public:
  struct Totals {
    uint64_t arrivals = 0, instances = 0, lasts = 0, blame_ns = 0, blame_leaving_ns = 0, seq_events = 0;
  };

  explicit KernelSide(double lead_share) : lead_share_bp_(sb_share_bp(lead_share)) {}

  void enter(int32_t pid, uint64_t entry_ns) {
    __u64 since = SB_AGG_UNKNOWN, excess = 0;
    if (auto p = procs_.find(pid); p != procs_.end())
      sb_arrival_since(p->second.last_exit_ns, p->second.last_release_ns, entry_ns, &since, &excess);
    entries_[pid] = entry_ns;
    sb_instance_arrive(&instance_, entry_ns, since, excess, static_cast<__u32>(pid));
  }

  void exit(int32_t pid, uint64_t exit_ns) {
    uint64_t entry_ns = entries_.at(pid);
    sb_placed placed{};
    int where = sb_instance_place(&instance_, entry_ns, exit_ns, &placed);
    __u64 release = 0;
    if (where != SB_UNPLACED) {
      release = placed.release_ns;
      totals_[pid].arrivals += 1;
      if (where == SB_PLACED_CLOSES) close(pid, exit_ns);
    } else {
      ++unplaced_;
    }
    Proc& p = procs_[pid];
    p.last_release_ns = sb_let_go(release, exit_ns, &usual_leave_[pid]);
    p.last_exit_ns = std::max<uint64_t>(p.last_exit_ns, exit_ns);
  }

  const Totals& totals(int32_t pid) { return totals_[pid]; }
  uint64_t unplaced() const { return unplaced_; }

 private:
  struct Proc {
    __u64 last_exit_ns = 0, last_release_ns = 0;
  };

  void close(int32_t pid, uint64_t exit_ns) {
    totals_[pid].instances += 1;
    if (instance_.arrivals < 2) return;
    Totals& last = totals_[static_cast<int32_t>(instance_.last_tgid)];
    __u64 lead = sb_self_caused_lead(instance_.last_entry_ns, instance_.second_entry_ns, instance_.last_since_ns,
                                     instance_.second_since_ns);
    __u64 step =
        instance_.prev_closed_ns && exit_ns > instance_.prev_closed_ns ? exit_ns - instance_.prev_closed_ns : 0;
    __u64 leaving = sb_lead_from_leaving(lead, instance_.last_excess_ns, instance_.second_excess_ns);
    last.lasts += 1;
    last.blame_ns += lead;
    last.blame_leaving_ns += leaving;
    if (sb_seq_event(instance_.arrivals, lead, leaving, step, lead_share_bp_)) last.seq_events += 1;
  }

  __u64 lead_share_bp_;
  sb_agg_instance instance_{};
  std::map<int32_t, uint64_t> entries_;
  std::map<int32_t, Proc> procs_;
  std::map<int32_t, __u64> usual_leave_;
  std::map<int32_t, Totals> totals_;
  uint64_t unplaced_ = 0;
};

// What both sides see: the entries and exits of every call, in time order.
struct Job {
  int ranks = 0;
  std::vector<Call> calls;
};

void run_kernel(const Job& job, KernelSide& kernel) {
  struct Hit {
    uint64_t ts;
    bool entry;
    int32_t pid;
  };
  std::vector<Hit> hits;
  for (const Call& c : job.calls) {
    hits.push_back({c.entry_ns, true, c.pid});
    hits.push_back({c.exit_ns, false, c.pid});
  }
  std::stable_sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.ts < b.ts; });
  for (const Hit& h : hits) h.entry ? kernel.enter(h.pid, h.ts) : kernel.exit(h.pid, h.ts);
}

StragglerDetector run_user(const Job& job) {
  StragglerDetector d({}, {{kProbe, "rules", CallKind::synchronizing}});
  auto comm = std::make_shared<CommunicatorInfo>();
  comm->id = 1;
  comm->key = "job:rules";
  for (int r = 0; r < job.ranks; ++r) {
    RankIdentity id;
    id.pid = 100 + r;
    id.rank = r;
    id.job = "rules";
    d.add_rank(id);
    d.add_participant(kProbe, id.pid);
  }
  std::vector<Call> by_exit = job.calls;
  std::stable_sort(by_exit.begin(), by_exit.end(), [](const Call& a, const Call& b) { return a.exit_ns < b.exit_ns; });
  for (const Call& c : by_exit) {
    CallEvent e;
    e.pid = static_cast<uint32_t>(c.pid);
    e.tid = e.pid;
    e.probe_id = kProbe;
    e.entry_ns = c.entry_ns;
    e.exit_ns = c.exit_ns;
    d.ingest(e, CallComm{comm, std::nullopt, 0, false});
  }
  d.finish(UINT64_MAX / 2);
  return d;
}

void expect_agreement(const Job& job) {
  KernelSide kernel(DetectorConfig{}.sequential_lead_share);
  run_kernel(job, kernel);
  StragglerDetector user = run_user(job);
  uint64_t kernel_instances = 0;
  for (int r = 0; r < job.ranks; ++r) kernel_instances += kernel.totals(100 + r).instances;
  EXPECT_EQ(kernel.unplaced(), 0u);
  EXPECT_EQ(kernel_instances, user.counters().instances);
  EXPECT_EQ(user.counters().discarded_calls, 0u);
  for (int r = 0; r < job.ranks; ++r) {
    int32_t pid = 100 + r;
    const KernelSide::Totals& k = kernel.totals(pid);
    EXPECT_EQ(k.lasts, user.lasts(kProbe, pid)) << "rank " << r;
    EXPECT_EQ(k.blame_ns, user.blame_ns(kProbe, pid)) << "rank " << r;
    EXPECT_EQ(k.blame_leaving_ns, user.blame_leaving_ns(kProbe, pid)) << "rank " << r;
    EXPECT_EQ(k.seq_events, user.sequential_events(kProbe, pid)) << "rank " << r;
  }
}

// `steps` instances of a collective over `ranks` ranks: each enters after
// its compute gap (plus `late(step, rank)`), all are released together when
// the last arrives, each leaves `leave(step, rank)` after the release. No
// two ranks enter at the same nanosecond: there the kernel, whose record is
// shared without a lock, may swap last and second-to-last (instance_rules.h).
template <typename Late, typename Leave>
Job make_job(int ranks, int steps, Late late, Leave leave, uint64_t gap_ns = 2'000'000) {
  Job job;
  job.ranks = ranks;
  std::vector<uint64_t> free_at(static_cast<size_t>(ranks), 1'000'000'000);
  for (int s = 0; s < steps; ++s) {
    std::vector<uint64_t> entry(static_cast<size_t>(ranks));
    uint64_t last = 0;
    for (int r = 0; r < ranks; ++r) {
      entry[static_cast<size_t>(r)] = free_at[static_cast<size_t>(r)] + gap_ns + late(s, r) + static_cast<uint64_t>(r);
      last = std::max(last, entry[static_cast<size_t>(r)]);
    }
    uint64_t release = last + 50'000;
    for (int r = 0; r < ranks; ++r) {
      uint64_t exit = release + leave(s, r);
      job.calls.push_back({100 + r, entry[static_cast<size_t>(r)], exit});
      free_at[static_cast<size_t>(r)] = exit;
    }
  }
  return job;
}

TEST(InstanceRules, TheKernelAndTheDetectorAgreeOnARotatingLateRank) {
  expect_agreement(make_job(
      3, 60, [](int s, int r) -> uint64_t { return s % 3 == r ? 1'500'000 : static_cast<uint64_t>(r) * 10'000; },
      [](int, int r) -> uint64_t { return static_cast<uint64_t>(r) * 5'000; }));
}

TEST(InstanceRules, ASteadyStragglerIsBlamedAndCountedAsSequentialEventsAlike) {
  Job job = make_job(
      4, 80, [](int, int r) -> uint64_t { return r == 2 ? 900'000 : static_cast<uint64_t>(r) * 20'000; },
      [](int, int) -> uint64_t { return 10'000; });
  expect_agreement(job);
  KernelSide kernel(DetectorConfig{}.sequential_lead_share);
  run_kernel(job, kernel);
  EXPECT_GT(kernel.totals(102).seq_events, 70u) << "a 0.9 ms lead on a ~3 ms step: an event nearly every step";
}

TEST(InstanceRules, ALeadOwedToLeavingLateIsNotTheRanksOwnAlike) {
  // Rank 1 leaves every third collective 1.2 ms after its release (descheduled
  // inside it), and arrives late at the next one by that much.
  Job job = make_job(
      3, 90, [](int, int) -> uint64_t { return 0; },
      [](int s, int r) -> uint64_t { return r == 1 && s % 3 == 0 ? 1'200'000 : 20'000; });
  expect_agreement(job);
  KernelSide kernel(DetectorConfig{}.sequential_lead_share);
  run_kernel(job, kernel);
  EXPECT_GE(kernel.totals(101).lasts, 29u) << "last after each late exit";
  EXPECT_EQ(kernel.totals(101).seq_events, 0u) << "its lead came from leaving late, not from computing longer";
  EXPECT_GT(kernel.totals(101).blame_leaving_ns, kernel.totals(101).blame_ns / 2) << "and the kernel says so";
}

TEST(InstanceRules, AFastRankInTheNextInstanceBeforeASlowOneReturnsAlike) {
  // Rank 0 leaves at once and computes briefly; rank 2 leaves 2.5 ms after
  // the release, so rank 0 enters instance k+1 before rank 2 returns from k.
  expect_agreement(make_job(
      3, 50, [](int, int) -> uint64_t { return 0; },
      [](int, int r) -> uint64_t { return r == 2 ? 2'500'000 : static_cast<uint64_t>(r) * 10'000; }, 1'000'000));
}

TEST(InstanceRules, RandomJobsAgreeCallByCall) {
  std::mt19937_64 rng(20261204);
  for (int trial = 0; trial < 20; ++trial) {
    int ranks = 3 + static_cast<int>(rng() % 6);
    std::vector<std::vector<uint64_t>> late(300, std::vector<uint64_t>(8)), leave(300, std::vector<uint64_t>(8));
    for (auto& step : late)
      for (uint64_t& v : step) v = rng() % 800'000;
    for (auto& step : leave)
      for (uint64_t& v : step) v = rng() % 100 < 5 ? rng() % 3'000'000 : rng() % 60'000;
    SCOPED_TRACE("trial " + std::to_string(trial) + ", " + std::to_string(ranks) + " ranks");
    expect_agreement(make_job(
        ranks, 300, [&](int s, int r) { return late[static_cast<size_t>(s)][static_cast<size_t>(r)]; },
        [&](int s, int r) { return leave[static_cast<size_t>(s)][static_cast<size_t>(r)]; }));
  }
}

// Two ranks entering together on two CPUs: the one whose program reached
// the shared record second may have read the clock first. The record keeps
// arrivals in entry order, so its return is in this instance, first, not
// older than it (unplaced in the first instance, the previous one's after).
TEST(InstanceRules, ArrivalsOutOfProgramOrderArePlacedByTheirEntryTime) {
  for (bool first_instance : {true, false}) {
    sb_agg_instance inst{};
    if (!first_instance) {
      sb_instance_arrive(&inst, 100, SB_AGG_UNKNOWN, 0, 1);
      sb_instance_arrive(&inst, 200, SB_AGG_UNKNOWN, 0, 2);
      sb_placed p{};
      ASSERT_EQ(sb_instance_place(&inst, 100, 300, &p), SB_PLACED_CLOSES);
    }
    const __u64 base = first_instance ? 1'000 : 2'000;
    EXPECT_EQ(sb_instance_arrive(&inst, base + 10, SB_AGG_UNKNOWN, 0, 2), 0) << "opens";
    EXPECT_EQ(sb_instance_arrive(&inst, base, SB_AGG_UNKNOWN, 0, 1), 0) << "entered first, joins second";
    EXPECT_EQ(inst.first_entry_ns, base);
    EXPECT_EQ(inst.last_tgid, 2u) << "the later entry is still the last arrival";
    EXPECT_EQ(inst.second_entry_ns, base);
    EXPECT_EQ(sb_instance_arrive(&inst, base + 5, SB_AGG_UNKNOWN, 0, 3), 0);
    EXPECT_EQ(inst.last_entry_ns, base + 10);
    EXPECT_EQ(inst.second_entry_ns, base + 5) << "between the two: the runner-up";
    EXPECT_EQ(inst.arrivals, 3u);
    sb_placed p{};
    EXPECT_EQ(sb_instance_place(&inst, base, base + 50, &p), SB_PLACED_CLOSES);
    EXPECT_EQ(p.lateness_ns, 0u);
    EXPECT_EQ(sb_instance_place(&inst, base + 10, base + 51, &p), SB_PLACED_CURRENT);
    EXPECT_EQ(p.lateness_ns, 10u);
    EXPECT_EQ(p.release_ns, base + 50);
  }
}

// Two threads arriving together, round after round, each entry's time set
// so that thread 0 entered first: whichever reaches the record first, one
// instance is opened per round, with both arrivals, thread 0 first and
// thread 1 last, and the previous round as its previous instance. A round
// where a wait ran out (counted), nor the round after it, is not checked.
TEST(InstanceRules, TwoArrivalsAtOnceOpenOneInstanceInEntryOrder) {
  constexpr int kRounds = 20000;
  sb_agg_instance inst{};
  std::barrier sync(2);
  std::atomic<int> races{0}, wrong{0};
  int races_at_last_round = 0;  // thread 0's
  std::string first_wrong;
  auto rank = [&](int tid) {
    for (int r = 0; r < kRounds; ++r) {
      const __u64 base = static_cast<__u64>(r + 1) * 1000;
      const int races_before = races.load();  // thread 1 adds this round's after the barrier
      // A run-out wait's damage (an arrival lost to the open, a first
      // arrival not lowered) shows in its round and, as prev_*, in the next.
      const bool raced_before = tid == 0 && races_before != races_at_last_round;
      if (tid == 0) races_at_last_round = races_before;
      sync.arrive_and_wait();
      races +=
          sb_instance_arrive(&inst, base + static_cast<__u64>(tid), SB_AGG_UNKNOWN, 0, static_cast<__u32>(tid + 1));
      sync.arrive_and_wait();
      if (tid == 0) {
        bool ok = inst.arrivals == 2 && inst.first_entry_ns == base && inst.second_entry_ns == base &&
                  inst.last_entry_ns == base + 1 && inst.last_tgid == 2 &&
                  inst.prev_first_entry_ns == (r ? base - 1000 : 0) && inst.prev_closed_ns == (r ? base - 500 : 0);
        sb_placed p{};
        // Both returns placed whatever the check found: the next round opens
        // only after this one closed.
        int closes = sb_instance_place(&inst, base, base + 500, &p);
        int current = sb_instance_place(&inst, base + 1, base + 501, &p);
        ok = ok && closes == SB_PLACED_CLOSES && current == SB_PLACED_CURRENT && p.lateness_ns == 1;
        if (!ok && races.load() == races_before && !raced_before && wrong++ == 0)
          first_wrong = "round " + std::to_string(r) + ": arrivals " + std::to_string(inst.arrivals) + ", first " +
                        std::to_string(inst.first_entry_ns) + ", prev first " +
                        std::to_string(inst.prev_first_entry_ns);
      }
    }
  };
  std::thread other(rank, 1);
  rank(0);
  other.join();
  EXPECT_EQ(wrong.load(), 0) << first_wrong;
  EXPECT_LE(races.load(), kRounds / 100) << "waits that ran out";
  RecordProperty("open_races", races.load());
}

// An arrival that finds another opening the instance waits for it; here,
// single-threaded, the record looks mid-open to the second arrival, which
// waits out, joins, and says so.
TEST(InstanceRules, AnArrivalThatCannotWaitForTheOpenerSaysSo) {
  sb_agg_instance inst{};
  sb_instance_arrive(&inst, 100, SB_AGG_UNKNOWN, 0, 1);
  sb_placed p{};
  ASSERT_EQ(sb_instance_place(&inst, 100, 150, &p), SB_PLACED_CLOSES);
  inst.opening = 1;  // another CPU's arrival holds it
  EXPECT_EQ(sb_instance_arrive(&inst, 200, SB_AGG_UNKNOWN, 0, 2), 1);
  inst.opening = 0;
  EXPECT_EQ(sb_instance_arrive(&inst, 210, SB_AGG_UNKNOWN, 0, 3), 0);
}

TEST(InstanceRules, TheSequentialEventNeedsThreeRanksAStepAndALeadOfItsOwn) {
  const __u64 ten_percent = sb_share_bp(0.10);
  EXPECT_EQ(ten_percent, 1000u);
  EXPECT_TRUE(sb_seq_event(3, 1'000'000, 0, 10'000'000, ten_percent));
  EXPECT_FALSE(sb_seq_event(2, 1'000'000, 0, 10'000'000, ten_percent)) << "a pair has no peer to compare to";
  EXPECT_FALSE(sb_seq_event(3, 999'999, 0, 10'000'000, ten_percent)) << "under 10% of the step";
  EXPECT_FALSE(sb_seq_event(3, 1'000'000, 0, 0, ten_percent)) << "no step yet";
  EXPECT_FALSE(sb_seq_event(3, 1'000'000, 500'000, 10'000'000, ten_percent)) << "half of it from leaving late";
  EXPECT_TRUE(sb_seq_event(3, 1'000'000, 499'999, 10'000'000, ten_percent));
  EXPECT_EQ(sb_self_caused_lead(5'000, 1'000, SB_AGG_UNKNOWN, 300), 4'000u) << "unknown: all of the lead";
  EXPECT_EQ(sb_self_caused_lead(5'000, 1'000, 2'500, 1'000), 1'500u) << "its own delay since its release";
  EXPECT_EQ(sb_self_caused_lead(5'000, 1'000, 900, 1'000), 0u) << "released late by another collective";
}

}  // namespace
}  // namespace slowburn::instance_rules_test
