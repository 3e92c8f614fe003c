// libFuzzer target for slowburn mcp's protocol (mcp/mcp_stdio.h,
// mcp_server.h, json_schema.h): the input is what a client writes on
// stdin, any number of lines, answered by serve_lines against a tool table
// whose schemas use every keyword json_schema.h checks. No crash, no hang,
// no uncaught exception (ASan and UBSan, `make fuzz`); every answer is one
// line of JSON-RPC 2.0 with a result or an error.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "mcp/mcp_server.h"
#include "mcp/mcp_stdio.h"

using namespace slowburn;
using nlohmann::json;

namespace {

const ToolTable& tool_table() {
  static const ToolTable table = [] {
    ToolTable tools;
    McpTool echo;
    echo.name = "echo";
    echo.title = "echo";
    echo.description = "returns its arguments; fails when asked to";
    echo.input_schema = json::parse(R"({
      "type": "object", "additionalProperties": false, "required": ["pid"],
      "properties": {
        "pid": {"type": "integer", "minimum": 1, "maximum": 4194304},
        "seconds": {"type": ["number", "null"], "minimum": 0.1, "maximum": 50},
        "probes": {"type": "array", "minItems": 1, "maxItems": 8, "items": {"type": "string", "minLength": 1}},
        "mode": {"type": "string", "enum": ["trace", "probe"]},
        "fail": {"type": "boolean"},
        "nested": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
      }})");
    echo.output_schema = json::parse(R"({"type": "object"})");
    echo.handler = [](const json& arguments) -> ToolOutcome {
      if (arguments.value("fail", false)) return make_error("asked to fail");
      if (arguments.contains("mode") && arguments["mode"] == "probe") throw std::runtime_error("a tool's bug");
      return arguments;
    };
    if (!tools.add(std::move(echo))) std::abort();
    return tools;
  }();
  return table;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::cerr.rdbuf(nullptr);  // serve_lines logs a line per request: not the fuzzer's output
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::atomic<bool> stop{false};
  ServerIdentity server;
  server.version = "fuzz";
  auto write = [](const std::string& line) {
    if (line.find('\n') != std::string::npos) std::abort();  // one message a line
    json answer = json::parse(line, nullptr, false);
    if (answer.is_discarded() || !answer.is_object() || answer.value("jsonrpc", "") != "2.0") std::abort();
    if (answer.contains("result") == answer.contains("error")) std::abort();
    return true;
  };
  if (serve_lines(in, write, tool_table(), server, stop) != 0) std::abort();
  return 0;
}
