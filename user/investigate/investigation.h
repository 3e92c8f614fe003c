// The seed's layer-by-layer method, as data: from the collective layer (who
// is the straggler or the hang, what it cost) down through the layers below
// the culprit (host, GPU, PCIe, NIC and fabric), each looked at, ruled in
// or out with its evidence, ending in a failure graph: symptom -> mechanism
// -> candidate causes, and the layers ruled out, each edge with its
// evidence and a confidence, the most likely path first. Pure: what a
// session saw (its verdict, its events, the state of each source) in, the
// investigation out; `slowburn investigate` gathers the input (live or from
// recordings) and prints it (investigate/investigation_output.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "detect/causes.h"
#include "detect/report.h"
#include "events/device_event.h"
#include "probes/probe_status.h"

namespace slowburn {

enum class LayerState { ruled_in, ruled_out, not_checked };
std::string_view layer_state_name(LayerState state);

struct Layer {
  std::string name;  // collective, host, gpu, pcie, fabric
  LayerState state = LayerState::not_checked;
  std::vector<std::string> looked_at;  // the sources read, as they reported themselves
  std::vector<std::string> evidence;   // what was found, or why nothing was / could not be
};

struct GraphNode {
  std::string id;    // "symptom", "rank3", "cause1", "layer.host"
  std::string kind;  // symptom, mechanism, cause, risk, ruled_out, checked
  std::string layer;
  std::string label;
};

struct GraphEdge {
  std::string from, to;
  std::string evidence;
  double confidence = 0;  // 0..1: how strongly the evidence supports the step
};

// Nodes and edges in the order of the most likely path first.
struct FailureGraph {
  std::vector<GraphNode> nodes;
  std::vector<GraphEdge> edges;
};

struct Investigation {
  std::vector<Layer> layers;  // collective first, then down the stack
  FailureGraph graph;
  std::string conclusion;  // one line: the most likely path, or what was checked and found clean
};

struct InvestigationInput {
  SessionVerdict verdict;
  double traced_s = 0;
  std::vector<DeviceEvent> events;   // every hardware, fabric and host event of the session
  std::vector<ProbeStatus> sources;  // the node-wide sources (pid 0): nvidia.xid, pcie.link, host.sched, ...
  ConcernsCulprit concerns = event_names_rank;
  // The devices each culprit process uses, as people name them ("GPU 0 ...
  // (0000:03:00.0)"), by pid; empty when the topology showed none.
  std::map<int32_t, std::vector<std::string>> devices_of;
};

// The layer an event or a source belongs to ("host", "gpu", "pcie", "fabric").
std::string_view layer_of_event(std::string_view type);
std::string_view layer_of_source(std::string_view source);

Investigation investigate(const InvestigationInput& input);

}  // namespace slowburn
