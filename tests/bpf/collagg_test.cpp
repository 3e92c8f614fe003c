// The probe mode's aggregation program on real uprobes: three forked
// "ranks" of this test binary meet in a synchronizing call the test
// releases, with a chosen rank arriving last each time. The kernel's sums
// must count every call, every compute gap, every instance once, and charge
// the blame to the rank that arrived last.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <memory>
#include <thread>

#include "loader/collagg_program.h"
#include "probes/cookie.h"
#include "support/test_support.h"
#include "symbols/elf_symbols.h"

// The "collective": blocks until the test releases it.
extern "C" __attribute__((noinline, used)) int sb_agg_sync_point(int release_fd) {
  char byte = 0;
  return static_cast<int>(read(release_fd, &byte, 1));
}

namespace slowburn::collagg_test {
namespace {

using namespace std::chrono_literals;

constexpr uint16_t kProbe = 77;
constexpr uint32_t kJobSlot = 7;
constexpr int kSteps = 12;

struct Child {
  pid_t pid = -1;
  int go_fd = -1;       // parent writes: enter the call now
  int release_fd = -1;  // parent writes: return from it
  int done_fd = -1;     // child writes: returned (its uretprobe has run)
};

Child fork_rank() {
  int go[2], release[2], done[2];
  EXPECT_EQ(pipe(go), 0);
  EXPECT_EQ(pipe(release), 0);
  EXPECT_EQ(pipe(done), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(go[1]);
    close(release[1]);
    close(done[0]);
    char byte;
    for (int step = 0; step < kSteps; ++step) {
      if (read(go[0], &byte, 1) != 1) _exit(1);
      if (sb_agg_sync_point(release[0]) != 1) _exit(2);
      if (write(done[1], "x", 1) != 1) _exit(3);
    }
    _exit(0);
  }
  close(go[0]);
  close(release[0]);
  close(done[1]);
  return {pid, go[1], release[1], done[0]};
}

void send(int fd) { ASSERT_EQ(write(fd, "x", 1), 1); }
void await(int fd) {
  char byte;
  ASSERT_EQ(read(fd, &byte, 1), 1);
}

// One job of kSteps steps on a freshly loaded program.
struct JobRun {
  std::unique_ptr<CollaggProgram> program;
  std::array<Child, 3> ranks;
  Child outsider;
  std::array<int, 3> expected_lasts{};
};

void run_job(const UprobeSite& site, JobRun& run) {
  auto program = CollaggProgram::load();
  ASSERT_TRUE(program) << program.error().message;
  run.program = std::move(*program);
  for (Child& c : run.ranks) c = fork_rank();
  run.outsider = fork_rank();  // attached but never registered: not counted
  std::array<Child*, 4> all{&run.ranks[0], &run.ranks[1], &run.ranks[2], &run.outsider};
  for (Child* c : all) {
    if (c != &run.outsider) {
      ASSERT_TRUE(run.program->add_target(c->pid, kJobSlot));
    }
    auto attached = run.program->attach("/proc/self/exe", c->pid, std::span(&site, 1));
    ASSERT_TRUE(attached) << attached.error().message;
  }
  for (int step = 0; step < kSteps; ++step) {
    int late = step % 3;
    for (int r = 0; r < 3; ++r)
      if (r != late) send(run.ranks[r].go_fd);
    send(run.outsider.go_fd);
    // The others are inside; 30 ms later the late one arrives. The margin
    // over the 8 ms asserted below is for a loaded machine, where the
    // runner-up itself may be scheduled late (it was, by 2.5 ms, with 10 ms).
    std::this_thread::sleep_for(30ms);
    send(run.ranks[late].go_fd);
    std::this_thread::sleep_for(10ms);
    for (Child* c : all) send(c->release_fd);
    // Every return is in before the next step: on a loaded machine a rank
    // descheduled past two instances would be unplaced, which is the
    // kernel's rule, not what this test is about.
    for (Child* c : all) await(c->done_fd);
    run.expected_lasts[late] += 1;
    // A compute gap before the next step. The two early ranks then enter
    // together, on two CPUs: both see the instance closed, one opens it,
    // and the one whose program got there second may have entered first.
    std::this_thread::sleep_for(3ms);
  }
  for (Child* c : all) {
    int status = 0;
    ASSERT_EQ(waitpid(c->pid, &status, 0), c->pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int fd : {c->go_fd, c->release_fd, c->done_fd}) close(fd);
  }
}

TEST(CollaggProgram, CountsEveryCallAndBlamesTheLastArrival) {
  SKIP_UNLESS_ROOT();
  auto symbols = ElfSymbols::open("/proc/self/exe");
  ASSERT_TRUE(symbols) << symbols.error().message;
  auto found = symbols->lookup("sb_agg_sync_point");
  ASSERT_EQ(found.size(), 1u);
  UprobeSite site{found[0].file_offset, make_cookie(CookieFields{.probe_id = kProbe, .synchronizing = true})};

  // An arrival whose opener was interrupted or preempted mid-open (uprobe
  // programs are preemptible since Linux 6.0: the waiting rank may hold
  // the opener's CPU) joins after 10 us and is counted in open_races; it
  // happened once in 200 runs here. Such a run is not exact by design, so
  // it is run again, at most twice.
  JobRun run;
  for (int attempt = 0; attempt < 3; ++attempt) {
    run = JobRun{};
    ASSERT_NO_FATAL_FAILURE(run_job(site, run));
    if (run.program->counters().open_races == 0) break;
    std::printf("attempt %d: %llu open race(s), run again\n", attempt + 1,
                static_cast<unsigned long long>(run.program->counters().open_races));
  }
  auto& program = run.program;
  auto& ranks = run.ranks;
  auto& outsider = run.outsider;
  auto& expected_lasts = run.expected_lasts;

  std::map<uint32_t, AggStats> by_pid;
  for (const AggStats& s : program->read()) by_pid[s.tgid] = s;
  EXPECT_FALSE(by_pid.contains(static_cast<uint32_t>(outsider.pid))) << "a process that is not a target counts";
  uint64_t instances = 0;
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(by_pid.contains(static_cast<uint32_t>(ranks[r].pid))) << "rank " << r;
    const AggStats& s = by_pid[static_cast<uint32_t>(ranks[r].pid)];
    EXPECT_EQ(s.probe_id, kProbe);
    EXPECT_EQ(s.calls, static_cast<uint64_t>(kSteps));
    EXPECT_EQ(s.gaps, static_cast<uint64_t>(kSteps - 1)) << "the first call has no previous return";
    EXPECT_EQ(s.arrivals, static_cast<uint64_t>(kSteps));
    uint64_t in_hist = 0;
    for (uint64_t n : s.wait_us_slots) in_hist += n;
    EXPECT_EQ(in_hist, static_cast<uint64_t>(kSteps));
    EXPECT_EQ(s.lasts, static_cast<uint64_t>(expected_lasts[r])) << "rank " << r;
    // Each time last, it arrived ~30 ms after the runner-up.
    EXPECT_GE(s.blame_ns, s.lasts * 8'000'000) << "rank " << r;
    EXPECT_LE(s.blame_ns, s.lasts * 200'000'000) << "rank " << r;
    EXPECT_GE(s.lateness_ns, s.lasts * 8'000'000);
    EXPECT_GE(s.wait_ns, static_cast<uint64_t>(kSteps) * 8'000'000);  // everyone waits >= 10 ms, >= 40 ms when not late
    instances += s.instances;
  }
  EXPECT_EQ(instances, static_cast<uint64_t>(kSteps)) << "each instance is closed exactly once";
  EXPECT_EQ(program->counters().unplaced, 0u);
  EXPECT_EQ(program->counters().open_races, 0u) << "three runs in a row with a wait run out";

  for (Child& c : ranks) program->forget_process(c.pid);
  program->forget_job(kJobSlot);
  EXPECT_EQ(program->map_entries(), 0u) << "forgotten processes and jobs leave nothing in the maps";
}

}  // namespace
}  // namespace slowburn::collagg_test
