#include "service/metrics_endpoint.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <list>
#include <vector>

#include "service/http_request.h"

namespace slowburn {

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One client: its request as read so far, then its response as written so far.
struct Connection {
  int fd = -1;
  int64_t deadline_ms = 0;
  std::string in;
  bool answering = false;
  std::string head;                         // status line and headers
  std::shared_ptr<const std::string> body;  // the page: shared by every scrape of it, not copied
  size_t sent = 0;                          // of head + body
};

HttpResponse route(const HttpRequestHead& request, const std::shared_ptr<const std::string>& page,
                   std::shared_ptr<const std::string>& body) {
  HttpResponse r;
  if (request.method != "GET" && request.method != "HEAD") {
    r.status = 405;
    r.extra_headers = "Allow: GET, HEAD\r\n";
    r.body = "only GET and HEAD\n";
  } else if (request.path == "/metrics") {
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    body = page;
    return r;
  } else if (request.path == "/") {
    r.body = "slowburn probe: metrics at /metrics\n";
  } else {
    r.status = 404;
    r.body = "not found: metrics at /metrics\n";
  }
  return r;
}

}  // namespace

Result<std::pair<std::string, int>> parse_listen_address(const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size())
    return make_error("--listen {}: expected HOST:PORT, e.g. 127.0.0.1:9464", listen);
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) return make_error("--listen {}: name the address to bind (127.0.0.1 keeps it local)", listen);
  int port = -1;
  std::string_view digits(listen.data() + colon + 1, listen.size() - colon - 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc() || end != digits.data() + digits.size() || port < 0 || port > 65535)
    return make_error("--listen {}: the port must be a number from 0 to 65535", listen);
  return std::make_pair(host, port);
}

// Rendered (text set, render dropped) by page(), on the endpoint's thread only.
struct MetricsEndpoint::Page {
  std::function<std::string()> render;
  std::shared_ptr<const std::string> text;
};

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(const std::string& listen, EndpointLimits limits) {
  auto address = parse_listen_address(listen);
  if (!address) return address.error();
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  endpoint->limits_ = limits;
  endpoint->host_ = address->first;
  endpoint->publish(std::string());

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string port_text = std::to_string(address->second);
  if (int rc = getaddrinfo(address->first.c_str(), port_text.c_str(), &hints, &found); rc != 0)
    return make_error("--listen {}: cannot resolve {}: {}", listen, address->first, gai_strerror(rc));
  int fd = -1;
  int bind_errno = 0;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR for a quick restart, never SO_REUSEPORT: with it a second
    // slowburn probe would bind the same port and the kernel would split the
    // scrapes between them.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      bind_errno = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0)
    return make_error(
        "cannot listen on {}: {} (another slowburn probe? choose another with --listen, or --listen '' for no "
        "endpoint)",
        listen, std::strerror(bind_errno ? bind_errno : EADDRNOTAVAIL));
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  endpoint->port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                      : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  endpoint->listen_fd_ = fd;
  endpoint->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (endpoint->wake_fd_ < 0) {
    close(fd);
    return make_sys_error(errno, "metrics endpoint: eventfd");
  }
  MetricsEndpoint* self = endpoint.get();
  endpoint->thread_ = std::thread([self] { self->serve(); });
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void MetricsEndpoint::publish(std::string text) {
  auto page = std::make_shared<Page>();
  page->text = std::make_shared<const std::string>(std::move(text));
  std::lock_guard lock(mutex_);
  page_ = std::move(page);
}

void MetricsEndpoint::publish(std::function<std::string()> render) {
  auto page = std::make_shared<Page>();
  page->render = std::move(render);
  std::lock_guard lock(mutex_);
  page_ = std::move(page);
}

std::shared_ptr<const std::string> MetricsEndpoint::page() const {
  std::shared_ptr<Page> page;
  {
    std::lock_guard lock(mutex_);
    page = page_;
  }
  if (!page) return nullptr;
  if (!page->text) {
    page->text = std::make_shared<const std::string>(page->render());
    page->render = nullptr;  // what it held goes now
  }
  return page->text;
}

EndpointStats MetricsEndpoint::stats() const {
  return {requests_.load(), bad_requests_.load(), timed_out_.load(), evicted_.load()};
}

namespace {

// Reads what the client sent; once its request head is whole, the answer
// is ready to send. False: the client went away.
bool receive_request(Connection& c, const std::shared_ptr<const std::string>& page, std::atomic<uint64_t>& bad_requests,
                     std::atomic<uint64_t>& requests) {
  char buf[4096];
  ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
  if (n < 0) return true;
  c.in.append(buf, static_cast<size_t>(n));
  HttpRequestHead head = parse_request_head(c.in);
  if (head.state == HttpRequestHead::State::incomplete) return true;
  HttpResponse response;
  std::shared_ptr<const std::string> body;
  if (head.state == HttpRequestHead::State::complete) {
    response = route(head, page, body);
  } else {
    ++bad_requests;
    response.status = head.state == HttpRequestHead::State::too_large ? 431 : 400;
    response.body = head.why + "\n";
  }
  if (!body) body = std::make_shared<const std::string>(std::move(response.body));
  c.head = response_head(response, body->size());
  if (head.method != "HEAD") c.body = std::move(body);
  c.in.clear();
  c.in.shrink_to_fit();
  c.answering = true;
  ++requests;
  shutdown(c.fd, SHUT_RD);  // one request per connection: anything more is not read
  return true;
}

// Writes as much as the socket takes; the rest at the next POLLOUT. True:
// the connection is finished (all sent, or the client went away).
bool send_response(Connection& c) {
  for (;;) {
    size_t body_size = c.body ? c.body->size() : 0;
    size_t total = c.head.size() + body_size;
    if (c.sent >= total) return true;
    const char* data = c.sent < c.head.size() ? c.head.data() + c.sent : c.body->data() + (c.sent - c.head.size());
    size_t left = c.sent < c.head.size() ? c.head.size() - c.sent : total - c.sent;
    ssize_t n = send(c.fd, data, left, MSG_NOSIGNAL);
    if (n < 0) return errno != EAGAIN && errno != EINTR;
    c.sent += static_cast<size_t>(n);
  }
}

void drop(std::list<Connection>& conns, std::list<Connection>::iterator it) {
  close(it->fd);
  conns.erase(it);
}

// Every client waiting to be accepted.
void accept_clients(int listen_fd, const EndpointLimits& limits, std::list<Connection>& conns, int64_t now,
                    std::atomic<uint64_t>& evicted) {
  for (;;) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) break;  // EAGAIN: all taken; anything else: try again at the next wake-up
    if (conns.size() >= limits.max_connections) {
      // Room for the new client: the oldest that has not finished its
      // request (a slow or idle one). If all are being answered, the new
      // one waits its turn closed.
      auto oldest = conns.begin();
      while (oldest != conns.end() && oldest->answering) ++oldest;
      ++evicted;
      if (oldest == conns.end()) {
        close(fd);
        continue;
      }
      drop(conns, oldest);
    }
    conns.push_back({fd, now + limits.connection_deadline_ms, {}, false, {}, nullptr, 0});
  }
}

}  // namespace

void MetricsEndpoint::serve() {
  std::list<Connection> conns;  // oldest first
  std::vector<pollfd> fds;
  std::vector<std::list<Connection>::iterator> polled;
  for (;;) {
    int64_t now = now_ms();
    int64_t wait_ms = 1000;
    for (auto it = conns.begin(); it != conns.end();) {
      auto next = std::next(it);
      if (it->deadline_ms <= now) {
        ++timed_out_;
        drop(conns, it);
      } else {
        wait_ms = std::min(wait_ms, it->deadline_ms - now);
      }
      it = next;
    }
    fds.assign({{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    polled.clear();
    for (auto it = conns.begin(); it != conns.end(); ++it) {
      fds.push_back({it->fd, static_cast<short>(it->answering ? POLLOUT : POLLIN), 0});
      polled.push_back(it);
    }
    if (poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait_ms, 0))) < 0 && errno != EINTR) return;
    if (fds[0].revents) return;
    now = now_ms();
    for (size_t i = 0; i < polled.size(); ++i) {
      if (!fds[i + 2].revents) continue;
      Connection& c = *polled[i];
      bool finished = !c.answering && !receive_request(c, page(), bad_requests_, requests_);
      if (!finished && c.answering) finished = send_response(c);
      if (finished) drop(conns, polled[i]);
    }
    if (fds[1].revents & POLLIN) accept_clients(listen_fd_, limits_, conns, now, evicted_);
  }
}

}  // namespace slowburn
