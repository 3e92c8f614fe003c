// The endpoint renders a published page only when a scrape wants it, once
// per page: a node scraped every 15 s renders every 15 s.
#include "service/metrics_endpoint.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>

namespace slowburn::metrics_endpoint_test {
namespace {

// GET /metrics over loopback; the whole response, or "" when it cannot connect.
std::string scrape(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::string request = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) response.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return response;
}

TEST(MetricsEndpoint, RendersAPublishedPageOnlyWhenScrapedAndOnce) {
  auto endpoint = MetricsEndpoint::start("127.0.0.1:0");
  ASSERT_TRUE(endpoint) << endpoint.error().message;
  std::atomic<int> renders{0};
  auto publish = [&](const std::string& text) {
    (*endpoint)->publish([&renders, text] {
      ++renders;
      return text;
    });
  };
  publish("slowburn_up 1\n");
  publish("slowburn_up 2\n");
  EXPECT_EQ(renders, 0) << "rendered with no scrape";
  std::string first = scrape((*endpoint)->port());
  EXPECT_NE(first.find("slowburn_up 2\n"), std::string::npos) << first;
  EXPECT_EQ(renders, 1) << "only the latest page is rendered";
  std::string second = scrape((*endpoint)->port());
  EXPECT_NE(second.find("slowburn_up 2\n"), std::string::npos) << second;
  EXPECT_EQ(renders, 1) << "a second scrape of the same page rendered it again";
  (*endpoint)->publish(std::string("slowburn_up 3\n"));  // text, as before
  EXPECT_NE(scrape((*endpoint)->port()).find("slowburn_up 3\n"), std::string::npos);
  EXPECT_EQ(renders, 1);
}

}  // namespace
}  // namespace slowburn::metrics_endpoint_test
