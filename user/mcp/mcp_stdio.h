// The stdio transport of slowburn mcp: one JSON-RPC message a line on
// stdin, one answer a line on stdout, logs on stderr. Stdout carries the
// protocol only: the process's own stdout is moved onto stderr first, so a
// stray print (a library's, a sink's) cannot corrupt a message.
#pragma once

#include <atomic>
#include <functional>
#include <istream>
#include <string>

#include "core/error.h"
#include "mcp/mcp_server.h"

namespace slowburn {

// Keeps the real stdout for the protocol (returned) and points file
// descriptor 1 at stderr from then on.
Result<int> take_stdout_for_protocol();

// Answers each line of `in` until it ends or `stop` is set; one message at
// a time, so one tool call at a time. `write` sends one answer line and
// returns false when the client is gone. Returns 0 on the end of input.
int serve_lines(std::istream& in, const std::function<bool(const std::string&)>& write, const ToolTable& tools,
                const ServerIdentity& server, const std::atomic<bool>& stop);

// A line writer on a file descriptor (every byte written, EINTR retried).
std::function<bool(const std::string&)> fd_line_writer(int fd);

}  // namespace slowburn
