// The two tools that watch the node live: trace (a trace session in this
// process, as `slowburn trace --json`) and events (the hardware and fabric
// monitor, as `slowburn xid/aer/pcie/fabric --json`).
#include <fmt/format.h>
#include <unistd.h>

#include <map>
#include <set>

#include "core/clock.h"
#include "loader/privileges.h"
#include "mcp/mcp_tools.h"
#include "mcp/mcp_tools_internal.h"
#include "procfs/ranks.h"
#include "sources/hw_monitor.h"
#include "trace/trace_session.h"

namespace slowburn {

using mcp::array_of;
using mcp::object_schema;
using nlohmann::json;

namespace {

const std::atomic<bool>& stop_flag(const McpToolContext& context) {
  static const std::atomic<bool> never{false};
  return context.stop ? *context.stop : never;
}

// One row per traced rank: its calls and mean wait (from the histograms),
// its windows and largest blame share (from the windows), and whether the
// verdict names it.
json rank_rows(const std::vector<RankIdentity>& ranks, const mcp::SessionLines& lines) {
  std::set<int64_t> stragglers, hangs, failed;
  for (const json& f : lines.verdict.value("stragglers", json::array())) stragglers.insert(f.value("pid", 0));
  for (const json& f : lines.verdict.value("hangs", json::array())) hangs.insert(f.value("pid", 0));
  for (const json& f : lines.verdict.value("failures", json::array())) failed.insert(f.value("pid", 0));
  struct Tally {
    uint64_t calls = 0;
    double wait_ns = 0;
    json probes = json::object();
    uint64_t windows = 0, windows_flagged = 0;
    double max_blame_share = 0;
  };
  std::map<int64_t, Tally> by_pid;
  for (const json& h : lines.hists) {
    // NCCL IB connections' histograms ("nccl.ib send #0") are requests, not collective calls.
    if (!h.contains("rank") || h.value("probe", "").starts_with("nccl.ib ")) continue;
    Tally& t = by_pid[h.value("pid", 0)];
    uint64_t count = h.value("count", uint64_t{0});
    t.calls += count;
    t.wait_ns += h.value("total_ns", 0.0);
    std::string probe = h.value("probe", "");
    t.probes[probe] = t.probes.value(probe, uint64_t{0}) + count;
  }
  for (const json& w : lines.windows) {
    Tally& t = by_pid[w.value("pid", 0)];
    ++t.windows;
    t.windows_flagged += w.value("flagged", false) ? 1 : 0;
    t.max_blame_share = std::max(t.max_blame_share, w.value("blame_share", 0.0));
  }
  json rows = json::array();
  for (const RankIdentity& r : ranks) {
    const Tally& t = by_pid[r.pid];
    rows.push_back({{"rank", r.rank},
                    {"pid", r.pid},
                    {"local_rank", r.local_rank ? json(*r.local_rank) : json(nullptr)},
                    {"job", r.job},
                    {"calls", t.calls},
                    {"calls_by_probe", t.probes},
                    {"mean_wait_us", t.calls ? json(t.wait_ns / static_cast<double>(t.calls) / 1e3) : json(nullptr)},
                    {"windows", t.windows},
                    {"windows_flagged", t.windows_flagged},
                    {"max_blame_share", t.max_blame_share},
                    {"straggler", stragglers.contains(r.pid)},
                    {"hang", hangs.contains(r.pid)},
                    {"failed", failed.contains(r.pid)}});
  }
  return rows;
}

json probe_state_schema() {
  return array_of(object_schema({{"probe", {{"type", "string"}}},
                                 {"state", {{"type", "string"}}},
                                 {"ranks", array_of({{"type", "integer"}})},
                                 {"reason", {{"type", "string"}}}},
                                {"probe", "state"}));
}

}  // namespace

TraceOptions mcp::trace_options(const json& args, const McpToolContext& context, double default_duration_s) {
  TraceOptions options;
  options.duration_s = args.value("duration_s", default_duration_s);
  if (args.contains("pids"))
    for (const json& pid : args["pids"]) options.pids.push_back(pid.get<int32_t>());
  if (args.contains("probes"))
    for (const json& probe : args["probes"]) options.probe_patterns.push_back(probe.get<std::string>());
  options.node.roots.proc_root = context.proc_root;
  options.node.roots.sysfs_root = context.sysfs_root;
  return options;
}

McpTool trace_tool(const McpToolContext& context) {
  McpTool tool;
  tool.name = "trace";
  tool.title = "Trace the ranks and name the straggler";
  tool.description = fmt::format(
      "Trace the collective calls (MPI, NCCL, gloo) of the rank processes on this node for duration_s seconds "
      "(at most {}), with eBPF uprobes, and judge them as `slowburn trace --json` does: the straggler is the rank "
      "that arrives last and carries the blame, not the ones that wait longest. Returns the findings, the closing "
      "verdict (stragglers that held, hangs, episodes that did not hold), one row per rank (calls, mean wait, "
      "largest blame share, named or not), the hardware/host events joined as likely causes, the probes' states "
      "and the loss counters. Blocks for the duration; needs root.",
      kMaxTraceSeconds);
  tool.input_schema = object_schema(
      {{"duration_s",
        {{"type", "number"},
         {"minimum", 0.5},
         {"maximum", kMaxTraceSeconds},
         {"default", 5},
         {"description", fmt::format("Seconds to trace (0.5 to {}; default 5)", kMaxTraceSeconds)}}},
       {"pids",
        {{"type", "array"},
         {"items", {{"type", "integer"}, {"minimum", 1}}},
         {"maxItems", 4096},
         {"description", "Trace only these rank processes (default: every rank on the node; see the ranks tool)"}}},
       {"probes",
        {{"type", "array"},
         {"items", {{"type", "string"}, {"minLength", 1}}},
         {"maxItems", 64},
         {"description", "Probes to attach, globs allowed, e.g. [\"mpi.*\"] (default: the whole catalog)"}}}});
  tool.input_schema["additionalProperties"] = false;
  tool.output_schema = object_schema(
      {{"traced_seconds", {{"type", "number"}}},
       {"findings", array_of(mcp::finding_schema())},
       {"verdict", mcp::verdict_schema()},
       {"ranks", array_of(object_schema({{"rank", {{"type", "integer"}}},
                                         {"pid", {{"type", "integer"}}},
                                         {"calls", {{"type", "integer"}}},
                                         {"mean_wait_us", {{"type", {"number", "null"}}}},
                                         {"max_blame_share", {{"type", "number"}}},
                                         {"straggler", {{"type", "boolean"}}},
                                         {"hang", {{"type", "boolean"}}},
                                         {"failed", {{"type", "boolean"}}}},
                                        {"rank", "pid", "calls", "straggler", "hang"}))},
       {"events", array_of(mcp::event_schema())},
       {"probes", probe_state_schema()},
       {"summary", {{"type", "object"}, {"description", "The loss and alignment counters (trace's summary line)"}}},
       {"notes", array_of({{"type", "string"}})}},
      {"traced_seconds", "findings", "verdict", "ranks", "summary"});
  tool.handler = [context](const json& args) -> ToolOutcome {
    TraceOptions options = mcp::trace_options(args, context, 5.0);
    mcp::SessionLines lines;
    JsonSink sink = lines.sink(context.host, wall_offset_ns());
    auto result = run_trace(options, sink, stop_flag(context));
    if (!result) return result.error();
    return json{{"traced_seconds", result->summary.traced_seconds},
                {"findings", lines.findings},
                {"verdict", lines.verdict},
                {"ranks", rank_rows(result->ranks, lines)},
                {"events", lines.events},
                {"probes", mcp::probe_states(lines.probes)},
                {"summary", lines.summary},
                {"notes", lines.notes}};
  };
  return tool;
}

McpTool events_tool(const McpToolContext& context) {
  McpTool tool;
  tool.name = "events";
  tool.title = "Hardware and fabric events";
  tool.description = fmt::format(
      "Watch this node's hardware and fabric signals for duration_s seconds (at most {}) and return the device "
      "events seen, joined to the ranks behind each device, as `slowburn trace --json` prints them (kind event): "
      "NVIDIA Xid/SXid, PCIe AER errors, PCIe links downtrained or down, hotplug, and on RDMA NICs PFC pause "
      "storms, CNP surges, retransmissions, link flaps and errors. The first sysfs reading reports links already "
      "degraded. Each source's state (attached, or unavailable with the reason) comes with them.",
      kMaxWatchSeconds);
  tool.input_schema = object_schema({{"duration_s",
                                      {{"type", "number"},
                                       {"minimum", 0},
                                       {"maximum", kMaxWatchSeconds},
                                       {"default", 2},
                                       {"description", fmt::format("Seconds to watch (0 to {}; default 2; 0: one "
                                                                   "reading of the sysfs sources)",
                                                                   kMaxWatchSeconds)}}}});
  tool.input_schema["additionalProperties"] = false;
  tool.output_schema = object_schema(
      {{"duration_s", {{"type", "number"}}},
       {"events", array_of(mcp::event_schema())},
       {"sources",
        array_of(object_schema(
            {{"source", {{"type", "string"}}}, {"state", {{"type", "string"}}}, {"detail", {{"type", "string"}}}},
            {"source", "state"}))},
       {"notes", array_of({{"type", "string"}})}},
      {"duration_s", "events", "sources"});
  tool.handler = [context](const json& args) -> ToolOutcome {
    double duration_s = args.value("duration_s", 2.0);
    json notes = json::array();
    HwMonitorOptions options;
    options.fabric = true;
    options.sysfs_root = context.sysfs_root;
    options.proc_root = context.proc_root;
    options.kernel_sources = context.sysfs_root == "/sys" && context.proc_root == "/proc";
    if (auto privileged = check_tracing_privileges(); !privileged && options.kernel_sources) {
      options.kernel_sources = false;
      notes.push_back("kernel sources (Xid, AER and link tracepoints) off: " + privileged.error().message);
    }
    auto topology = std::make_shared<Topology>(Topology::read(context.sysfs_root, context.proc_root));
    topology->assign_ranks(discover_ranks(context.proc_root, getpid()));
    auto monitor = HwMonitor::start(options, topology);
    if (!monitor) return monitor.error();
    mcp::SessionLines lines;
    JsonSink sink = lines.sink(context.host, wall_offset_ns());
    const auto& stop = stop_flag(context);
    uint64_t start = monotonic_ns();
    uint64_t end = start + static_cast<uint64_t>(duration_s * 1e9);
    for (;;) {
      uint64_t now = monotonic_ns();
      bool last = stop.load() || now >= end;
      auto batch = (*monitor)->poll(last ? 0 : 100, now);
      if (!batch) return batch.error();
      for (const DeviceEvent& e : *batch) sink.device_event(e);
      if (last) break;
    }
    for (const std::string& note : (*monitor)->take_notes()) notes.push_back(note);
    json sources = json::array();
    for (const ProbeStatus& s : (*monitor)->statuses())
      sources.push_back({{"source", s.probe}, {"state", probe_state_name(s.state)}, {"detail", s.detail}});
    return json{{"duration_s", static_cast<double>(monotonic_ns() - start) / 1e9},
                {"events", lines.events},
                {"sources", std::move(sources)},
                {"notes", std::move(notes)}};
  };
  return tool;
}

}  // namespace slowburn
