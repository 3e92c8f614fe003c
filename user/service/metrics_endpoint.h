// The probe mode's /metrics endpoint, served by cpp-httplib (Debian's
// libcpp-httplib) on its own thread. The service publishes a rendered page
// every interval; a scrape only copies the latest one, so a slow or hostile
// client never holds up the service.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/error.h"

namespace httplib {
class Server;
}

namespace slowburn {

// "127.0.0.1:9464", "[::1]:9464", "0.0.0.0:9464"; port 0 picks a free one.
Result<std::pair<std::string, int>> parse_listen_address(const std::string& listen);

class MetricsEndpoint {
 public:
  static Result<std::unique_ptr<MetricsEndpoint>> start(const std::string& listen);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  void publish(std::string text);
  int port() const { return port_; }
  const std::string& host() const { return host_; }

 private:
  MetricsEndpoint() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::mutex mutex_;
  std::string page_;
  std::string host_;
  int port_ = 0;
};

}  // namespace slowburn
