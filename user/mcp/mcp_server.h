// slowburn mcp's protocol: JSON-RPC 2.0 messages of the Model Context
// Protocol, answered from a table of tools. Pure: one message in, its
// answer out (none for a notification); no stdio, no BPF, no state kept
// between messages, so every case is a unit test. The stdio loop is
// mcp/mcp_stdio.h, the tools mcp/mcp_tools.h.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace slowburn {

// What a tool call gives back: the structured result (an object that holds
// to the tool's outputSchema), or an error a person can act on (sent as a
// result with isError: true, never as a protocol error).
using ToolOutcome = Result<nlohmann::json>;

// One entry of the tool table. A new tool is one more entry: its name, what
// it does, its schemas and its handler; nothing else changes.
struct McpTool {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema;   // JSON Schema, type object; arguments are checked against it before the handler runs
  nlohmann::json output_schema;  // JSON Schema, type object; the handler's result holds to it
  std::function<ToolOutcome(const nlohmann::json& arguments)> handler;
};

class ToolTable {
 public:
  // An error when the name is taken or a schema is not of type object.
  Result<void> add(McpTool tool);
  const McpTool* find(std::string_view name) const;
  const std::vector<McpTool>& tools() const { return tools_; }

 private:
  std::vector<McpTool> tools_;
};

struct ServerIdentity {
  std::string name = "slowburn";
  std::string title = "slowburn";
  std::string version;
  std::string instructions;  // how to use the tools, for the model
};

// Protocol revisions spoken, newest first: 2025-11-25 and the earlier ones
// the official SDKs still speak.
std::span<const std::string_view> supported_protocol_versions();

// The client's version when it is supported, else the newest (the client
// then decides whether it can go on).
std::string negotiate_protocol_version(const nlohmann::json& requested);

// JSON-RPC 2.0 error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;

// One message (a line of the stdio transport) in; the answer out, nullopt
// for a notification or a response. Malformed JSON: a parse error (-32700)
// with id null; unknown methods -32601; bad params and unknown tools
// -32602. A tool that fails, or whose arguments do not hold to its
// inputSchema, answers a result with isError: true (2025-11-25: input
// validation errors are tool errors, so the model can correct its call).
std::optional<nlohmann::json> handle_message(std::string_view line, const ToolTable& tools,
                                             const ServerIdentity& server);

// The same for a message already parsed.
std::optional<nlohmann::json> handle_request(const nlohmann::json& message, const ToolTable& tools,
                                             const ServerIdentity& server);

}  // namespace slowburn
