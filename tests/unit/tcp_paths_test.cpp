// The rank whose every TCP connection is slow (host/tcp_paths.h), and its
// host.tcp_rtt cause.
#include "host/tcp_paths.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "host/host_causes.h"
#include "sources/host_monitor.h"

namespace slowburn::tcp_paths_test {
namespace {

std::string addr(int rank, int port) { return fmt::format("10.77.0.{}:{}", rank + 1, port); }

// Rank `from` sends to rank `to` over one connection: the sender's end is
// fresh (it sent data), the receiver's idle (it only acknowledged).
void connect(std::vector<std::vector<TcpEnd>>& ranks, int from, int to, uint32_t sender_rtt_us,
             uint32_t receiver_rtt_us = 50) {
  int port = 40000 + from * 10 + to;
  ranks[from].push_back({addr(from, port), addr(to, 5000), 0, sender_rtt_us, true});
  ranks[to].push_back({addr(to, 5000), addr(from, port), 0, receiver_rtt_us, false});
}

// A ring of four ranks, each sending to the next (gloo's and Open MPI's
// ring all-reduce): rank 1's link adds 20 ms. Its sends wait on its link;
// rank 0's sends to it wait for its ACKs, which take the same link back.
std::vector<std::vector<TcpEnd>> ring_with_slow_rank_1() {
  std::vector<std::vector<TcpEnd>> ranks(4);
  connect(ranks, 0, 1, 20'300);
  connect(ranks, 1, 2, 20'250);
  connect(ranks, 2, 3, 110);
  connect(ranks, 3, 0, 90);
  return ranks;
}

TEST(TcpPaths, TheRankOnTheSlowLinkIsSetApartNotItsNeighbours) {
  auto judged = judge_tcp_paths(ring_with_slow_rank_1());
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(judged[0].index, 1u);
  EXPECT_EQ(judged[0].fastest_us, 20'250u) << "its fastest connection";
  EXPECT_EQ(judged[0].connections, 2u) << "the one it receives on, measured at its sender's end, too";
  // Ranks 0 and 2 have one slow connection (to rank 1) and one fast: their
  // fastest is 90 and 110 us; rank 3's 90 us.
  EXPECT_DOUBLE_EQ(judged[0].peers_fastest_us, 90);
  EXPECT_EQ(judged[0].remotes, (std::vector<std::string>{"10.77.0.1", "10.77.0.3"}));
}

TEST(TcpPaths, AConnectionIsAsFastAsItsFasterFreshEnd) {
  // Ranks 2 and 3 both send over their connection; rank 3's end waits for
  // rank 2's delayed ACKs of its small messages (40 ms). Seen from rank
  // 2's end the path is fast: taking the longer end would leave rank 2
  // only slow connections (to rank 1, and this one) and set it apart.
  auto ranks = ring_with_slow_rank_1();
  TcpEnd& rank_3s_end = ranks[3].front();  // of 2 -> 3
  ASSERT_EQ(rank_3s_end.remote, addr(2, 40023));
  rank_3s_end.fresh = true;
  rank_3s_end.rtt_us = 40'000;
  auto judged = judge_tcp_paths(ranks);
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(judged[0].index, 1u);
}

TEST(TcpPaths, APairIsOneConnectionSeenTwiceAndNamesNobody) {
  // Rank 0 also has a fast connection to a process off this node: its
  // fastest is fast, rank 1's slow, and still two ranks tell nothing apart
  // (with a third, rank 1 would be named).
  std::vector<std::vector<TcpEnd>> ranks(2);
  connect(ranks, 0, 1, 20'000);
  ranks[0].push_back({addr(0, 41000), "10.77.9.9:5000", 0, 80, true});
  EXPECT_TRUE(judge_tcp_paths(ranks).empty());
  TcpPathThresholds two;
  two.min_ranks = 2;
  auto judged = judge_tcp_paths(ranks, two);
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(judged[0].index, 1u);
}

TEST(TcpPaths, ARankWhoseOnlyPeerIsASlowRankOnAnotherNodeIsNotNamed) {
  // Rank 3 of this node sends only to a rank on another node whose link is
  // slow: its every connection is slow, and nothing here says the delay is
  // its own (no rank here shares a connection with it). Ranks 0-2 talk to
  // each other, fast.
  std::vector<std::vector<TcpEnd>> ranks(4);
  connect(ranks, 0, 1, 100);
  connect(ranks, 1, 2, 120);
  connect(ranks, 2, 0, 90);
  ranks[3].push_back({addr(3, 42000), "10.77.8.8:5000", 0, 20'000, true});
  EXPECT_TRUE(judge_tcp_paths(ranks).empty());
  // A connection of its own to rank 0 here, slow too: rank 0's others are
  // fast, so the delay is rank 3's link.
  connect(ranks, 3, 0, 20'100);
  auto judged = judge_tcp_paths(ranks);
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(judged[0].index, 3u);
}

TEST(TcpPaths, AnEndWithNoRoundTripMeasuredYetIsNoPath) {
  // An RTT of 0 (no sample yet) would make the peers' median 0, and any
  // rank over 1 ms slow.
  auto ranks = ring_with_slow_rank_1();
  for (auto& ends : ranks)
    for (TcpEnd& e : ends)
      if (e.fresh && e.rtt_us < 1000) e.rtt_us = 0;
  EXPECT_TRUE(judge_tcp_paths(ranks).empty());
}

TEST(TcpPaths, EveryRankSlowIsTheFabricsAndNamesNobody) {
  auto ranks = ring_with_slow_rank_1();
  for (auto& ends : ranks)
    for (TcpEnd& e : ends) e.rtt_us = 20'000;
  EXPECT_TRUE(judge_tcp_paths(ranks).empty());
}

TEST(TcpPaths, ABusyNodesSmallDelaysAreNoOnes) {
  // 4x its peers' but 0.6 ms more: the scheduler's, not a link's.
  auto ranks = ring_with_slow_rank_1();
  for (auto& ends : ranks)
    for (TcpEnd& e : ends)
      if (e.rtt_us > 20'000) e.rtt_us = 700;
  EXPECT_TRUE(judge_tcp_paths(ranks).empty());
}

TEST(TcpPaths, AnIdleEndsOldRoundTripIsNotItsPath) {
  // Rank 1's connection to the rendezvous store (rank 0's port 29500):
  // set up fast at the start, idle since at both ends. It does not make
  // rank 1's fastest path fast.
  auto ranks = ring_with_slow_rank_1();
  ranks[1].push_back({addr(1, 45000), addr(0, 29500), 0, 60, false});
  ranks[0].push_back({addr(0, 29500), addr(1, 45000), 0, 40, false});
  auto judged = judge_tcp_paths(ranks);
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(judged[0].index, 1u);
  EXPECT_EQ(judged[0].connections, 2u);
  // The same connection with data over the span is a fast path of rank 1's:
  // a link that delays everything would have slowed it too.
  ranks[1].back().fresh = true;
  EXPECT_TRUE(judge_tcp_paths(ranks).empty());
}

TEST(TcpPaths, LoopbackEndsMeetOnlyWithinOneNetworkNamespace) {
  // Two containers' ranks on 127.0.0.1 with the same ports: two
  // connections, not one. Ranks 2 and 3 share namespace 11 and a slow
  // loopback connection (rank 3's end measured it); rank 0's in namespace
  // 22 has the same ends and is fast.
  std::vector<std::vector<TcpEnd>> ranks(4);
  connect(ranks, 0, 1, 100);
  connect(ranks, 1, 2, 120);
  connect(ranks, 2, 3, 80);
  ranks[3].push_back({"127.0.0.1:6000", "127.0.0.1:7000", 11, 20'000, true});
  ranks[2].push_back({"127.0.0.1:7000", "127.0.0.1:6000", 11, 50, false});
  ranks[0].push_back({"127.0.0.1:7000", "127.0.0.1:6000", 22, 90, true});
  auto judged = judge_tcp_paths(ranks);
  EXPECT_TRUE(judged.empty()) << "rank 3's fastest is 80 us: its slow loopback path is one of two";
  ranks[3].erase(ranks[3].begin());  // now its only path
  judged = judge_tcp_paths(ranks);
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(judged[0].index, 3u);
  EXPECT_EQ(judged[0].fastest_us, 20'000u) << "not joined to rank 0's 90 us in another namespace";
}

RankIdentity rank(int r) {
  RankIdentity id;
  id.pid = 100 + r;
  id.rank = r;
  id.job = "j";
  return id;
}

TEST(TcpPaths, HostIntervalKeepsEstablishedEndsAndWhetherTheySentData) {
  HostReading a, b;
  a.ts_ns = 1'000'000'000;
  b.ts_ns = 6'000'000'000;
  TcpCounts sending{0, 1'000, 0, 1'000, 300, "10.0.0.1:4000", "10.0.0.2:5000", true};
  TcpCounts idle = sending;
  idle.local = "10.0.0.1:4001";
  TcpCounts listening{0, 0, 0, 0, 0, "0.0.0.0:29500", "0.0.0.0:0", false};
  a.tcp = TcpReading{{{1, sending}, {2, idle}, {3, listening}}, 300, 7};
  sending.bytes_sent = sending.bytes_acked = 9'000;
  sending.rtt_us = 21'000;
  TcpCounts opened = sending;  // new since a: its data all in the span
  opened.local = "10.0.0.1:4002";
  b.tcp = TcpReading{{{1, sending}, {2, idle}, {3, listening}, {4, opened}}, 21'000, 7};
  HostInterval i = host_interval(rank(0), a, b, {});
  ASSERT_EQ(i.tcp_ends.size(), 3u) << "the listening socket is no connection";
  EXPECT_TRUE(i.tcp_ends[0].fresh);
  EXPECT_EQ(i.tcp_ends[0].rtt_us, 21'000u);
  EXPECT_EQ(i.tcp_ends[0].netns, 7u);
  EXPECT_FALSE(i.tcp_ends[1].fresh) << "nothing acknowledged in the span: its RTT is old";
  EXPECT_TRUE(i.tcp_ends[2].fresh);
}

// The ring's four ranks as the host monitor's intervals over 5 s.
std::vector<HostInterval> ring_job() {
  auto ring = ring_with_slow_rank_1();
  std::vector<HostInterval> job;
  for (int r = 0; r < 4; ++r) {
    HostInterval i;
    i.rank = rank(r);
    i.span_ns = 5'000'000'000;
    i.tcp_ends = ring[r];
    job.push_back(i);
  }
  return job;
}

TEST(TcpPaths, TheJudgeSaysItAsAHostCauseOfTheFabricsLayer) {
  auto causes = judge_host(ring_job());
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].type, "host.tcp_rtt");
  EXPECT_EQ(causes[0].rank, 1);
  EXPECT_DOUBLE_EQ(causes[0].value, 0.02025);
  ASSERT_TRUE(causes[0].peers_value);
  EXPECT_DOUBLE_EQ(*causes[0].peers_value, 0.00009);
  EXPECT_EQ(causes[0].summary,
            "rank 1 (pid 101)'s TCP connections took 20.25 ms a round trip at the fastest of its 2 with data in "
            "5.0 s (smoothed RTT; to 10.77.0.1, 10.77.0.3); the node's other ranks' fastest: median 90.00 us");
}

TEST(TcpPaths, BesideARankThatLosesSegmentsNoRankIsSaidByItsRoundTrips) {
  // Rank 2 retransmits 10% of what it sends: its peers' round trips are
  // its loss's, and rank 1's slow ring is not judged.
  std::vector<HostInterval> job = ring_job();
  for (int r = 0; r < 4; ++r) {
    HostInterval& i = job[r];
    i.tcp_retrans = r == 2 ? 50 : 0;
    i.tcp_bytes_sent = 1'000'000;
    i.tcp_bytes_retrans = r == 2 ? 100'000 : 0;
    i.tcp_sockets = 2;
  }
  auto causes = judge_host(job);
  ASSERT_EQ(causes.size(), 1u) << causes.size() << " causes";
  EXPECT_EQ(causes[0].type, "host.tcp_retrans");
  EXPECT_EQ(causes[0].rank, 2);
  job[2].tcp_retrans = 0;
  job[2].tcp_bytes_retrans = 0;
  causes = judge_host(job);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].type, "host.tcp_rtt") << "without the loss, rank 1 is said by its round trips";
  EXPECT_EQ(causes[0].rank, 1);
}

}  // namespace
}  // namespace slowburn::tcp_paths_test
