// The metrics endpoint's request parser: what a scrape sends, what a
// hostile or broken client sends, and when to stop waiting for more.
#include "service/http_request.h"

#include <gtest/gtest.h>

namespace slowburn::http_request_test {
namespace {

using State = HttpRequestHead::State;

TEST(HttpRequestHead, AScrapeIsAGetOfMetrics) {
  auto head = parse_request_head(
      "GET /metrics HTTP/1.1\r\nHost: node:9464\r\nUser-Agent: Prometheus/2.42.0\r\nAccept: text/plain\r\n\r\n");
  EXPECT_EQ(head.state, State::complete);
  EXPECT_EQ(head.method, "GET");
  EXPECT_EQ(head.path, "/metrics");
}

TEST(HttpRequestHead, TheQueryIsNotPartOfThePathAndBareLineFeedsAreAccepted) {
  auto head = parse_request_head("HEAD /metrics?name[]=x HTTP/1.0\n\n");
  EXPECT_EQ(head.state, State::complete);
  EXPECT_EQ(head.method, "HEAD");
  EXPECT_EQ(head.path, "/metrics");
}

TEST(HttpRequestHead, APartialHeadWaitsForMore) {
  EXPECT_EQ(parse_request_head("").state, State::incomplete);
  EXPECT_EQ(parse_request_head("GET /met").state, State::incomplete);
  EXPECT_EQ(parse_request_head("GET /metrics HTTP/1.1\r\nHost: x\r\n").state, State::incomplete);
}

TEST(HttpRequestHead, AWrongRequestLineIsMalformedWithoutWaitingForTheRest) {
  struct Case {
    const char* bytes;
    const char* why;
  };
  for (Case c : {Case{"garbage\r\n", "request line without a method"},
                 Case{" /metrics HTTP/1.1\r\n", "request line without a method"},
                 Case{"GET  HTTP/1.1\r\n", "request line without a target"},
                 Case{"GET /metrics HTTP/2.0\r\n", "not HTTP/1.0 or HTTP/1.1"},
                 Case{"GET metrics HTTP/1.1\r\n", "target is not an absolute path"},
                 Case{"G\x01T /metrics HTTP/1.1\r\n", "method is not a token"},
                 Case{"GET /me\x7ftrics HTTP/1.1\r\n", "control byte in the target"},
                 Case{"\x16\x03\x01\x02\xfc\x03\x03\n", "request line without a method"}}) {
    SCOPED_TRACE(c.bytes);
    auto head = parse_request_head(c.bytes);
    EXPECT_EQ(head.state, State::malformed);
    EXPECT_EQ(head.why, c.why);
  }
}

TEST(HttpRequestHead, AHeadPastTheLimitIsTooLargeEvenIfItEndsLater) {
  std::string head = "GET /metrics HTTP/1.1\r\nX-Pad: " + std::string(kMaxRequestHeadBytes, 'a');
  EXPECT_EQ(parse_request_head(head).state, State::too_large);
  EXPECT_EQ(parse_request_head(head + "\r\n\r\n").state, State::too_large);
  // Just under the limit, ended: a request.
  std::string fits = "GET /metrics HTTP/1.1\r\nX-Pad: ";
  fits += std::string(kMaxRequestHeadBytes - fits.size() - 4, 'a') + "\r\n\r\n";
  EXPECT_EQ(parse_request_head(fits).state, State::complete);
}

TEST(HttpResponse, TheHeadSaysTheLengthAndClosesTheConnection) {
  HttpResponse r;
  r.status = 405;
  r.extra_headers = "Allow: GET, HEAD\r\n";
  EXPECT_EQ(response_head(r, 18),
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
            "18\r\nConnection: close\r\nAllow: GET, HEAD\r\n\r\n");
}

}  // namespace
}  // namespace slowburn::http_request_test
