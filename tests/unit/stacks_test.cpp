// The stuck-job snapshot's judgement on hand-written samples: the odd rank
// named with what holds it (stopped, blocked outside, a mismatch, its own
// code), nobody named when the job moves or no clear majority waits, and
// ranks grouped by where they sit; the collective a stack is inside, by
// the catalog's names and aliases.
#include <gtest/gtest.h>

#include "stacks/stack_comm.h"
#include "stacks/stuck.h"

namespace slowburn::stacks_test {
namespace {

constexpr uint64_t kStepNs = 500'000'000;

// A sample `i` of a rank: state, the collective it is inside ("" outside),
// its CPU time so far, and what it blocks in.
RankSample sample(int i, char state, const std::string& symbol, uint64_t cpu_ns, const std::string& syscall = "",
                  const std::string& wchan = "") {
  RankSample s;
  s.at_ns = kStepNs * static_cast<uint64_t>(i + 1);
  s.process.state = state;
  s.process.cpu_ns = cpu_ns;
  s.symbol = symbol;
  s.probe = collective_probe_of(symbol);
  s.process.syscall_name = syscall;
  if (!syscall.empty()) s.process.syscall = 0;
  s.process.wchan = wchan;
  s.frames = {{0x1000, "libmpi.so.40", symbol.empty() ? "compute" : "P" + symbol, 4}, {0x2000, "workload", "main", 8}};
  return s;
}

// Three samples of a rank that spins (a full CPU) inside `symbol`.
RankSamples spinning(int rank, const std::string& symbol) {
  RankSamples r{rank, 100 + rank, {}};
  for (int i = 0; i < 3; ++i) r.samples.push_back(sample(i, 'R', symbol, kStepNs * static_cast<uint64_t>(i)));
  return r;
}

RankSamples still(int rank, char state, const std::string& symbol, const std::string& syscall = "",
                  const std::string& wchan = "") {
  RankSamples r{rank, 100 + rank, {}};
  for (int i = 0; i < 3; ++i) r.samples.push_back(sample(i, state, symbol, 1'000'000, syscall, wchan));
  return r;
}

TEST(Stuck, AStoppedRankIsNamedAndItsSpinningPeersAreNot) {
  std::vector<RankSamples> ranks = {spinning(0, "MPI_Allreduce"), still(1, 'T', "MPI_Allgather"),
                                    spinning(2, "MPI_Allreduce"), spinning(3, "MPI_Allgather")};
  auto found = find_stuck(ranks);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 1);
  EXPECT_EQ(found[0].kind, "stopped");
  EXPECT_EQ(found[0].waiting_ranks, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(found[0].summary,
            "rank 1 (pid 101) is stopped (state T, 0 ms on CPU in 1.0 s) inside MPI_Allgather; ranks 0, 2 spin inside "
            "MPI_Allreduce and rank 3 inside MPI_Allgather (100% CPU)");
}

TEST(Stuck, ARankBlockedReadingAPipeOutsideAnyCollectiveIsNamedWithTheRead) {
  std::vector<RankSamples> ranks = {spinning(0, "MPI_Allgather"), spinning(1, "MPI_Allgather"),
                                    still(2, 'S', "", "read", "pipe_read"), spinning(3, "MPI_Allgather")};
  ranks[2].samples.back().process.waits_on = "pipe:[42]";
  auto found = find_stuck(ranks);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 2);
  EXPECT_EQ(found[0].kind, "blocked");
  EXPECT_NE(found[0].summary.find("is blocked outside any collective in read(pipe:[42]) at pipe_read"),
            std::string::npos)
      << found[0].summary;
}

TEST(Stuck, ARankAloneInAnotherCollectiveIsAMismatch) {
  std::vector<RankSamples> ranks = {spinning(0, "MPI_Allgather"), spinning(1, "MPI_Bcast"),
                                    spinning(2, "MPI_Allgather"), spinning(3, "MPI_Allgather")};
  auto found = find_stuck(ranks);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 1);
  EXPECT_EQ(found[0].kind, "mismatch");
  EXPECT_EQ(found[0].waiting_ranks, (std::vector<int>{0, 2, 3}));
  EXPECT_NE(found[0].summary.find("is alone inside MPI_Bcast (running): a collective mismatch; ranks 0, 2, 3 spin "
                                  "inside MPI_Allgather"),
            std::string::npos)
      << found[0].summary;
}

// The communicator a rank's last sample was read to sit on.
RankSamples on(RankSamples r, const std::string& label, std::vector<int> members) {
  RankSample& s = r.samples.back();
  s.communicator = label;
  s.comm_key = "mpi:job:" + label;
  s.comm_members = std::move(members);
  return r;
}

TEST(Stuck, AGlooRankInAnotherGroupsWorkIsNoMismatch) {
  // A healthy DDP job with tensor-parallel pairs: rank 0 in the world's
  // gradient all-reduce, the others in their pairs' all-reduces. The work
  // frame is the same for every gloo collective: no mismatch can be told.
  auto gloo = [](int rank, const std::string& label, std::vector<int> members) {
    RankSamples r = on(spinning(rank, "c10d::ProcessGroupGloo::AsyncWork::execute"), label, std::move(members));
    EXPECT_EQ(r.samples.back().probe, kGlooWorkProbe);
    return r;
  };
  std::vector<RankSamples> ranks = {gloo(0, "gloo world", {0, 1, 2, 3}), gloo(1, "a gloo group of 2", {}),
                                    gloo(2, "a gloo group of 2", {}), gloo(3, "a gloo group of 2", {})};
  auto found = find_stuck(ranks);
  EXPECT_TRUE(found.empty()) << found.front().summary;
  // The same on MPI, where the frame names the collective, is one.
  std::vector<int> world = {0, 1, 2, 3};
  std::vector<RankSamples> mpi = {on(spinning(0, "MPI_Bcast"), "MPI_COMM_WORLD", world),
                                  on(spinning(1, "MPI_Allreduce"), "MPI_COMM_WORLD", world),
                                  on(spinning(2, "MPI_Allreduce"), "MPI_COMM_WORLD", world),
                                  on(spinning(3, "MPI_Allreduce"), "MPI_COMM_WORLD", world)};
  EXPECT_EQ(find_stuck(mpi).size(), 1u);
}

TEST(Stuck, CommunicatorsTellAMismatchFromAWaitOnOtherNodes) {
  // One communicator, one rank in another collective on it: a mismatch, said with the communicator.
  std::vector<int> world = {0, 1, 2, 3};
  std::vector<RankSamples> ranks = {on(spinning(0, "MPI_Allreduce"), "MPI_COMM_WORLD", world),
                                    on(spinning(1, "MPI_Allreduce"), "MPI_COMM_WORLD", world),
                                    on(spinning(2, "MPI_Allreduce"), "MPI_COMM_WORLD", world),
                                    on(spinning(3, "MPI_Bcast"), "MPI_COMM_WORLD", world)};
  auto found = find_stuck(ranks);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 3);
  EXPECT_EQ(found[0].kind, "mismatch");
  EXPECT_EQ(found[0].waiting_on, "MPI_COMM_WORLD");
  EXPECT_NE(found[0].summary.find("is alone inside MPI_Bcast on MPI_COMM_WORLD (running): a collective mismatch; "
                                  "ranks 0, 1, 2 spin inside MPI_Allreduce on MPI_COMM_WORLD"),
            std::string::npos)
      << found[0].summary;

  // Rank 3 waits on a communicator shared with rank 7, on another node: it
  // waits for rank 7, it is not mismatched; by the collective alone it would be named.
  ranks[3] = on(spinning(3, "MPI_Allgather"), "cid 5 (ranks 3,7)", {3, 7});
  std::vector<int> eight = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int r = 0; r < 3; ++r) ranks[static_cast<size_t>(r)] = on(spinning(r, "MPI_Allreduce"), "MPI_COMM_WORLD", eight);
  EXPECT_TRUE(find_stuck(ranks).empty()) << find_stuck(ranks).front().summary;
  std::vector<RankSamples> unread = {spinning(0, "MPI_Allreduce"), spinning(1, "MPI_Allreduce"),
                                     spinning(2, "MPI_Allreduce"), spinning(3, "MPI_Allgather")};
  EXPECT_EQ(find_stuck(unread).size(), 1u) << "without communicators the collective alone decides";

  // Groups tell ranks in one collective on two communicators apart.
  std::vector<RankSamples> rows = {on(spinning(0, "MPI_Allreduce"), "cid 3 (ranks 0,1)", {0, 1}),
                                   on(spinning(1, "MPI_Allreduce"), "cid 3 (ranks 0,1)", {0, 1}),
                                   on(spinning(2, "MPI_Allreduce"), "cid 3 (ranks 2,3)", {2, 3})};
  rows.push_back(still(3, 'T', ""));
  found = find_stuck(rows);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].summary.find("; ranks 0, 1 spin inside MPI_Allreduce on cid 3 (ranks 0,1) and rank 2 inside "
                                  "MPI_Allreduce on cid 3 (ranks 2,3)"),
            std::string::npos)
      << found[0].summary;
  rows.erase(rows.begin(), rows.begin() + 2);
  found = find_stuck(rows);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].summary.find("; rank 2 spins inside"), std::string::npos) << found[0].summary;
  rows.pop_back();
  rows.insert(rows.begin(), {on(spinning(0, "MPI_Allreduce"), "cid 3 (ranks 0,1)", {0, 1}),
                             on(spinning(1, "MPI_Allreduce"), "cid 3 (ranks 0,1)", {0, 1})});
  auto groups = group_ranks(rows);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].where, "inside MPI_Allreduce (mpi.allreduce) on cid 3 (ranks 0,1)");
}

TEST(StackComm, CandidatesAreTheCollectivesFramesWordsMostSeenFirst) {
  constexpr uint64_t kSp = 0x7ffd'0000'0000;
  constexpr uint64_t kComm = 0x5555'aaaa'0000, kOther = 0x5555'bbbb'0000, kCallers = 0x5555'cccc'0000;
  ThreadStack t;
  t.tid = 10;
  // Innermost first: the library's wait, the collective, the program that called it.
  t.frames = {{0x7f00'0000'1000, "libmpi.so.40", "ompi_request_default_wait", 0, kSp},
              {0x7f00'0000'2000, "libmpi.so.40", "PMPI_Allreduce", 0, kSp + 0x100},
              {0x5555'0000'3000, "workload", "main", 0, kSp + 0x200}};
  t.stack_at = kSp;
  t.stack_words.assign(0x300 / 8, 0);
  auto at = [&](uint64_t offset) -> uint64_t& { return t.stack_words[offset / 8]; };
  at(0x10) = kComm;
  at(0x80) = kComm;
  at(0x1f8) = kComm;  // the collective's own frame, its last word
  at(0x20) = kOther;
  at(0x28) = 42;                // a count
  at(0x30) = 0x5555'0000'3000;  // a return address
  at(0x38) = kSp + 0x40;        // a pointer into the stack
  at(0x200) = kCallers;         // the caller's frame: not the collective's argument
  t.registers = {kOther, 7};
  auto c = comm_candidates(t, 1);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].value, kComm);
  EXPECT_EQ(c[0].seen, 3);
  EXPECT_EQ(c[1].value, kOther);
  EXPECT_EQ(c[1].seen, 2);
  EXPECT_TRUE(comm_candidates(t, 5).empty()) << "no such frame";
  t.stack_words.clear();
  EXPECT_TRUE(comm_candidates(t, 1).empty()) << "nothing copied";
}

TEST(Stuck, AMovingJobNamesNobody) {
  // Each rank computes in one sample and waits in another: nobody held still.
  std::vector<RankSamples> ranks;
  for (int r = 0; r < 4; ++r) {
    RankSamples rs{r, 100 + r, {}};
    for (int i = 0; i < 3; ++i)
      rs.samples.push_back(sample(i, 'R', (i + r) % 2 ? "MPI_Allreduce" : "", kStepNs * static_cast<uint64_t>(i)));
    ranks.push_back(rs);
  }
  EXPECT_TRUE(find_stuck(ranks).empty());
}

TEST(Stuck, NoClearMajorityOrOneSampleNamesNobody) {
  // Three odd ranks of five: too many to be "the odd one".
  std::vector<RankSamples> ranks = {spinning(0, "MPI_Allreduce"), spinning(1, "MPI_Allreduce"), still(2, 'T', ""),
                                    still(3, 'T', ""), still(4, 'T', "")};
  EXPECT_TRUE(find_stuck(ranks).empty());
  // One sample: nothing says who moved.
  std::vector<RankSamples> once = {spinning(0, "MPI_Allreduce"), still(1, 'T', "")};
  for (RankSamples& r : once) r.samples.resize(1);
  EXPECT_TRUE(find_stuck(once).empty());
  // Two singletons in two collectives: which one is wrong is not known.
  std::vector<RankSamples> two = {spinning(0, "MPI_Allreduce"), spinning(1, "MPI_Allreduce"), spinning(2, "MPI_Bcast"),
                                  spinning(3, "MPI_Barrier")};
  EXPECT_TRUE(find_stuck(two).empty());
}

TEST(Stuck, RanksAreGroupedByWhereTheySit) {
  std::vector<RankSamples> ranks = {spinning(0, "MPI_Allreduce"), still(1, 'T', "MPI_Allgather"),
                                    spinning(2, "MPI_Allreduce"), spinning(3, "MPI_Allgather")};
  auto groups = group_ranks(ranks);
  ASSERT_EQ(groups.size(), 3u) << "the stopped rank stands apart from the one waiting in the same collective";
  EXPECT_EQ(groups[0].ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(groups[0].where, "inside MPI_Allreduce (mpi.allreduce)");
  EXPECT_EQ(groups[0].state, "running");
  EXPECT_EQ(groups[0].frames.front(), "PMPI_Allreduce (libmpi.so.40)");
}

TEST(Stuck, TheCollectiveAStackIsInsideByTheCatalogsNames) {
  EXPECT_EQ(collective_probe_of("PMPI_Allreduce"), "mpi.allreduce");
  EXPECT_EQ(collective_probe_of("MPI_Allgather"), "mpi.allgather");
  EXPECT_EQ(collective_probe_of("gloo::allreduce(gloo::AllreduceOptions&)"), "gloo.allreduce");
  EXPECT_EQ(collective_probe_of("c10d::ProcessGroupGloo::AsyncWork::execute(c10::intrusive_ptr<...>)"), "gloo");
  EXPECT_EQ(collective_probe_of("MPI_Comm_split"), "") << "a communicator's creation is not a wait";
  EXPECT_EQ(collective_probe_of("main"), "");

  ProcessStacks stacks;
  stacks.pid = 10;
  stacks.threads.resize(2);
  stacks.threads[0].tid = 11;
  stacks.threads[0].frames = {{0x1, "libgloo.so.0", "gloo::transport::tcp::UnboundBuffer::waitRecv(int*)", 0},
                              {0x2, "libtorch_cpu.so", "c10d::ProcessGroupGloo::AsyncWork::execute(x)", 0}};
  stacks.threads[1].tid = 10;
  stacks.threads[1].frames = {{0x3, "libc.so.6", "pthread_cond_wait", 0}, {0x4, "python3", "main", 0}};
  RankSample s;
  choose_thread(stacks, s);
  EXPECT_EQ(s.tid, 11) << "the worker thread inside the collective, not the main thread";
  EXPECT_EQ(s.probe, "gloo");
  stacks.threads[0].frames.pop_back();
  RankSample idle;
  choose_thread(stacks, idle);
  EXPECT_EQ(idle.tid, 10) << "no thread inside a collective: the main thread";
  EXPECT_EQ(idle.probe, "");
}

}  // namespace
}  // namespace slowburn::stacks_test
