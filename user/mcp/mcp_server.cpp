#include "mcp/mcp_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "mcp/json_schema.h"

namespace slowburn {

using nlohmann::json;

namespace {

constexpr std::array<std::string_view, 4> kProtocolVersions = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

json error_response(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json result_response(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

// A text item carries the same JSON as structuredContent, for clients that
// read only content (the spec's advice for structured results).
json tool_result(const json& structured) {
  return {
      {"content",
       json::array({{{"type", "text"}, {"text", structured.dump(-1, ' ', false, json::error_handler_t::replace)}}})},
      {"structuredContent", structured},
      {"isError", false}};
}

json tool_error(const std::string& message) {
  return {{"content", json::array({{{"type", "text"}, {"text", message}}})}, {"isError", true}};
}

json initialize_result(const json& params, const ServerIdentity& server) {
  json requested = params.is_object() && params.contains("protocolVersion") ? params["protocolVersion"] : json();
  json result{{"protocolVersion", negotiate_protocol_version(requested)},
              {"capabilities", {{"tools", {{"listChanged", false}}}}},
              {"serverInfo", {{"name", server.name}, {"title", server.title}, {"version", server.version}}}};
  if (!server.instructions.empty()) result["instructions"] = server.instructions;
  return result;
}

json tool_list(const ToolTable& tools) {
  json list = json::array();
  for (const McpTool& t : tools.tools())
    list.push_back(
        {{"name", t.name},
         {"title", t.title},
         {"description", t.description},
         {"inputSchema", t.input_schema},
         {"outputSchema", t.output_schema},
         // Every tool only reads the node: it changes nothing and talks to nothing outside it.
         {"annotations",
          {{"title", t.title}, {"readOnlyHint", true}, {"destructiveHint", false}, {"openWorldHint", false}}}});
  return list;
}

json call_tool(const json& id, const json& params, const ToolTable& tools) {
  if (!params.is_object() || !params.contains("name") || !params["name"].is_string())
    return error_response(id, kInvalidParams, "tools/call needs params.name, the tool's name (see tools/list)");
  std::string name = params["name"].get<std::string>();
  json arguments = params.value("arguments", json::object());
  if (arguments.is_null()) arguments = json::object();
  if (!arguments.is_object())
    return error_response(id, kInvalidParams,
                          fmt::format("tools/call: arguments must be an object, got {}", arguments.type_name()));
  const McpTool* tool = tools.find(name);
  if (!tool) {
    std::string known;
    for (const McpTool& t : tools.tools()) known += (known.empty() ? "" : ", ") + t.name;
    return error_response(id, kInvalidParams, fmt::format("Unknown tool: {} (tools: {})", name, known));
  }
  if (auto bad = schema_violation(tool->input_schema, arguments))
    return result_response(id, tool_error(fmt::format("{}: bad arguments: {}", name, *bad)));
  try {
    ToolOutcome outcome = tool->handler(arguments);
    if (!outcome) return result_response(id, tool_error(fmt::format("{}: {}", name, outcome.error().message)));
    return result_response(id, tool_result(*outcome));
  } catch (const std::exception& e) {
    // A tool never takes the server down; this is a bug in it.
    return result_response(
        id,
        tool_error(fmt::format("{}: failed unexpectedly ({}); the server goes on; please report it", name, e.what())));
  }
}

json dispatch(const json& id, const std::string& method, const json& params, const ToolTable& tools,
              const ServerIdentity& server) {
  if (method == "initialize") {
    if (!params.is_object() || !params.contains("protocolVersion") || !params["protocolVersion"].is_string())
      return error_response(id, kInvalidParams, "initialize needs params.protocolVersion (e.g. \"2025-11-25\")");
    return result_response(id, initialize_result(params, server));
  }
  if (method == "ping") return result_response(id, json::object());
  if (method == "tools/list") return result_response(id, {{"tools", tool_list(tools)}});
  if (method == "tools/call") return call_tool(id, params, tools);
  if (method == "server/discover") {
    // Stateless (2026-07-28 draft): what initialize says, and the tools, without a session.
    json result = initialize_result(params, server);
    result["tools"] = tool_list(tools);
    return result_response(id, std::move(result));
  }
  return error_response(id, kMethodNotFound,
                        fmt::format("Method not found: {} (this server answers initialize, ping, tools/list, "
                                    "tools/call, server/discover)",
                                    method));
}

}  // namespace

Result<void> ToolTable::add(McpTool tool) {
  if (find(tool.name)) return make_error("a tool named '{}' is already registered", tool.name);
  for (const json* schema : {&tool.input_schema, &tool.output_schema})
    if (!schema->is_object() || schema->value("type", "") != "object")
      return make_error("tool '{}': its inputSchema and outputSchema must be JSON Schemas of type object", tool.name);
  tools_.push_back(std::move(tool));
  return {};
}

const McpTool* ToolTable::find(std::string_view name) const {
  auto it = std::find_if(tools_.begin(), tools_.end(), [&](const McpTool& t) { return t.name == name; });
  return it == tools_.end() ? nullptr : &*it;
}

std::span<const std::string_view> supported_protocol_versions() { return kProtocolVersions; }

std::string negotiate_protocol_version(const json& requested) {
  if (requested.is_string()) {
    auto version = requested.get<std::string>();
    for (std::string_view v : kProtocolVersions)
      if (v == version) return version;
  }
  return std::string(kProtocolVersions.front());
}

std::optional<json> handle_request(const json& message, const ToolTable& tools, const ServerIdentity& server) {
  if (!message.is_object())
    return error_response(nullptr, kInvalidRequest,
                          message.is_array() ? "Invalid Request: batches are not supported; send one message a line"
                                             : "Invalid Request: a message is a JSON object");
  bool has_id = message.contains("id");
  json id = has_id ? message["id"] : json(nullptr);
  bool id_ok = id.is_string() || id.is_number_integer();
  if (!message.contains("method")) {
    // A response (to a request this server never sends) gets no answer.
    if (message.contains("result") || message.contains("error")) return std::nullopt;
    return error_response(id_ok ? id : json(nullptr), kInvalidRequest, "Invalid Request: no method");
  }
  if (!message.contains("jsonrpc") || message["jsonrpc"] != "2.0")
    return has_id ? std::optional<json>(error_response(id_ok ? id : json(nullptr), kInvalidRequest,
                                                       "Invalid Request: jsonrpc must be \"2.0\""))
                  : std::nullopt;
  if (!message["method"].is_string())
    return has_id ? std::optional<json>(error_response(id_ok ? id : json(nullptr), kInvalidRequest,
                                                       "Invalid Request: method must be a string"))
                  : std::nullopt;
  // A notification (notifications/initialized, notifications/cancelled, ...) is never answered.
  if (!has_id) return std::nullopt;
  if (!id_ok) return error_response(nullptr, kInvalidRequest, "Invalid Request: id must be a string or an integer");
  json params = message.contains("params") ? message["params"] : json::object();
  if (!params.is_object())
    return error_response(id, kInvalidParams, fmt::format("params must be an object, got {}", params.type_name()));
  return dispatch(id, message["method"].get<std::string>(), params, tools, server);
}

std::optional<json> handle_message(std::string_view line, const ToolTable& tools, const ServerIdentity& server) {
  json message = json::parse(line.begin(), line.end(), nullptr, false);
  if (message.is_discarded())
    return error_response(nullptr, kParseError,
                          "Parse error: the line is not valid JSON (one JSON-RPC message a line)");
  try {
    return handle_request(message, tools, server);
  } catch (const std::exception& e) {
    json id = message.is_object() && message.contains("id") ? message["id"] : json(nullptr);
    return error_response(id, kInternalError, fmt::format("Internal error: {}", e.what()));
  }
}

}  // namespace slowburn
