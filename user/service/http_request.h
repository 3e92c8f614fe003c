// The head of an HTTP/1.x request, as the metrics endpoint needs it: the
// method and path of the request line, nothing else (a scrape sends no
// body). Pure: the endpoint feeds it the bytes read so far.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace slowburn {

// More than this before the blank line that ends the head: not a scrape
// (Prometheus sends ~250 bytes), and a client may not make us buffer more.
inline constexpr size_t kMaxRequestHeadBytes = 8192;

struct HttpRequestHead {
  enum class State { incomplete, complete, malformed, too_large };
  State state = State::incomplete;
  std::string method;
  std::string path;  // without the query string
  std::string why;   // for malformed and too_large: what was wrong
};

HttpRequestHead parse_request_head(std::string_view bytes);

// The whole response to a request (status line, headers, and for GET the
// body), always with "Connection: close": one request per connection keeps
// the endpoint's state to one buffer per client.
struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string extra_headers;  // "Name: value\r\n" lines
  std::string body;
};

// The status line and headers; the body's length is given apart, for a body
// shared rather than copied (the metrics page) and for HEAD.
std::string response_head(const HttpResponse& response, size_t content_length);

}  // namespace slowburn
