#include "mcp/mcp_tools.h"

#include <fmt/format.h>
#include <unistd.h>

#include <map>
#include <tuple>

#include "analyze/analyze.h"
#include "core/clock.h"
#include "health/health_run.h"
#include "mcp/mcp_tools_internal.h"
#include "procfs/ranks.h"
#include "record/recording_reader.h"

namespace slowburn {

using nlohmann::json;

namespace mcp {

void SessionLines::add(const json& line) {
  std::string kind = line.value("kind", "");
  std::string event = line.value("event", "");
  if (kind == "finding")
    findings.push_back(line);
  else if (kind == "verdict")
    verdict = line;
  else if (kind == "window")
    windows.push_back(line);
  else if (kind == "hist")
    hists.push_back(line);
  else if (kind == "event")
    events.push_back(line);
  else if (kind == "node")
    nodes.push_back(line);
  else if (kind == "status" && event == "summary")
    summary = line;
  else if (kind == "status" && event == "probe")
    probes.push_back(line);
  else if (kind == "status" && event == "note")
    notes.push_back(line.value("message", ""));
  else if (kind == "status" && event == "communicator")
    communicators.push_back(line);
}

JsonSink SessionLines::sink(const std::string& host, int64_t wall_offset_ns) {
  return JsonSink([this](const json& line) { add(line); }, host, wall_offset_ns);
}

json probe_states(const std::vector<json>& probe_lines) {
  std::map<std::tuple<std::string, std::string, std::string>, json> grouped;
  for (const json& p : probe_lines) {
    auto key = std::make_tuple(p.value("probe", ""), p.value("state", ""), p.value("reason", ""));
    json& row = grouped[key];
    if (row.is_null())
      row = {
          {"probe", std::get<0>(key)}, {"state", std::get<1>(key)}, {"ranks", json::array()}, {"pids", json::array()}};
    if (!std::get<2>(key).empty()) row["reason"] = std::get<2>(key);
    if (p.contains("rank")) row["ranks"].push_back(p["rank"]);
    if (p.contains("pid") && p["pid"].is_number()) row["pids"].push_back(p["pid"]);
  }
  json rows = json::array();
  for (auto& [key, row] : grouped) rows.push_back(std::move(row));
  return rows;
}

json object_schema(json properties, std::vector<std::string> required) {
  json schema{{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) schema["required"] = required;
  return schema;
}

json array_of(json items) { return {{"type", "array"}, {"items", std::move(items)}}; }

// The objects `trace --json` prints as kind finding (docs/json-lines.md);
// only what every finding has is required.
json finding_schema() {
  return object_schema({{"type", {{"type", "string"}, {"enum", {"straggler", "hang", "mismatch", "failure"}}}},
                        {"rank", {{"type", "integer"}}},
                        {"pid", {{"type", "integer"}}},
                        {"summary", {{"type", "string"}}},
                        {"evidence", {{"type", "object"}}},
                        {"communicator", {{"type", {"object", "null"}}}},
                        {"likely_causes", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                        {"cost_ns", {{"type", "number"}}}},
                       {"type", "rank", "pid", "summary"});
}

json verdict_schema() {
  json s = object_schema({{"judged", {{"type", "boolean"}}},
                          {"reason", {{"type", {"string", "null"}}}},
                          {"instances", {{"type", "integer"}}},
                          {"windows_judged", {{"type", "integer"}}},
                          {"stragglers", array_of(finding_schema())},
                          {"hangs", array_of(finding_schema())},
                          {"failures", array_of(finding_schema())},
                          {"pending_hang", array_of({{"type", "object"}})},
                          {"episodes", array_of(finding_schema())},
                          {"withheld", array_of(finding_schema())}},
                         {"judged", "stragglers", "hangs", "episodes"});
  s["description"] =
      "The closing verdict line of `slowburn trace --json`: stragglers (findings that held), hangs (hang and mismatch "
      "findings), failures (ranks that ended by a signal, OOM kill or non-zero status, the first first), pending_hang "
      "(waits under --hang-s at the end), episodes (findings that did not hold), withheld (minor stragglers not named, "
      "with the reason: every rank waits for a CPU); judged false with a reason when too "
      "few aligned instances were seen";
  return s;
}

json event_schema() {
  return object_schema({{"type", {{"type", "string"}}},
                        {"ts", {{"type", "number"}}},
                        {"device", {{"type", {"string", "null"}}}},
                        {"role", {{"type", {"string", "null"}}}},
                        {"ranks", array_of({{"type", "integer"}})},
                        {"summary", {{"type", "string"}}}},
                       {"type", "summary"});
}

}  // namespace mcp

using mcp::array_of;
using mcp::object_schema;

McpTool ranks_tool(const McpToolContext& context) {
  McpTool tool;
  tool.name = "ranks";
  tool.title = "Rank processes on this node";
  tool.description =
      "The training-job rank processes on this node, found from their environment (OMPI_COMM_WORLD_*, PMIX_RANK, "
      "PMI_RANK, SLURM_PROCID, torchrun's RANK/LOCAL_RANK/WORLD_SIZE), as `slowburn ranks --json` gives them. Start "
      "here: the pids are what trace and stacks take.";
  tool.input_schema = object_schema(json::object());
  tool.input_schema["additionalProperties"] = false;
  tool.output_schema = object_schema({{"ranks", array_of(object_schema({{"pid", {{"type", "integer"}}},
                                                                        {"rank", {{"type", "integer"}}},
                                                                        {"local_rank", {{"type", {"integer", "null"}}}},
                                                                        {"world_size", {{"type", {"integer", "null"}}}},
                                                                        {"launcher", {{"type", "string"}}},
                                                                        {"job", {{"type", "string"}}},
                                                                        {"command", {{"type", "string"}}}},
                                                                       {"pid", "rank"}))},
                                      {"note", {{"type", "string"}}}},
                                     {"ranks"});
  tool.handler = [context](const json&) -> ToolOutcome {
    json ranks = json::array();
    for (const RankIdentity& r : discover_ranks(context.proc_root, getpid())) ranks.push_back(rank_json(r));
    json out{{"ranks", ranks}};
    if (ranks.empty())
      out["note"] =
          fmt::format("no rank processes found under {} (looked for {}){}", context.proc_root.string(),
                      rank_variable_names(), geteuid() != 0 ? "; not root: other users' processes are invisible" : "");
    return out;
  };
  return tool;
}

McpTool health_tool(const McpToolContext& context) {
  McpTool tool;
  tool.name = "health";
  tool.title = "Node health checklist";
  tool.description =
      "The node's passive telemetry checklist, as `slowburn health --json` gives it: one row per check and device "
      "(GPU Xids with ECC called out, PCIe links and AER, EDAC, machine checks, CPU throttling and frequency, NICs, "
      "the clock, kernel taint and log) with value, threshold, state (ok, warn, fail, or unavailable with the "
      "reason) and the ranks it concerns. Counters are read twice, interval_s apart, so a rising one is a trend. "
      "Needs no BPF.";
  tool.input_schema = object_schema(
      {{"interval_s",
        {{"type", "number"},
         {"minimum", 0},
         {"maximum", 10},
         {"default", 1},
         {"description", "Seconds between the two readings of the counters (0: one reading, no trends)"}}}});
  tool.input_schema["additionalProperties"] = false;
  tool.output_schema = object_schema(
      {{"checks",
        array_of(object_schema({{"check", {{"type", "string"}}},
                                {"state", {{"type", "string"}, {"enum", {"ok", "warn", "fail", "unavailable"}}}},
                                {"device", {{"type", "string"}}},
                                {"detail", {{"type", "string"}}},
                                {"ranks", array_of({{"type", "integer"}})}},
                               {"check", "state"}))},
       {"failed", {{"type", "boolean"}, {"description", "some check is in state fail (the CLI exits 4)"}}},
       {"summary", {{"type", "string"}}},
       {"sdc_activity", {{"type", {"string", "null"}}}}},
      {"checks", "failed", "summary"});
  tool.handler = [context](const json& args) -> ToolOutcome {
    HealthRunOptions options;
    options.sources.sysfs_root = context.sysfs_root;
    options.sources.proc_root = context.proc_root;
    options.sources.kmsg_file = context.kmsg_file;
    options.interval_s = args.value("interval_s", 1.0);
    auto checks = run_health_checklist(options);
    if (!checks) return checks.error();
    json rows = json::array();
    double ts = unix_now_s();
    for (const CheckRow& c : *checks) {
      json row = health_check_json(c);
      row["ts"] = ts;
      row["host"] = context.host;
      rows.push_back(std::move(row));
    }
    auto sdc = sdc_activity(*checks);
    return json{{"checks", std::move(rows)},
                {"failed", any_failed(*checks)},
                {"summary", health_summary(*checks)},
                {"sdc_activity", sdc ? json(*sdc) : json(nullptr)}};
  };
  return tool;
}

McpTool analyze_tool(const McpToolContext&) {
  McpTool tool;
  tool.name = "analyze";
  tool.title = "Analyze recordings";
  tool.description =
      "Merge the recordings of one job from many nodes (`slowburn trace --record`, *.sbr files or directories of "
      "them) and judge it as one job, as `slowburn analyze --json` does: each node's clock offset estimated from "
      "the collectives, then the same findings and verdict as trace, naming rank, node and communicator. Reads the "
      "recordings only.";
  tool.input_schema = object_schema(
      {{"paths",
        {{"type", "array"},
         {"items", {{"type", "string"}, {"minLength", 1}}},
         {"minItems", 1},
         {"maxItems", 256},
         {"description", "Recordings (.sbr) or directories of them; the first is the clock reference"}}},
       {"job", {{"type", "string"}, {"description", "The job to judge, when the recordings hold several"}}}},
      {"paths"});
  tool.input_schema["additionalProperties"] = false;
  tool.output_schema =
      object_schema({{"nodes", array_of(object_schema({{"host", {{"type", "string"}}},
                                                       {"reference", {{"type", "boolean"}}},
                                                       {"clock_offset_ns", {{"type", {"integer", "null"}}}},
                                                       {"clock_drift_ppm", {{"type", {"number", "null"}}}},
                                                       {"closed", {{"type", "boolean"}}}},
                                                      {"host"}))},
                     {"findings", array_of(mcp::finding_schema())},
                     {"verdict", mcp::verdict_schema()},
                     {"summary", {{"type", "object"}}}},
                    {"nodes", "findings", "verdict", "summary"});
  tool.handler = [](const json& args) -> ToolOutcome {
    AnalyzeOptions options;
    for (const json& p : args["paths"]) options.inputs.emplace_back(p.get<std::string>());
    if (args.contains("job")) options.job = args["job"].get<std::string>();
    // Times on the reference's (the first recording's) clock, as the CLI puts them.
    int64_t wall_offset = reference_wall_offset(options.inputs, options.job).value_or(0);
    mcp::SessionLines lines;
    JsonSink sink = lines.sink("", wall_offset);
    auto result = run_analyze(options, sink);
    if (!result) return result.error();
    return json{{"nodes", lines.nodes},
                {"findings", lines.findings},
                {"verdict", lines.verdict},
                {"summary", lines.summary},
                {"notes", lines.notes}};
  };
  return tool;
}

Result<ToolTable> slowburn_tools(const McpToolContext& context) {
  ToolTable table;
  for (McpTool (*make)(const McpToolContext&) :
       {check_tool, ranks_tool, trace_tool, stacks_tool, events_tool, health_tool, investigate_tool, analyze_tool})
    if (auto ok = table.add(make(context)); !ok) return ok.error();
  return table;
}

std::string slowburn_instructions() {
  return "slowburn names the straggler rank of a synchronised training job on this node (the rank that arrives last "
         "at collectives, not the ones that wait longest) and the hardware or host cause behind it. Every tool only "
         "reads the node (stacks stops each rank for milliseconds to read its registers). Start with ranks (which "
         "processes are ranks), then trace (a few seconds, at most 50, of the "
         "ranks' collective calls: findings, a verdict, a row per rank); stacks when the job seems stuck already "
         "(every rank's stack, the odd one named); events and health for the node's hardware, "
         "fabric and telemetry; investigate to walk the layers below a culprit (host, GPU, PCIe, fabric) to a failure "
         "graph; check when something cannot be seen; analyze for recordings made on many nodes with `slowburn "
         "trace --record`. One tool call runs at a time; trace, investigate and events block for their duration.";
}

}  // namespace slowburn
