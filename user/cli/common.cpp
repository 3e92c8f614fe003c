#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <csignal>
#include <iostream>

#include "cli/command.h"
#include "sinks/json_sink.h"
#include "sinks/text_sink.h"
#include "trace/trace_session.h"

namespace slowburn::cli {

namespace {
std::atomic<bool> g_stop{false};

void on_stop_signal(int) { g_stop.store(true); }
}  // namespace

namespace {
Result<int> parse_count(const std::string& text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return make_error("'{}' is not a number", text);
  return value;
}
}  // namespace

Result<void> parse_persistence(const std::string& text, DetectorConfig& config) {
  size_t slash = text.find('/');
  auto m = parse_count(text.substr(0, slash));
  auto n = slash == std::string::npos ? Result<int>(make_error("no N")) : parse_count(text.substr(slash + 1));
  if (!m || !n || *m < 1 || *m > *n || *n > 100)
    return make_error("--persistence '{}' is not M/N with 1 <= M <= N <= 100 (e.g. 3/5)", text);
  config.persistence_m = *m;
  config.persistence_n = *n;
  return {};
}

int fail(const Error& error) {
  std::cerr << "slowburn: " << error.message << '\n';
  return error.nothing_to_watch ? kExitNothingToWatch : 1;
}

std::unique_ptr<Sink> make_stdout_sink(bool json, const std::string& host, std::optional<int64_t> wall_offset) {
  if (json)
    return std::make_unique<JsonSink>(std::cout, host.empty() ? hostname() : host,
                                      wall_offset.value_or(wall_offset_ns()));
  return std::make_unique<TextSink>(std::cout);
}

const std::atomic<bool>& install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: the poll returns, the loop sees the flag
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  return g_stop;
}

}  // namespace slowburn::cli
