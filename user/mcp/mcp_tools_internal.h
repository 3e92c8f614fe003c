// What the tools share: the lines of a session kept as JSON objects (the
// same objects `--json` prints), and the schema pieces they declare.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mcp/mcp_tools.h"
#include "sinks/json_sink.h"
#include "trace/trace_session.h"

namespace slowburn::mcp {

// A session's JSON lines by kind, from a JsonSink that hands them over.
struct SessionLines {
  std::vector<nlohmann::json> findings, windows, hists, events, probes, notes, nodes, communicators;
  nlohmann::json summary = nlohmann::json::object();
  nlohmann::json verdict = nlohmann::json::object();

  void add(const nlohmann::json& line);
  // A sink filling this; it must not outlive it.
  JsonSink sink(const std::string& host, int64_t wall_offset_ns);
};

// The probes' states, one object per (probe, state, reason) with the ranks
// it holds for: what a person reads to see why nothing was traced.
nlohmann::json probe_states(const std::vector<nlohmann::json>& probe_lines);

// A trace session's options from a tool's arguments (duration_s, pids,
// probes, already checked against its inputSchema) and the server's roots.
TraceOptions trace_options(const nlohmann::json& args, const McpToolContext& context, double default_duration_s);

// Schema pieces.
nlohmann::json object_schema(nlohmann::json properties, std::vector<std::string> required = {});
nlohmann::json array_of(nlohmann::json items);
nlohmann::json finding_schema();
nlohmann::json verdict_schema();
nlohmann::json event_schema();

}  // namespace slowburn::mcp
