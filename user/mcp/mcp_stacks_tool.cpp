// The MCP tool `stacks`: `slowburn stacks --json` for an assistant, on a job
// that may be stuck already (a trace would see nothing of waits that began
// before it).
#include <unistd.h>

#include "engine/discover.h"
#include "mcp/mcp_tools.h"
#include "mcp/mcp_tools_internal.h"
#include "stacks/stacks_session.h"

namespace slowburn {

using mcp::array_of;
using mcp::object_schema;
using nlohmann::json;

McpTool stacks_tool(const McpToolContext& context) {
  McpTool tool;
  tool.name = "stacks";
  tool.title = "Every rank's stack, the odd one named";
  tool.description =
      "A snapshot of the job's ranks as `slowburn stacks --json` takes it: each rank's state, CPU share, system "
      "call and user stack (each process stopped briefly under ptrace to read it), sampled a few times; the "
      "collective each sits in; and a finding for the rank that holds the others when they all wait inside "
      "collectives (stopped, blocked outside, its own code, alone in another collective). Use it when a job seems "
      "stuck: it sees a hang that began before any trace.";
  tool.input_schema =
      object_schema({{"pids", {{"type", "array"}, {"items", {{"type", "integer"}, {"minimum", 1}}}}},
                     {"samples", {{"type", "integer"}, {"minimum", 2}, {"maximum", 10}, {"default", 3}}},
                     {"interval_s", {{"type", "number"}, {"minimum", 0.1}, {"maximum", 5}, {"default", 0.5}}}});
  tool.input_schema["additionalProperties"] = false;
  json stack = object_schema(
      {{"rank", {{"type", "integer"}}},
       {"pid", {{"type", "integer"}}},
       {"state", {{"type", "string"}}},
       {"collective", {{"type", {"string", "null"}}}},
       {"symbol", {{"type", {"string", "null"}}}},
       {"frames", array_of(object_schema({{"symbol", {{"type", "string"}}}, {"module", {{"type", "string"}}}}))}},
      {"rank", "pid", "state", "frames"});
  json finding = object_schema({{"type", {{"type", "string"}}},
                                {"rank", {{"type", "integer"}}},
                                {"pid", {{"type", "integer"}}},
                                {"summary", {{"type", "string"}}}},
                               {"type", "rank", "summary"});
  tool.output_schema = object_schema({{"stacks", array_of(stack)},
                                      {"findings", array_of(finding)},
                                      {"notes", array_of({{"type", "string"}})},
                                      {"summary", {{"type", "object"}}}},
                                     {"stacks", "findings", "summary"});
  tool.handler = [context](const json& args) -> ToolOutcome {
    // Stacks are read from live processes: never from a captured tree,
    // whose pids would name other processes of this host.
    if (context.proc_root != "/proc")
      return make_error("stacks reads live processes: it needs /proc, not {}", context.proc_root.string());
    std::vector<int32_t> pids;
    if (args.contains("pids"))
      for (const json& pid : args["pids"]) pids.push_back(pid.get<int32_t>());
    auto ranks = find_ranks(pids, context.proc_root);
    if (!ranks) return ranks.error();
    StacksOptions options;
    options.samples = args.value("samples", 3);
    options.interval_s = args.value("interval_s", 0.5);
    StacksSnapshot s = take_stacks(*ranks, options);
    json out{{"stacks", stack_lines(s)}, {"findings", json::array()}, {"notes", s.notes}, {"summary", summary_json(s)}};
    for (const StuckFinding& f : s.stuck) out["findings"].push_back(finding_json(f));
    return out;
  };
  return tool;
}

}  // namespace slowburn
