// The sock_diag reply parser (net/tcp_diag.h) on hand-built netlink
// messages: a socket with its tcp_info, the dump's end, an older kernel's
// shorter tcp_info, the kernel's refusal and a message that does not fit.
#include "net/tcp_diag.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>

#include <cstring>

namespace slowburn::tcp_diag_test {
namespace {

void append(std::vector<std::byte>& buffer, const void* data, size_t size) {
  const auto* bytes = static_cast<const std::byte*>(data);
  buffer.insert(buffer.end(), bytes, bytes + size);
  buffer.resize(NLMSG_ALIGN(buffer.size()));
}

// One SOCK_DIAG_BY_FAMILY message: 127.0.0.1:4000 -> 127.0.0.2:5000,
// inode 777, with the first `info_bytes` of a tcp_info.
std::vector<std::byte> socket_message(size_t info_bytes = sizeof(tcp_info)) {
  inet_diag_msg msg{};
  msg.idiag_family = AF_INET;
  msg.idiag_state = 1;
  msg.id.idiag_sport = htons(4000);
  msg.id.idiag_dport = htons(5000);
  inet_pton(AF_INET, "127.0.0.1", &msg.id.idiag_src[0]);
  inet_pton(AF_INET, "127.0.0.2", &msg.id.idiag_dst[0]);
  msg.idiag_inode = 777;
  tcp_info info{};
  info.tcpi_rtt = 1500;
  info.tcpi_rttvar = 300;
  info.tcpi_total_retrans = 42;
  info.tcpi_bytes_acked = 1'000'000;
  nlattr attr{static_cast<uint16_t>(NLA_HDRLEN + info_bytes), INET_DIAG_INFO};
  nlmsghdr header{};
  header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  header.nlmsg_len =
      static_cast<uint32_t>(NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(msg)) + NLA_HDRLEN + NLA_ALIGN(info_bytes));
  std::vector<std::byte> out;
  append(out, &header, sizeof(header));
  append(out, &msg, sizeof(msg));
  append(out, &attr, sizeof(attr));
  append(out, &info, info_bytes);
  return out;
}

std::vector<std::byte> control_message(uint16_t type, int32_t error = 0) {
  nlmsghdr header{};
  header.nlmsg_type = type;
  std::vector<std::byte> out;
  if (type == NLMSG_ERROR) {
    nlmsgerr err{};
    err.error = error;
    header.nlmsg_len = NLMSG_HDRLEN + sizeof(err);
    append(out, &header, sizeof(header));
    append(out, &err, sizeof(err));
  } else {
    header.nlmsg_len = NLMSG_HDRLEN + sizeof(int);
    int zero = 0;
    append(out, &header, sizeof(header));
    append(out, &zero, sizeof(zero));
  }
  return out;
}

TEST(TcpDiag, ASocketWithItsTcpInfoAndTheDumpsEnd) {
  std::vector<std::byte> buffer = socket_message();
  std::vector<std::byte> done_message = control_message(NLMSG_DONE);
  buffer.insert(buffer.end(), done_message.begin(), done_message.end());
  bool done = false;
  auto sockets = parse_inet_diag(buffer, done);
  ASSERT_TRUE(sockets) << sockets.error().message;
  EXPECT_TRUE(done);
  ASSERT_EQ(sockets->size(), 1u);
  const TcpSocket& s = sockets->front();
  EXPECT_EQ(s.inode, 777u);
  EXPECT_EQ(s.state, 1);
  EXPECT_EQ(s.local, "127.0.0.1:4000");
  EXPECT_EQ(s.remote, "127.0.0.2:5000");
  EXPECT_EQ(s.rtt_us, 1500u);
  EXPECT_EQ(s.rttvar_us, 300u);
  EXPECT_EQ(s.total_retrans, 42u);
  EXPECT_EQ(s.bytes_acked, 1'000'000u);
}

TEST(TcpDiag, AnOlderKernelsShorterTcpInfoReadsWhatItHas) {
  // Up to tcpi_rcv_space: the RTT is there, the counts after it are not.
  constexpr size_t kShort = offsetof(tcp_info, tcpi_total_retrans);
  bool done = true;
  auto sockets = parse_inet_diag(socket_message(kShort), done);
  ASSERT_TRUE(sockets) << sockets.error().message;
  EXPECT_FALSE(done) << "more of the dump to come";
  ASSERT_EQ(sockets->size(), 1u);
  EXPECT_EQ(sockets->front().rtt_us, 1500u);
  EXPECT_EQ(sockets->front().total_retrans, 0u);
  EXPECT_EQ(sockets->front().bytes_acked, 0u);
}

TEST(TcpDiag, TheKernelsRefusalAndAMessageThatDoesNotFitAreErrors) {
  bool done = false;
  auto refused = parse_inet_diag(control_message(NLMSG_ERROR, -EPERM), done);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("refused the TCP socket dump"), std::string::npos) << refused.error().message;
  std::vector<std::byte> cut = socket_message();
  cut.resize(cut.size() - 8);
  auto truncated = parse_inet_diag(cut, done);
  ASSERT_FALSE(truncated);
  EXPECT_NE(truncated.error().message.find("does not fit"), std::string::npos) << truncated.error().message;
}

}  // namespace
}  // namespace slowburn::tcp_diag_test
