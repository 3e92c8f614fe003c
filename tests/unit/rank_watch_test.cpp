// The kernel's view of a rank: /proc lines parsed, exit codes read as the
// kernel writes them, and real child processes seen stopped, blocked on a
// pipe, and killed.
#include "engine/rank_watch.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include "core/clock.h"
#include "procfs/process_state.h"

namespace slowburn::rank_watch_test {
namespace {

TEST(ProcStat, ParsesStateCpuThreadsAndExitCodePastANameWithParentheses) {
  std::string line =
      "4242 (python3 (rank 1)) T 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 1000 1000 100 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 9";
  auto s = parse_proc_stat(line, 100);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->state, 'T');
  EXPECT_EQ(s->cpu_ns, 3'000'000'000u) << "300 ticks at 100 a second";
  EXPECT_EQ(s->threads, 7);
  ASSERT_TRUE(s->exit_code);
  EXPECT_EQ(*s->exit_code, 9);
  EXPECT_FALSE(parse_proc_stat("4242 (x) R 1 2", 100)) << "too few fields";
  EXPECT_FALSE(parse_proc_stat("no parenthesis", 100));
}

TEST(ProcStat, KeepsTheInnermostKernelFrames) {
  std::string stack =
      "[<0>] pipe_read+0x2d1/0x3d0\n[<0>] vfs_read+0x2f1/0x330\n[<0>] ksys_read+0x6c/0xf0\n"
      "[<0>] do_syscall_64+0x71/0x290\n[<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e\n";
  EXPECT_EQ(parse_kernel_stack(stack), "pipe_read < vfs_read < ksys_read < do_syscall_64");
  EXPECT_EQ(parse_kernel_stack(stack, 1), "pipe_read");
  EXPECT_EQ(parse_kernel_stack(""), "");
  EXPECT_EQ(parse_kernel_stack("garbage\n"), "");
}

TEST(ProcStat, NamesTheBlockingSystemCalls) {
#if defined(__x86_64__)
  EXPECT_EQ(syscall_name(0), "read");
  EXPECT_EQ(syscall_name(202), "futex");
#endif
  EXPECT_EQ(syscall_name(99999), "syscall 99999");
  EXPECT_TRUE(syscall_takes_fd("read"));
  EXPECT_FALSE(syscall_takes_fd("futex"));
}

LifecycleRecord exit_record(int exit_code, int group_exit_code) {
  LifecycleRecord r;
  r.kind = LifecycleRecord::Kind::exit;
  r.ts_ns = 7;
  r.pid = 100;
  r.exit_code = exit_code;
  r.group_exit_code = group_exit_code;
  return r;
}

TEST(ProcessEnds, ReadTheKernelsExitCode) {
  ProcessEnd status = end_from_exit(exit_record(3 << 8, 0), std::nullopt, false);
  EXPECT_FALSE(status.signal);
  EXPECT_EQ(status.exit_code, 3);
  EXPECT_TRUE(status.failed());
  EXPECT_EQ(describe_end(status), "exited with status 3");
  EXPECT_FALSE(end_from_exit(exit_record(0, 0), std::nullopt, false).failed());
  // A segfault in a worker thread ends the group: its code is the leader's.
  ProcessEnd segv = end_from_exit(exit_record(0, SIGSEGV | 0x80), std::nullopt, false);
  EXPECT_EQ(segv.signal, SIGSEGV);
  EXPECT_TRUE(segv.core_dumped);
  LifecycleRecord sent;
  sent.kind = LifecycleRecord::Kind::signal;
  sent.signal = SIGKILL;
  sent.sender_pid = 555;
  sent.sender_comm = "kill";
  ProcessEnd killed = end_from_exit(exit_record(SIGKILL, SIGKILL), sent, false);
  EXPECT_EQ(describe_end(killed), "killed by SIGKILL (sent by pid 555, kill)");
  EXPECT_EQ(describe_end(end_from_exit(exit_record(SIGKILL, SIGKILL), sent, true)), "killed by the OOM killer");
}

// A child that blocks reading a pipe nobody writes, and can be stopped.
struct Child {
  pid_t pid = -1;
  int fds[2] = {-1, -1};
  Child() {
    EXPECT_EQ(pipe(fds), 0);
    pid = fork();
    if (pid == 0) {
      char c;
      close(fds[1]);
      (void)!read(fds[0], &c, 1);
      _exit(0);
    }
    close(fds[0]);
  }
  ~Child() {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(fds[1]);
  }
};

void wait_for_state(pid_t pid, char state) {
  for (int i = 0; i < 200; ++i) {
    auto s = read_process_sample("/proc", pid);
    if (s && s->state == state) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST(RankWatch, SeesAChildBlockedReadingAPipeAndThenStopped) {
  Child child;
  wait_for_state(child.pid, 'S');
  RankWatch watch("/proc");
  watch.follow(child.pid);
  watch.sample(monotonic_ns());
  auto v = watch.view(child.pid, 0, monotonic_ns());
  ASSERT_TRUE(v);
  EXPECT_EQ(v->state, ProcessView::State::sleeping);
  if (geteuid() == 0) {  // /proc/PID/syscall needs ptrace access
    EXPECT_EQ(v->syscall, "read");
    EXPECT_EQ(v->waits_on.rfind("pipe:[", 0), 0u) << v->waits_on;
    EXPECT_NE(v->kernel_stack.find("pipe_read"), std::string::npos) << v->kernel_stack;  // anon_pipe_read on 6.18
  }
  EXPECT_FALSE(v->does_not_run());
  kill(child.pid, SIGSTOP);
  wait_for_state(child.pid, 'T');
  v = watch.view(child.pid, 0, monotonic_ns());
  ASSERT_TRUE(v);
  EXPECT_EQ(v->state, ProcessView::State::stopped);
  EXPECT_TRUE(v->does_not_run());
  kill(child.pid, SIGKILL);
  waitpid(child.pid, nullptr, 0);
  v = watch.view(child.pid, 0, monotonic_ns());
  ASSERT_TRUE(v);
  EXPECT_EQ(v->state, ProcessView::State::gone);
}

}  // namespace
}  // namespace slowburn::rank_watch_test
