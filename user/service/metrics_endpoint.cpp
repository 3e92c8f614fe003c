#include "service/metrics_endpoint.h"

#include <fmt/format.h>
#include <httplib.h>

#include <charconv>
#include <chrono>
#include <thread>

namespace slowburn {

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

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(const std::string& listen) {
  auto address = parse_listen_address(listen);
  if (!address) return address.error();
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  endpoint->server_ = std::make_unique<httplib::Server>();
  endpoint->host_ = address->first;
  // Two workers: Prometheus scrapes one page at a time; the default pool
  // would park a thread per core on every node of the fleet.
  endpoint->server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  // SO_REUSEADDR for a quick restart, but not httplib's default SO_REUSEPORT:
  // with it a second slowburn probe would bind the same port and the kernel
  // would split the scrapes between them.
  endpoint->server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  MetricsEndpoint* self = endpoint.get();
  endpoint->server_->Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    std::string page;
    {
      std::lock_guard lock(self->mutex_);
      page = self->page_;
    }
    res.set_content(page, "text/plain; version=0.0.4; charset=utf-8");
  });
  endpoint->server_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("slowburn probe: metrics at /metrics\n", "text/plain; charset=utf-8");
  });
  int port = address->second;
  if (port == 0) {
    port = endpoint->server_->bind_to_any_port(address->first);
  } else if (!endpoint->server_->bind_to_port(address->first, port)) {
    port = -1;
  }
  if (port < 0)
    return make_error(
        "cannot listen on {}: the address is in use or not on this host (another slowburn probe? choose another with "
        "--listen, or --listen '' for no endpoint)",
        listen);
  endpoint->port_ = port;
  endpoint->thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  // Until the loop runs, stop() has nothing to stop and the destructor's
  // join would wait for ever.
  for (int i = 0; i < 1000 && !endpoint->server_->is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

void MetricsEndpoint::publish(std::string text) {
  std::lock_guard lock(mutex_);
  page_ = std::move(text);
}

}  // namespace slowburn
