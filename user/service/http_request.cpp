#include "service/http_request.h"

#include <fmt/format.h>

namespace slowburn {

namespace {

bool token_char(char c) {
  // RFC 9110 tchar, enough to reject binary and control bytes in a method.
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.' || c == '!' || c == '~' || c == '*' || c == '\'' || c == '+' || c == '^' || c == '`' || c == '|' ||
         c == '#' || c == '$' || c == '%' || c == '&';
}

HttpRequestHead bad(std::string why) {
  HttpRequestHead head;
  head.state = HttpRequestHead::State::malformed;
  head.why = std::move(why);
  return head;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

// "GET /metrics HTTP/1.1", without its line end.
HttpRequestHead parse_request_line(std::string_view line) {
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return bad("request line without a method");
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return bad("request line without a target");
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  for (char c : method)
    if (!token_char(c)) return bad("method is not a token");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return bad("not HTTP/1.0 or HTTP/1.1");
  if (target.front() != '/') return bad("target is not an absolute path");
  for (char c : target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return bad("control byte in the target");
  HttpRequestHead head;
  head.state = HttpRequestHead::State::complete;
  head.method = std::string(method);
  head.path = std::string(target.substr(0, target.find('?')));
  return head;
}

std::string_view first_line(std::string_view bytes) {
  std::string_view line = bytes.substr(0, bytes.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

HttpRequestHead parse_request_head(std::string_view bytes) {
  // Clients may end lines with a bare LF (RFC 9112 section 2.2).
  size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) end = bytes.find("\n\n");
  if (end != std::string_view::npos && end <= kMaxRequestHeadBytes) return parse_request_line(first_line(bytes));
  if (bytes.size() > kMaxRequestHeadBytes) {
    HttpRequestHead head;
    head.state = HttpRequestHead::State::too_large;
    head.why = fmt::format("request head over {} bytes", kMaxRequestHeadBytes);
    return head;
  }
  // A request line already wrong need not wait for the rest of the head.
  if (bytes.find('\n') != std::string_view::npos) {
    HttpRequestHead line = parse_request_line(first_line(bytes));
    if (line.state == HttpRequestHead::State::malformed) return line;
  }
  return {};
}

std::string response_head(const HttpResponse& r, size_t content_length) {
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n",
                     r.status, reason_phrase(r.status), r.content_type, content_length, r.extra_headers);
}

}  // namespace slowburn
