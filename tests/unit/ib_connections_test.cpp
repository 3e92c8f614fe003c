// The per-peer NCCL IB view: connection numbering, the bandwidth a request
// achieved, and which connection is slow against the job's others.
#include "rdma/ib_connections.h"

#include <gtest/gtest.h>

namespace slowburn::ib_connections_test {
namespace {

IbConnectionStats connection(uint32_t pid, IbDirection dir, uint64_t comm, uint64_t requests, uint64_t mean_us) {
  IbConnectionStats s;
  s.tgid = pid;
  s.direction = dir;
  s.comm = comm;
  s.requests = requests;
  s.bytes = requests * 1'000'000;
  s.total_ns = requests * mean_us * 1000;
  s.latency.add(mean_us, requests);
  return s;
}

TEST(IbConnections, OneSlowPeerAmongEightIsFlagged) {
  std::vector<IbConnectionStats> stats;
  for (uint32_t rank = 0; rank < 8; ++rank)
    stats.push_back(connection(100 + rank, IbDirection::send, 0x1000 + rank, 50, rank == 5 ? 400 : 100 + rank));
  stats.push_back(connection(100, IbDirection::recv, 0x2000, 50, 90));
  auto views = analyze_ib_connections(stats, [](uint32_t pid) { return std::optional<int>(pid - 100); });
  ASSERT_EQ(views.size(), 9u);
  EXPECT_EQ(views[0].rank, 0);
  EXPECT_EQ(views[0].stats->direction, IbDirection::send);  // by rank, then direction
  EXPECT_EQ(views[1].stats->direction, IbDirection::recv);
  EXPECT_EQ(views[1].index, 0);
  EXPECT_DOUBLE_EQ(views[0].mean_latency_ns, 100'000);
  EXPECT_DOUBLE_EQ(views[0].in_flight_bytes_per_s, 1e10);  // 1 MB per 100 us
  int slow = 0;
  for (const IbConnectionView& v : views) {
    if (!v.slow) continue;
    ++slow;
    EXPECT_EQ(v.rank, 5);
    EXPECT_GT(*v.z, 3.5);
    EXPECT_DOUBLE_EQ(v.median_latency_ns, 103'500);
  }
  EXPECT_EQ(slow, 1);
  EXPECT_FALSE(views[1].z.has_value());  // one recv connection: nothing to compare with
}

TEST(IbConnections, HealthySpreadFewRequestsAndEmptyConnections) {
  std::vector<IbConnectionStats> stats;
  for (uint32_t i = 0; i < 6; ++i) stats.push_back(connection(1, IbDirection::send, i, 50, 100 + 10 * i));
  stats.push_back(connection(1, IbDirection::send, 99, 3, 5000));  // slow, but only 3 requests: no verdict
  stats.push_back(connection(1, IbDirection::send, 98, 0, 0));     // nothing completed: not listed
  auto views = analyze_ib_connections(stats, [](uint32_t) { return std::nullopt; });
  ASSERT_EQ(views.size(), 7u);
  for (const IbConnectionView& v : views) EXPECT_FALSE(v.slow) << v.stats->comm;
  EXPECT_EQ(views.back().index, 6);
}

TEST(IbConnections, QpsAreComparedAmongQpsAndLabelledByTheirNumber) {
  // A verbs QP's send completions (direction qp) are a group of their own:
  // a QP is not slow for being slower than NCCL's requests, which carry more.
  std::vector<IbConnectionStats> stats;
  for (uint32_t i = 0; i < 6; ++i)
    stats.push_back(connection(200 + i / 2, IbDirection::qp, 0x101 + i, 40, i == 3 ? 2000 : 200 + 5 * i));
  for (uint32_t i = 0; i < 6; ++i) stats.push_back(connection(200 + i / 2, IbDirection::send, i, 40, 5000));
  auto views = analyze_ib_connections(stats, [](uint32_t pid) { return std::optional<int>(pid - 200); });
  int slow = 0;
  for (const IbConnectionView& v : views) {
    if (!v.slow) continue;
    ++slow;
    EXPECT_EQ(v.stats->direction, IbDirection::qp);
    EXPECT_EQ(v.stats->comm, 0x104u);
    EXPECT_EQ(ib_connection_label(v), "qp 0x104");
    EXPECT_DOUBLE_EQ(v.median_latency_ns, 215'000);  // of the QPs only
  }
  EXPECT_EQ(slow, 1);
  EXPECT_EQ(ib_direction_name(IbDirection::qp), "qp");
}

TEST(Log2HistogramQuantile, UpperBoundOfTheSlot) {
  Log2Histogram h("usecs");
  EXPECT_FALSE(h.quantile_bound(0.5).has_value());
  h.add(100, 98);  // slot 6: 64..127
  h.add(5000, 2);  // slot 12: 4096..8191
  EXPECT_EQ(h.quantile_bound(0.5), 127u);
  EXPECT_EQ(h.quantile_bound(0.98), 127u);
  EXPECT_EQ(h.quantile_bound(0.99), 8191u);
  EXPECT_EQ(h.quantile_bound(0.0), 127u);
}

}  // namespace
}  // namespace slowburn::ib_connections_test
