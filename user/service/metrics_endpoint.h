// The probe mode's /metrics endpoint: one thread, non-blocking sockets and
// poll(2), hard limits on what a client can hold. The service publishes a
// page every interval, as text or as a function that renders it: that runs
// once, here, for the first scrape that wants it, so a node scraped every
// 15 s renders a page every 15 s, not every second (rendering was a third
// of the service's CPU under the demo job: bench/RESULTS.md 8c). A scrape
// takes a reference to the latest page.
//
// Not cpp-httplib: its 0.11 server hands each connection
// to a worker thread that blocks in recv with a per-call timeout, so four
// clients trickling a byte a second kept both workers busy and a real
// scrape timed out after 15 s; its queue of accepted connections has no
// bound. Here a connection is a buffer in a loop: it cannot hold a thread,
// it has a deadline for the whole exchange, and past the connection limit
// the oldest client still sending its request makes room for the new one.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/error.h"

namespace slowburn {

// "127.0.0.1:9464", "[::1]:9464", "0.0.0.0:9464"; port 0 picks a free one.
Result<std::pair<std::string, int>> parse_listen_address(const std::string& listen);

struct EndpointLimits {
  size_t max_connections = 64;            // open at once; beyond, the oldest unfinished request is dropped
  int64_t connection_deadline_ms = 5000;  // accept to last byte written (Prometheus' scrape timeout is 10 s)
};

// Cumulative, for slowburn_endpoint_* metrics.
struct EndpointStats {
  uint64_t requests = 0;      // answered (any status)
  uint64_t bad_requests = 0;  // malformed or oversized heads, answered 400/431
  uint64_t timed_out = 0;     // closed at their deadline
  uint64_t evicted = 0;       // dropped, unfinished, to make room at the connection limit
};

class MetricsEndpoint {
 public:
  static Result<std::unique_ptr<MetricsEndpoint>> start(const std::string& listen, EndpointLimits limits = {});
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  void publish(std::string text);
  // `render` must own what it reads: it runs on the endpoint's thread.
  void publish(std::function<std::string()> render);
  int port() const { return port_; }
  const std::string& host() const { return host_; }
  EndpointStats stats() const;

 private:
  struct Page;
  MetricsEndpoint() = default;
  void serve();
  std::shared_ptr<const std::string> page() const;  // the serving thread's only

  EndpointLimits limits_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: the destructor's stop signal
  std::thread thread_;
  mutable std::mutex mutex_;
  std::shared_ptr<Page> page_;
  std::string host_;
  int port_ = 0;
  std::atomic<uint64_t> requests_{0}, bad_requests_{0}, timed_out_{0}, evicted_{0};
};

}  // namespace slowburn
