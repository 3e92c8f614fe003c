// The tools slowburn mcp serves, each one entry of the table (name,
// description, schemas, handler), each only reading the node:
//   ranks    the rank processes on this node (`slowburn ranks --json`)
//   trace    a trace session of at most 50 s, in this process: findings,
//            the verdict and a row per rank (`slowburn trace --json`)
//   events   hardware and fabric device events seen in a short live watch
//   health   the node's checklist (`slowburn health --json`)
//   analyze  recordings merged and judged as one job (`slowburn analyze`)
//   check        can slowburn work here, what will it miss (`slowburn check --json`)
//   investigate  the layer-by-layer method: layers and failure graph (`slowburn investigate --json`)
// A new tool is one more function here and one more line in slowburn_tools().
#pragma once

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>

#include "core/error.h"
#include "mcp/mcp_server.h"

namespace slowburn {

struct McpToolContext {
  std::filesystem::path proc_root = "/proc";
  std::filesystem::path sysfs_root = "/sys";
  std::optional<std::filesystem::path> kmsg_file;  // health: a captured kernel log instead of /dev/kmsg
  std::string host;                                // what JSON objects name the node
  // Set by SIGINT/SIGTERM: a trace or a watch in progress ends early (and
  // still answers with what it saw); null: never.
  const std::atomic<bool>* stop = nullptr;
};

// The longest a tool call may watch or trace: one call at a time, and a
// client waiting on it. A trace answers a few seconds after its duration
// (attaching, the final verdict): 50 s keeps it inside the 60 s an SDK
// client waits for an answer by default.
constexpr int kMaxTraceSeconds = 50;
constexpr int kMaxWatchSeconds = 30;

McpTool ranks_tool(const McpToolContext& context);
McpTool trace_tool(const McpToolContext& context);
McpTool events_tool(const McpToolContext& context);
McpTool health_tool(const McpToolContext& context);
McpTool analyze_tool(const McpToolContext& context);
McpTool check_tool(const McpToolContext& context);        // mcp_investigate_tools.cpp
McpTool investigate_tool(const McpToolContext& context);  // mcp_investigate_tools.cpp
McpTool stacks_tool(const McpToolContext& context);       // mcp_stacks_tool.cpp

// The whole table, in the order tools/list gives it.
Result<ToolTable> slowburn_tools(const McpToolContext& context);

// How the model should use them (initialize's instructions).
std::string slowburn_instructions();

}  // namespace slowburn
