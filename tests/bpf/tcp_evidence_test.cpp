// A process's TCP sockets read from outside its network namespace, as the
// host monitor reads a rank's: tests/targets/tcp_loss_peer sends to itself
// over a loopback device that drops one data segment in 8 on the way in
// (bpf/lossy_port.bpf.c at tc ingress, in a namespace of its own: nothing
// of the host's changes), and prints what getsockopt(TCP_INFO) says its
// sockets retransmitted: sock_diag must say the same.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "core/clock.h"
#include "core/subprocess.h"
#include "host/host_reader.h"
#include "net/tcp_diag.h"
#include "support/test_support.h"

namespace slowburn::tcp_evidence_test {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

TEST(TcpEvidence, ARanksSocketsAreReadInItsOwnNetworkNamespaceWithTheirRetransmissions) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  SpawnOptions options;
  options.output_path = (dir.path() / "peer.out").string();
  auto peer = Subprocess::spawn({testing::target_path("tcp_loss_peer").string(), "47123", "8", "4000000"}, options);
  ASSERT_TRUE(peer) << peer.error().message;
  // Its first line: "ready ..." or its error (libbpf's warnings may come before).
  std::string line, all;
  for (auto deadline = std::chrono::steady_clock::now() + 30s;
       line.rfind("ready", 0) != 0 && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(100ms);
    bool ended = peer->wait_for(0ms).has_value();  // before reading: its last line is then in the file
    std::ifstream in(options.output_path);
    all.clear();
    for (std::string l; std::getline(in, l);) {
      all += l + "\n";
      if (l.rfind("ready", 0) == 0) line = l;
      if (l.find("tc ingress hook") != std::string::npos || l.find("to lo's ingress") != std::string::npos)
        GTEST_SKIP() << "this kernel has no tc BPF classifier on a device's ingress (clsact, cls_bpf): " << l;
    }
    if (ended) break;  // its error is in `all`
  }
  ASSERT_EQ(line.rfind("ready", 0), 0u) << "tcp_loss_peer:\n" << all;
  std::istringstream fields(line.substr(5));
  uint32_t sender = 0, receiver = 0;
  uint64_t dropped = 0;
  fields >> sender >> receiver >> dropped;
  ASSERT_GT(dropped, 0u) << "the premise: segments were dropped";
  ASSERT_GT(sender, 0u) << "the premise: the kernel retransmitted them";

  // The host monitor's reader: the process's namespace entered, its fds' sockets found.
  HostReader reader({"/proc", "/sys/fs/cgroup"});
  HostReading reading = reader.read(peer->pid(), monotonic_ns());
  std::string notes;
  for (const std::string& n : reader.take_notes()) notes += n + "\n";
  ASSERT_TRUE(reading.tcp) << notes;
  uint64_t retrans = 0;
  for (const auto& [inode, n] : reading.tcp->by_inode) retrans += n.retrans;
  EXPECT_EQ(retrans, uint64_t{sender} + receiver) << "sock_diag and TCP_INFO read the same sockets";
  EXPECT_EQ(reading.tcp->by_inode.size(), 3u) << "the listener, the sender and the receiver";
  EXPECT_GT(reading.tcp->max_rtt_us, 0u);

  // The dump itself: slowburn's own namespace has none of them.
  auto theirs = read_tcp_sockets("/proc/" + std::to_string(peer->pid()) + "/ns/net");
  ASSERT_TRUE(theirs) << theirs.error().message;
  bool found = false;
  for (const TcpSocket& s : *theirs)
    if (s.remote == "127.0.0.1:47123") {
      found = true;
      EXPECT_EQ(s.total_retrans, sender) << s.local << " -> " << s.remote;
      EXPECT_EQ(s.state, 1) << "established";
      EXPECT_GE(s.bytes_sent, 4'000'000u);
      EXPECT_GT(s.bytes_retrans, 0u);
    }
  EXPECT_TRUE(found) << "the sender's socket, to 127.0.0.1:47123";
  auto ours = read_tcp_sockets();
  ASSERT_TRUE(ours) << ours.error().message;
  auto inodes = socket_inodes("/proc", peer->pid());
  ASSERT_TRUE(inodes);
  for (const TcpSocket& s : *ours) EXPECT_FALSE(inodes->contains(s.inode)) << s.local << " -> " << s.remote;
  peer->terminate();
}

}  // namespace
}  // namespace slowburn::tcp_evidence_test
