// The two tools that say what slowburn can see and what it found, layer by
// layer: check (`slowburn check --json`) and investigate (`slowburn
// investigate --json`: the layers and the failure graph).
#include <fmt/format.h>

#include "check/checks.h"
#include "core/clock.h"
#include "investigate/investigate_run.h"
#include "investigate/investigation_output.h"
#include "mcp/mcp_tools.h"
#include "mcp/mcp_tools_internal.h"

namespace slowburn {

using mcp::array_of;
using mcp::object_schema;
using nlohmann::json;

McpTool check_tool(const McpToolContext& context) {
  McpTool tool;
  tool.name = "check";
  tool.title = "Can slowburn work here";
  tool.description =
      "Whether slowburn can trace on this node and what it will miss, as `slowburn check --json` gives it: one row "
      "per check (kernel, BTF, capabilities, lockdown, tracefs, a real load and attach of slowburn's programs, each "
      "tracepoint it uses, kprobes, the probes in each rank, the NVIDIA Xid path, RDMA, the clock) with ok, "
      "required, what was found and a fix for each that is not ok. Read-only; loads and detaches its own test "
      "programs on this process.";
  tool.input_schema =
      object_schema({{"pids",
                      {{"type", "array"},
                       {"items", {{"type", "integer"}, {"minimum", 1}}},
                       {"maxItems", 4096},
                       {"description", "Check the probes in these processes (default: every rank found)"}}}});
  tool.input_schema["additionalProperties"] = false;
  tool.output_schema = object_schema(
      {{"checks", array_of(object_schema({{"check", {{"type", "string"}}},
                                          {"ok", {{"type", "boolean"}}},
                                          {"required", {{"type", "boolean"}}},
                                          {"detail", {{"type", "string"}}},
                                          {"fix", {{"type", "string"}}}},
                                         {"check", "ok", "required", "detail"}))},
       {"can_trace", {{"type", "boolean"}, {"description", "every required check is ok (the CLI exits 0)"}}},
       {"summary", {{"type", "string"}}}},
      {"checks", "can_trace", "summary"});
  tool.handler = [context](const json& args) -> ToolOutcome {
    CheckSources sources;
    sources.sysfs_root = context.sysfs_root;
    sources.proc_root = context.proc_root;
    if (args.contains("pids"))
      for (const json& pid : args["pids"]) sources.pids.push_back(pid.get<int32_t>());
    std::vector<CheckRow> rows = evaluate_checks(read_check_snapshot(sources));
    json checks = json::array();
    for (const CheckRow& r : rows) checks.push_back(check_row_json(r));
    return json{
        {"checks", std::move(checks)}, {"can_trace", !any_required_failed(rows)}, {"summary", check_summary(rows)}};
  };
  return tool;
}

McpTool investigate_tool(const McpToolContext& context) {
  McpTool tool;
  tool.name = "investigate";
  tool.title = "Find the cause, layer by layer";
  tool.description = fmt::format(
      "Run slowburn's layer-by-layer method, as `slowburn investigate --json`: trace the ranks for duration_s "
      "seconds (at most {}) with every source on, or judge recordings (from: paths of `slowburn trace --record` "
      "files or directories); then the collective layer (straggler or hang, communicator, cost) and each layer "
      "below the culprit (host, gpu, pcie, fabric) with what was looked at, what was found, ruled_in / ruled_out / "
      "not_checked. Returns the layers, the failure graph (nodes, edges with evidence and confidence, the most "
      "likely path first), its conclusion, the findings and the verdict.",
      kMaxTraceSeconds);
  tool.input_schema = object_schema(
      {{"duration_s",
        {{"type", "number"},
         {"minimum", 0.5},
         {"maximum", kMaxTraceSeconds},
         {"default", 10},
         {"description",
          fmt::format("Seconds to trace (0.5 to {}; default 10); ignored with from", kMaxTraceSeconds)}}},
       {"pids",
        {{"type", "array"},
         {"items", {{"type", "integer"}, {"minimum", 1}}},
         {"maxItems", 4096},
         {"description", "Only these rank processes (default: every rank on the node)"}}},
       {"probes",
        {{"type", "array"},
         {"items", {{"type", "string"}, {"minLength", 1}}},
         {"maxItems", 64},
         {"description", "Probes to attach, globs allowed (default: the whole catalog)"}}},
       {"from",
        {{"type", "array"},
         {"items", {{"type", "string"}, {"minLength", 1}}},
         {"maxItems", 4096},
         {"description", "Recordings (.sbr files or directories of them) to investigate instead of tracing"}}}});
  tool.input_schema["additionalProperties"] = false;
  json layer_schema =
      object_schema({{"layer", {{"type", "string"}}},
                     {"state", {{"type", "string"}, {"enum", {"ruled_in", "ruled_out", "not_checked"}}}},
                     {"looked_at", array_of({{"type", "string"}})},
                     {"evidence", array_of({{"type", "string"}})}},
                    {"layer", "state", "evidence"});
  json graph_schema = object_schema(
      {{"nodes", array_of(object_schema({{"id", {{"type", "string"}}},
                                         {"kind", {{"type", "string"}}},
                                         {"layer", {{"type", "string"}}},
                                         {"label", {{"type", "string"}}}},
                                        {"id", "kind", "label"}))},
       {"edges", array_of(object_schema({{"from", {{"type", "string"}}},
                                         {"to", {{"type", "string"}}},
                                         {"evidence", {{"type", "string"}}},
                                         {"confidence", {{"type", "number"}, {"minimum", 0}, {"maximum", 1}}}},
                                        {"from", "to", "confidence"}))},
       {"conclusion", {{"type", "string"}}}},
      {"nodes", "edges", "conclusion"});
  tool.output_schema = object_schema({{"layers", array_of(layer_schema)},
                                      {"graph", graph_schema},
                                      {"findings", array_of(mcp::finding_schema())},
                                      {"verdict", mcp::verdict_schema()}},
                                     {"layers", "graph", "verdict"});
  tool.handler = [context](const json& args) -> ToolOutcome {
    static const std::atomic<bool> never{false};
    mcp::SessionLines lines;
    JsonSink sink = lines.sink(context.host, wall_offset_ns());
    Result<InvestigationInput> input = make_error("unset");
    if (args.contains("from")) {
      AnalyzeOptions options;
      for (const json& path : args["from"]) options.inputs.emplace_back(path.get<std::string>());
      input = gather_recorded(options, &sink);
    } else {
      input = gather_live(mcp::trace_options(args, context, 10.0), &sink, context.stop ? *context.stop : never);
    }
    if (!input) return input.error();
    Investigation inv = investigate(*input);
    json layers = json::array();
    for (const Layer& l : inv.layers) {
      json j = layer_json(l);
      j.erase("kind");
      layers.push_back(std::move(j));
    }
    json graph = graph_json(inv);
    graph.erase("kind");
    return json{{"layers", std::move(layers)},
                {"graph", std::move(graph)},
                {"findings", lines.findings},
                {"verdict", lines.verdict}};
  };
  return tool;
}

}  // namespace slowburn
