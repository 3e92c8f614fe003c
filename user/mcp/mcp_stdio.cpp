#include "mcp/mcp_stdio.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <optional>

namespace slowburn {

using nlohmann::json;

namespace {

// What one request was, for the log line on stderr.
std::string describe(std::string_view line) {
  json message = json::parse(line.begin(), line.end(), nullptr, false);
  if (message.is_discarded() || !message.is_object()) return "a malformed message";
  std::string method = message.contains("method") && message["method"].is_string()
                           ? message["method"].get<std::string>()
                           : "(no method)";
  if (method == "tools/call" && message.contains("params") && message["params"].is_object() &&
      message["params"].contains("name") && message["params"]["name"].is_string())
    method += " " + message["params"]["name"].get<std::string>();
  return method;
}

std::string outcome(const json& answer) {
  if (answer.contains("error"))
    return fmt::format("error {}: {}", answer["error"].value("code", 0), answer["error"].value("message", ""));
  if (answer["result"].is_object() && answer["result"].value("isError", false)) {
    const json& content = answer["result"]["content"];
    return "tool error: " + (content.empty() ? std::string() : content[0].value("text", ""));
  }
  return "ok";
}

}  // namespace

Result<int> take_stdout_for_protocol() {
  int protocol_fd = dup(STDOUT_FILENO);
  if (protocol_fd < 0) return make_sys_error(errno, "cannot keep stdout for the protocol");
  std::cout.flush();
  if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return make_sys_error(errno, "cannot point stdout at stderr");
  return protocol_fd;
}

std::function<bool(const std::string&)> fd_line_writer(int fd) {
  return [fd](const std::string& text) {
    std::string line = text + '\n';
    size_t done = 0;
    while (done < line.size()) {
      ssize_t n = ::write(fd, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  };
}

int serve_lines(std::istream& in, const std::function<bool(const std::string&)>& write, const ToolTable& tools,
                const ServerIdentity& server, const std::atomic<bool>& stop) {
  std::string line;
  while (!stop.load() && std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    auto started = std::chrono::steady_clock::now();
    std::optional<json> answer = handle_message(line, tools, server);
    if (!answer) continue;  // a notification
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::cerr << fmt::format("slowburn mcp: {} ({:.1f} s): {}\n", describe(line), seconds, outcome(*answer));
    // Strings from the node (a process's command line, a kernel log line) may not be UTF-8: replaced, never thrown.
    if (!write(answer->dump(-1, ' ', false, json::error_handler_t::replace))) {
      std::cerr << "slowburn mcp: the client closed its end: exiting\n";
      return 0;
    }
  }
  std::cerr << (stop.load() ? "slowburn mcp: stopped by a signal\n" : "slowburn mcp: end of input: exiting\n");
  return 0;
}

}  // namespace slowburn
