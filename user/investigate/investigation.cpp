#include "investigate/investigation.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/strings.h"

namespace slowburn {

namespace {

constexpr std::string_view kLayersBelow[] = {"host", "gpu", "pcie", "fabric"};

// What each layer below the collective one means, for evidence lines.
std::string_view layer_words(std::string_view layer) {
  if (layer == "host") return "CPU time, run queue, cgroup throttling, memory and I/O";
  if (layer == "gpu") return "GPU Xid errors";
  if (layer == "pcie") return "PCIe links and AER errors";
  return "NIC counters, QP errors and IB connections";
}

// How strongly an event supports being the cause: causes.h's rank (0 the
// strongest) as a confidence.
double confidence_of(int cause_rank) {
  static constexpr double by_rank[] = {0.9, 0.85, 0.8, 0.6, 0.4};
  return cause_rank >= 0 && cause_rank < 5 ? by_rank[cause_rank] : 0.2;
}

std::string rank_words(const Finding& f) { return fmt::format("rank {} (pid {})", f.culprit.rank, f.culprit.pid); }

// The symptom the whole job shows: what the culprits cost it.
std::string symptom_label(const SessionVerdict& v, double traced_s) {
  std::vector<std::string> parts;
  if (!v.failures.empty())
    parts.push_back(fmt::format("failure: rank {} ended first, {} rank(s) after it", v.failures.front().culprit.rank,
                                v.failures.front().followed_by.size()));
  for (const Finding& f : v.hangs) {
    if (f.type == "mismatch")
      parts.push_back(
          fmt::format("mismatch: rank {} in {} where its peers wait in another collective", f.culprit.rank, f.probe));
    else
      parts.push_back(
          fmt::format("hang: {} rank(s) wait in {} for rank {}", f.waiting_ranks.size(), f.probe, f.culprit.rank));
  }
  for (const Finding& f : v.stragglers)
    parts.push_back(fmt::format("job slowed: lost {:.2f} s ({:.1f}% of {:.0f} s traced) waiting for rank {}",
                                static_cast<double>(f.cost_ns) / 1e9, f.cost_share * 100, traced_s, f.culprit.rank));
  return join(parts, "; ");
}

std::string mechanism_label(const Finding& f) {
  std::string comm = f.comm ? f.comm->label : std::string("its job");
  if (f.type == "hang") {
    if (f.process && f.process->does_not_run())
      return fmt::format("{} stopped the job on {}: {}", rank_words(f), comm, describe_process(*f.process));
    return fmt::format("{} never entered {} on {}", rank_words(f), f.probe, comm);
  }
  if (f.type == "mismatch")
    return fmt::format("{} called {} where its peers called another collective, on {}", rank_words(f), f.probe, comm);
  if (f.type == "failure")
    return fmt::format("{} {}", rank_words(f), f.process ? describe_process(*f.process) : std::string("failed"));
  if (f.where == "inside" && f.inside && !f.inside->transport.empty())
    return fmt::format("{} arrives on time but holds up {} on {} from inside: its data path is set apart ({})",
                       rank_words(f), f.probe, comm, f.inside->transport);
  if (f.where == "inside" && f.inside)
    return fmt::format(
        "{} arrives on time but holds up {} on {} from inside: its thread waited for a CPU {:.0f}% of its time there "
        "(its peers {})",
        rank_words(f), f.probe, comm, f.inside->runq_share * 100,
        f.inside->peers_runq_share ? fmt::format("{:.0f}%", *f.inside->peers_runq_share * 100) : "-");
  return fmt::format("{} arrives last in {:.0f}% of {} calls on {}, {:.2f} ms after the median rank", rank_words(f),
                     f.last_fraction * 100, f.probe, comm, f.lateness_median_ns / 1e6);
}

double mechanism_confidence(const Finding& f) {
  if (f.type == "hang" || f.type == "mismatch" || f.type == "failure") return 1.0;  // the kernel's and the calls' word
  if (f.windows_considered <= 0) return 0.5;
  return std::clamp(static_cast<double>(f.windows_flagged) / f.windows_considered, 0.0, 1.0);
}

std::string mechanism_evidence(const Finding& f) {
  if (f.type == "failure")
    return f.followed_by.empty() ? f.summary
                                 : fmt::format("ranks {} ended within {:.2f} s after it", join_numbers(f.followed_by),
                                               static_cast<double>(f.followed_within_ns) / 1e9);
  if (f.type == "hang" || f.type == "mismatch")
    return fmt::format("ranks {} waited {:.1f} s inside {}", join_numbers(f.waiting_ranks),
                       static_cast<double>(f.waited_ns) / 1e9, f.probe);
  if (f.where == "inside" && f.inside && !f.inside->transport.empty())
    return fmt::format(
        "after the last arrival each instance took {} its usual (the time beyond it {:.0f}% of the window), flagged "
        "in {} of {} windows",
        f.inside->after_last_arrival_ratio ? fmt::format("{:.1f}x", *f.inside->after_last_arrival_ratio)
                                           : std::string("longer than"),
        f.inside->cost_share * 100, f.windows_flagged, f.windows_considered);
  if (f.where == "inside" && f.inside)
    return fmt::format("the collective waited for its CPU {:.0f}% of the window, flagged in {} of {} windows",
                       f.inside->cost_share * 100, f.windows_flagged, f.windows_considered);
  return fmt::format("blame {:.0f}% of the window ({:.0f}% of all ranks'), flagged in {} of {} windows",
                     f.blame_share * 100, f.blame_dominance * 100, f.windows_flagged, f.windows_considered);
}

struct Culprit {
  const Finding* finding;
  std::string node_id;
};

// The events of one layer that concern a culprit and are causes, strongest first.
std::vector<const DeviceEvent*> causes_in(const InvestigationInput& in, const Finding& f, std::string_view layer) {
  std::vector<const DeviceEvent*> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const DeviceEvent& e : in.events) {
    if (layer_of_event(e.type) != layer || cause_rank(e) < 0 || !in.concerns(e, f.culprit)) continue;
    if (seen.insert({e.type, e.device + e.label}).second) out.push_back(&e);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const DeviceEvent* a, const DeviceEvent* b) { return cause_rank(*a) < cause_rank(*b); });
  return out;
}

std::vector<const ProbeStatus*> sources_of(const InvestigationInput& in, std::string_view layer) {
  std::vector<const ProbeStatus*> out;
  for (const ProbeStatus& s : in.sources)
    if (layer_of_source(s.probe) == layer) out.push_back(&s);
  return out;
}

std::string source_words(const ProbeStatus& s) {
  return fmt::format("{}: {}{}", s.probe, probe_state_name(s.state), s.detail.empty() ? "" : " (" + s.detail + ")");
}

Layer collective_layer(const InvestigationInput& in) {
  Layer l{"collective", LayerState::not_checked, {}, {}};
  const SessionVerdict& v = in.verdict;
  l.looked_at.push_back(
      fmt::format("collective calls of every rank: {} aligned instances over {:.0f} s", v.instances, in.traced_s));
  if (!v.judged) {
    l.evidence.push_back("not judged: " + v.reason);
    return l;
  }
  for (const Finding& f : v.failures) l.evidence.push_back("failure: " + f.summary);
  for (const Finding& f : v.hangs) l.evidence.push_back(f.type + ": " + f.summary);
  for (const Finding& f : v.stragglers) l.evidence.push_back("straggler: " + f.summary);
  for (const Episode& e : v.episodes) l.evidence.push_back("did not hold: " + e.summary);
  for (const Withheld& w : v.withheld) l.evidence.push_back("withheld: " + w.summary);
  bool found = !v.hangs.empty() || !v.stragglers.empty() || !v.failures.empty();
  l.state = found ? LayerState::ruled_in : LayerState::ruled_out;
  if (!found)
    l.evidence.push_back(fmt::format("no straggler and no hang: {} windows judged, no rank arrived last persistently",
                                     v.windows_judged));
  return l;
}

Layer lower_layer(const InvestigationInput& in, std::string_view name, const std::vector<Culprit>& culprits) {
  Layer l{std::string(name), LayerState::not_checked, {}, {}};
  bool any_source = false;
  for (const ProbeStatus* s : sources_of(in, name)) {
    l.looked_at.push_back(source_words(*s));
    any_source |= s->state == ProbeState::attached;
  }
  bool ruled_in = false;
  for (const Culprit& c : culprits)
    for (const DeviceEvent* e : causes_in(in, *c.finding, name)) {
      l.evidence.push_back(fmt::format("{}: {}", rank_words(*c.finding), e->summary));
      ruled_in = true;
    }
  // The node's SDC risk: GPU ECC with the GPU, host memory with the host.
  for (const Culprit& c : culprits) {
    const auto& sdc = c.finding->sdc_activity;
    if (!sdc) continue;
    std::string_view side = sdc->find("gpu.") != std::string::npos ? "gpu" : "host";
    if (side == name)
      l.evidence.push_back(fmt::format("{}'s node: {} (a risk to its results, not a cause of its lateness)",
                                       rank_words(*c.finding), *sdc));
  }
  if (ruled_in) {
    l.state = LayerState::ruled_in;
    return l;
  }
  if (!any_source) {
    l.evidence.push_back(fmt::format("no source of {} could be read here", layer_words(name)));
    return l;
  }
  l.state = LayerState::ruled_out;
  // What was seen that concerns nobody traced as a culprit, so the reader
  // knows it was looked at and set aside.
  size_t elsewhere = 0;
  for (const DeviceEvent& e : in.events)
    if (layer_of_event(e.type) == name && cause_rank(e) >= 0) ++elsewhere;
  if (culprits.empty()) {
    l.evidence.push_back(
        elsewhere ? fmt::format("{} event(s) of {}, but no rank is a straggler or hung", elsewhere, layer_words(name))
                  : fmt::format("nothing found in {}", layer_words(name)));
    return l;
  }
  for (const Culprit& c : culprits) {
    auto devices = in.devices_of.find(c.finding->culprit.pid);
    std::string on = devices == in.devices_of.end() || devices->second.empty()
                         ? std::string()
                         : " (its devices: " + join(devices->second, ", ") + ")";
    l.evidence.push_back(
        fmt::format("nothing in {} concerns {}{}{}", layer_words(name), rank_words(*c.finding), on,
                    elsewhere ? fmt::format("; {} event(s) concern other ranks", elsewhere) : std::string()));
  }
  return l;
}

void build_graph(const InvestigationInput& in, const std::vector<Culprit>& culprits, Investigation& out) {
  FailureGraph& g = out.graph;
  if (culprits.empty()) {
    g.nodes.push_back(
        {"symptom", "symptom", "collective", fmt::format("no straggler or hang in {:.0f} s traced", in.traced_s)});
    for (const Layer& l : out.layers) {
      if (l.name == "collective") continue;
      std::string id = "layer." + l.name;
      g.nodes.push_back({id, l.state == LayerState::ruled_out ? "checked" : "not_checked", l.name,
                         fmt::format("{}: {}", l.name, layer_state_name(l.state))});
      g.edges.push_back({"symptom", id, l.evidence.empty() ? std::string() : l.evidence.front(), 0});
    }
    return;
  }
  g.nodes.push_back({"symptom", "symptom", "collective", symptom_label(in.verdict, in.traced_s)});
  // The most likely path first: culprits in verdict order (hangs, then
  // stragglers by cost), each with its strongest cause.
  int cause_number = 0;
  for (const Culprit& c : culprits) {
    const Finding& f = *c.finding;
    g.nodes.push_back({c.node_id, "mechanism", "collective", mechanism_label(f)});
    g.edges.push_back({"symptom", c.node_id, mechanism_evidence(f), mechanism_confidence(f)});
    std::vector<const DeviceEvent*> causes;
    for (std::string_view layer : kLayersBelow)
      for (const DeviceEvent* e : causes_in(in, f, layer)) causes.push_back(e);
    std::stable_sort(causes.begin(), causes.end(),
                     [](const DeviceEvent* a, const DeviceEvent* b) { return cause_rank(*a) < cause_rank(*b); });
    for (const DeviceEvent* e : causes) {
      std::string id = fmt::format("cause{}", ++cause_number);
      std::string where = e->label.empty() ? e->device : e->label;
      g.nodes.push_back({id, "cause", std::string(layer_of_event(e->type)),
                         where.empty() ? e->type : fmt::format("{} on {}", e->type, where)});
      g.edges.push_back({c.node_id, id, e->summary, confidence_of(cause_rank(*e))});
    }
    if (f.sdc_activity) {
      std::string id = fmt::format("risk{}", ++cause_number);
      g.nodes.push_back({id, "risk", "host", "silent data corruption risk on its node"});
      g.edges.push_back({c.node_id, id, *f.sdc_activity, 0.3});
    }
  }
  for (const Layer& l : out.layers) {
    if (l.name == "collective" || l.state == LayerState::ruled_in) continue;
    std::string id = "layer." + l.name;
    g.nodes.push_back({id, l.state == LayerState::ruled_out ? "ruled_out" : "not_checked", l.name,
                       fmt::format("{}: {}", l.name, layer_state_name(l.state))});
    g.edges.push_back({culprits.front().node_id, id, l.evidence.empty() ? std::string() : l.evidence.front(), 0});
  }
}

std::string conclusion(const Investigation& inv, const std::vector<Culprit>& culprits) {
  std::vector<std::string> checked, unchecked;
  for (const Layer& l : inv.layers) (l.state == LayerState::not_checked ? unchecked : checked).push_back(l.name);
  std::string tail = unchecked.empty() ? std::string() : "; not checked: " + join(unchecked, ", ");
  if (culprits.empty())
    return checked.empty() ? fmt::format("nothing found: no layer could be checked{}", tail)
                           : fmt::format("nothing found: checked {}{}", join(checked, ", "), tail);
  // The first path: symptom -> first culprit -> its strongest cause.
  const FailureGraph& g = inv.graph;
  std::string path = "symptom -> " + rank_words(*culprits.front().finding);
  for (const GraphEdge& e : g.edges)
    if (e.from == culprits.front().node_id && e.confidence > 0) {
      for (const GraphNode& n : g.nodes)
        if (n.id == e.to) path += " -> " + n.label;
      break;
    }
  std::vector<std::string> ruled_out;
  for (const Layer& l : inv.layers)
    if (l.state == LayerState::ruled_out) ruled_out.push_back(l.name);
  return fmt::format("most likely: {}{}{}", path, ruled_out.empty() ? "" : "; ruled out: " + join(ruled_out, ", "),
                     tail);
}

}  // namespace

std::string_view layer_state_name(LayerState state) {
  switch (state) {
    case LayerState::ruled_in:
      return "ruled_in";
    case LayerState::ruled_out:
      return "ruled_out";
    case LayerState::not_checked:
      break;
  }
  return "not_checked";
}

std::string_view layer_of_event(std::string_view type) {
  // Read from the rank's process on the host, but about the path its data
  // takes: the network's layer.
  if (type == "host.tcp_retrans" || type == "host.tcp_rtt") return "fabric";
  if (type.starts_with("host.")) return "host";
  if (type == "xid" || type == "sxid") return "gpu";
  if (type == "aer" || type == "link.downtrained" || type == "link.recovered" || type == "link.down" ||
      type == "pcie.link_event" || type == "pci.hotplug")
    return "pcie";
  return "fabric";
}

std::string_view layer_of_source(std::string_view source) {
  if (source.starts_with("host.")) return "host";
  if (source.starts_with("nvidia.")) return "gpu";
  if (source.starts_with("pcie.") || source.starts_with("pci.")) return "pcie";
  if (source.starts_with("rdma.") || source.starts_with("verbs.") || source.starts_with("nccl.ib")) return "fabric";
  return "";
}

Investigation investigate(const InvestigationInput& in) {
  Investigation out;
  std::vector<Culprit> culprits;
  // The first failure (what the others followed), hangs and mismatches (they
  // stop the job), then stragglers by what they cost.
  if (!in.verdict.failures.empty())
    culprits.push_back({&in.verdict.failures.front(), fmt::format("rank{}", in.verdict.failures.front().culprit.rank)});
  for (const Finding& f : in.verdict.hangs) culprits.push_back({&f, fmt::format("rank{}", f.culprit.rank)});
  for (const Finding& f : in.verdict.stragglers) culprits.push_back({&f, fmt::format("rank{}", f.culprit.rank)});
  std::stable_sort(culprits.begin(), culprits.end(), [](const Culprit& a, const Culprit& b) {
    auto order = [](const Finding& f) { return f.type == "failure" ? 0 : f.type == "straggler" ? 2 : 1; };
    if (order(*a.finding) != order(*b.finding)) return order(*a.finding) < order(*b.finding);
    return a.finding->cost_ns > b.finding->cost_ns;
  });
  // One node per rank: a rank that both hangs and straggles is one mechanism each.
  std::set<std::string> ids;
  for (Culprit& c : culprits)
    while (!ids.insert(c.node_id).second) c.node_id += "'";
  out.layers.push_back(collective_layer(in));
  for (std::string_view layer : kLayersBelow) out.layers.push_back(lower_layer(in, layer, culprits));
  build_graph(in, culprits, out);
  out.conclusion = conclusion(out, culprits);
  return out;
}

}  // namespace slowburn
