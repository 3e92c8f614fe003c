// The host monitor's TCP judgement over its last 2 s (sources/host_monitor.h
// tcp_window_s): a rank whose link starts losing frames sends little after
// the loss begins, so over the 5 s window its retransmissions are diluted by
// the bytes it sent before, and said late. A /proc tree of three ranks and
// sockets whose counters the test advances stand in for the machine.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <optional>

#include "sources/host_monitor.h"
#include "support/temp_dir.h"

namespace slowburn::host_monitor_tcp_test {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr int32_t kPids[] = {101, 102, 103};
constexpr double kLossAt = 10;  // s: rank 1's link starts losing 1 in 10 frames

// Three ranks in slowburn's own network namespace, one socket each (inode = pid).
void make_proc(const fs::path& root) {
  fs::create_directories(root / "self/ns");
  { std::ofstream(root / "self/ns/net") << ""; }
  for (int32_t pid : kPids) {
    fs::path proc = root / std::to_string(pid);
    fs::create_directories(proc / "ns");
    fs::create_directories(proc / "fd");
    fs::create_symlink(root / "self/ns/net", proc / "ns/net");
    fs::create_symlink("socket:[" + std::to_string(pid) + "]", proc / "fd/3");
  }
}

// Every rank sends 1 MB/s; from kLossAt rank 1 (pid 102) sends 20 KB/s, a
// tenth of it again, 30 segments retransmitted a second.
std::vector<TcpSocket> sockets_at(double t) {
  std::vector<TcpSocket> out;
  for (int32_t pid : kPids) {
    TcpSocket s;
    s.inode = static_cast<uint64_t>(pid);
    s.state = 1;
    double before = std::min(t, kLossAt), after = std::max(0.0, t - kLossAt);
    bool lossy = pid == 102;
    s.bytes_sent = static_cast<uint64_t>(before * 1e6 + after * (lossy ? 20e3 : 1e6));
    if (lossy) {
      s.bytes_retrans = static_cast<uint64_t>(after * 2e3);
      s.total_retrans = static_cast<uint32_t>(after * 30);
    }
    out.push_back(s);
  }
  return out;
}

// The monitor over the /proc tree at `root`, the three ranks added; the
// node's TCP sockets are `sockets(t)` at the test's clock `t`.
HostMonitorOptions options_over(const fs::path& root, const double& t, std::vector<TcpSocket> (*sockets)(double)) {
  HostMonitorOptions o;
  o.sched = false;
  o.sysfs_root = root;
  o.files.proc_root = root;
  o.files.cgroup_root = root / "cgroup";
  o.files.tcp_sockets = [&t, sockets](const fs::path&) -> Result<std::vector<TcpSocket>> { return sockets(t); };
  return o;
}

void add_ranks(HostMonitor& monitor) {
  for (int r = 0; r < 3; ++r) {
    RankIdentity id;
    id.pid = kPids[r];
    id.rank = r;
    id.job = "job";
    monitor.add_rank(id);
  }
}

// The second (since the first reading) at which host.tcp_retrans was first
// said of rank 1, reading once a second for 20 s; fails on any other rank's.
std::optional<double> said_at(double tcp_window_s) {
  TempDir dir;
  make_proc(dir.path());
  double t = 0;
  HostMonitorOptions o = options_over(dir.path(), t, sockets_at);
  o.tcp_window_s = tcp_window_s;
  HostMonitor monitor(o);
  add_ranks(monitor);
  std::optional<double> first;
  const uint64_t base_ns = 1'000'000'000'000;
  for (t = 0; t <= 20; t += 1) {
    for (const DeviceEvent& e : monitor.poll(base_ns + static_cast<uint64_t>(t * 1e9))) {
      EXPECT_EQ(e.type, "host.tcp_retrans") << e.summary;
      EXPECT_EQ(e.ranks, std::vector<int>{1}) << e.summary;
      if (!first && e.type == "host.tcp_retrans") first = t;
    }
  }
  return first;
}

TEST(HostMonitorTcp, ALinkThatStartsLosingFramesIsSaidWithinTwoSeconds) {
  auto recent = said_at(2);
  ASSERT_TRUE(recent) << "rank 1's retransmissions were never said";
  EXPECT_LE(*recent, kLossAt + 2);
  EXPECT_GT(*recent, kLossAt);  // not before the loss began
  // Judged over the 5 s window alone, the bytes sent before the loss
  // dilute it: said only once the window lies wholly after it.
  auto window = said_at(5);
  ASSERT_TRUE(window);
  EXPECT_GE(*window, kLossAt + 4) << "the 5 s window alone said it as early: the test shows nothing";
}

// Three ranks, every pair connected (gloo's mesh), each end a socket of its
// own (inode 10 * rank + peer). From kLossAt rank 1's link adds 20 ms: its
// two connections take 20 ms a round trip at both ends; 0 <-> 2 stays at
// 100 us. Every end sends 1 MB/s, acknowledged.
std::vector<TcpSocket> mesh_at(double t, bool rank_0_loses);
std::vector<TcpSocket> mesh_at(double t) { return mesh_at(t, false); }

// The same mesh where from kLossAt rank 0's link loses frames (it sends
// 20 KB/s on each end, 1 KB/s of it again, 15 segments a second) and rank
// 1's round trips lengthen 3 s later: the loss, said by the last 2 s while
// the 5 s window's earlier bytes dilute it, is the one cause.
std::vector<TcpSocket> mesh_lossy_at(double t) { return mesh_at(t, true); }

std::vector<TcpSocket> mesh_at(double t, bool rank_0_loses) {
  std::vector<TcpSocket> out;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      if (a == b) continue;
      TcpSocket s;
      s.inode = static_cast<uint64_t>(10 * a + b);
      s.state = 1;
      // The lower rank connected: its port is the ephemeral one.
      int port_a = a < b ? 40000 + b : 5000, port_b = a < b ? 5000 : 40000 + a;
      s.local = fmt::format("10.0.0.{}:{}", a + 1, port_a);
      s.remote = fmt::format("10.0.0.{}:{}", b + 1, port_b);
      s.bytes_sent = s.bytes_acked = static_cast<uint64_t>(t * 1e6);
      s.rtt_us = t >= kLossAt && (a == 1 || b == 1) ? 20'000 : 100;
      if (rank_0_loses) {
        double before = std::min(t, kLossAt), after = std::max(0.0, t - kLossAt);
        s.rtt_us = t >= kLossAt + 3 && (a == 1 || b == 1) ? 20'000 : 100;
        if (a == 0) {
          s.bytes_sent = s.bytes_acked = static_cast<uint64_t>(before * 1e6 + after * 20e3);
          s.bytes_retrans = static_cast<uint64_t>(after * 1e3);
          s.total_retrans = static_cast<uint32_t>(after * 15);
        }
      }
      out.push_back(s);
    }
  return out;
}

// Each rank's mesh sockets (inode 10 * rank + peer) among its open files.
void link_mesh(const fs::path& root) {
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b)
      if (a != b)
        fs::create_symlink("socket:[" + std::to_string(10 * a + b) + "]",
                           root / std::to_string(kPids[a]) / "fd" / std::to_string(10 + b));
}

// Every event the monitor says of the mesh over 20 s of 1 s polls, with
// the second it was said at.
std::vector<std::pair<double, DeviceEvent>> mesh_events(std::vector<TcpSocket> (*sockets)(double)) {
  TempDir dir;
  make_proc(dir.path());
  link_mesh(dir.path());
  double t = 0;
  HostMonitor monitor(options_over(dir.path(), t, sockets));
  add_ranks(monitor);
  std::vector<std::pair<double, DeviceEvent>> said;
  const uint64_t base_ns = 1'000'000'000'000;
  for (t = 0; t <= 20; t += 1)
    for (DeviceEvent& e : monitor.poll(base_ns + static_cast<uint64_t>(t * 1e9))) said.emplace_back(t, std::move(e));
  return said;
}

TEST(HostMonitorTcp, BesideALossSaidByTheLastTwoSecondsNoRoundTripIsSaid) {
  std::optional<double> loss_said;
  for (const auto& [t, e] : mesh_events(mesh_lossy_at)) {
    EXPECT_EQ(e.type, "host.tcp_retrans") << "at " << t << " s: " << e.summary;
    if (e.type != "host.tcp_retrans") continue;
    EXPECT_EQ(e.ranks, std::vector<int>{0}) << e.summary;
    if (!loss_said) loss_said = t;
  }
  ASSERT_TRUE(loss_said) << "rank 0's retransmissions were never said: the test shows nothing";
  EXPECT_LE(*loss_said, kLossAt + 3) << "said before rank 1's round trips lengthened";
}

TEST(HostMonitorTcp, ARankWhoseEveryConnectionSlowsIsSaidByItsRoundTrips) {
  std::optional<double> first;
  for (const auto& [t, e] : mesh_events(mesh_at)) {
    ASSERT_EQ(e.type, "host.tcp_rtt") << e.summary;
    EXPECT_EQ(e.ranks, std::vector<int>{1}) << e.summary;
    EXPECT_EQ(e.fields.at("value"), 0.02) << e.summary;
    if (!first) first = t;
  }
  ASSERT_TRUE(first) << "rank 1's round trips were never said";
  EXPECT_GE(*first, kLossAt) << "said before its link slowed";
  EXPECT_LE(*first, kLossAt + 1) << "a level, said at the first reading that sees it";
}

}  // namespace
}  // namespace slowburn::host_monitor_tcp_test
