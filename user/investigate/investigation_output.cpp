#include "investigate/investigation_output.h"

#include <fmt/format.h>

namespace slowburn {

namespace {

// A DOT string literal: quotes and backslashes escaped, long labels wrapped.
std::string dot_quoted(const std::string& text, size_t wrap = 48) {
  std::string out = "\"";
  size_t column = 0;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      column = 0;
      continue;
    }
    out += c;
    if (++column >= wrap && c == ' ') {
      out += "\\n";
      column = 0;
    }
  }
  return out + "\"";
}

const char* node_style(const std::string& kind) {
  if (kind == "symptom") return "shape=box, style=\"filled,bold\", fillcolor=\"#f4cccc\"";
  if (kind == "mechanism") return "shape=box, style=filled, fillcolor=\"#fce5cd\"";
  if (kind == "cause") return "shape=box, style=\"filled,rounded\", fillcolor=\"#fff2cc\"";
  if (kind == "risk") return "shape=box, style=\"filled,rounded,dashed\", fillcolor=\"#ead1dc\"";
  if (kind == "checked") return "shape=box, style=\"filled,rounded\", fillcolor=\"#d9ead3\"";
  return "shape=box, style=\"rounded,dashed\", color=gray40, fontcolor=gray40";  // ruled_out, not_checked
}

}  // namespace

nlohmann::json layer_json(const Layer& layer) {
  return {{"kind", "layer"},
          {"layer", layer.name},
          {"state", layer_state_name(layer.state)},
          {"looked_at", layer.looked_at},
          {"evidence", layer.evidence}};
}

nlohmann::json graph_json(const Investigation& inv) {
  nlohmann::json nodes = nlohmann::json::array(), edges = nlohmann::json::array();
  for (const GraphNode& n : inv.graph.nodes)
    nodes.push_back({{"id", n.id}, {"kind", n.kind}, {"layer", n.layer}, {"label", n.label}});
  for (const GraphEdge& e : inv.graph.edges)
    edges.push_back({{"from", e.from}, {"to", e.to}, {"evidence", e.evidence}, {"confidence", e.confidence}});
  return {{"kind", "graph"}, {"nodes", nodes}, {"edges", edges}, {"conclusion", inv.conclusion}};
}

std::string graph_dot(const Investigation& inv) {
  std::string out =
      "digraph failure {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=11];\n"
      "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  out += fmt::format("  labelloc=t; label={};\n", dot_quoted("slowburn investigate: " + inv.conclusion, 100));
  for (const GraphNode& n : inv.graph.nodes)
    out += fmt::format("  {} [label={}, {}];\n", dot_quoted(n.id), dot_quoted(n.label), node_style(n.kind));
  bool first_cause = true;
  for (const GraphEdge& e : inv.graph.edges) {
    std::string style;
    if (e.confidence <= 0) {
      style = ", style=dashed, color=gray50";
    } else if (e.to.starts_with("cause") && first_cause) {
      style = ", penwidth=2.5";  // the likeliest cause of the first culprit
      first_cause = false;
    }
    std::string label = e.confidence > 0 ? fmt::format("{} ({:.0f}%)", e.evidence, e.confidence * 100) : e.evidence;
    out +=
        fmt::format("  {} -> {} [label={}{}];\n", dot_quoted(e.from), dot_quoted(e.to), dot_quoted(label, 40), style);
  }
  return out + "}\n";
}

void print_investigation(const Investigation& inv, std::ostream& out) {
  out << "\nInvestigation, layer by layer:\n";
  for (const Layer& l : inv.layers) {
    out << fmt::format("  {:<11} {}\n", l.name, layer_state_name(l.state));
    for (const std::string& s : l.looked_at) out << "      looked at: " << s << '\n';
    for (const std::string& e : l.evidence) out << "      " << e << '\n';
  }
  out << "\nFailure graph (most likely path first):\n";
  for (const GraphEdge& e : inv.graph.edges) {
    std::string from, to;
    for (const GraphNode& n : inv.graph.nodes) {
      if (n.id == e.from) from = n.label;
      if (n.id == e.to) to = n.label;
    }
    out << fmt::format("  [{}] {}\n    -> [{}] {}{}\n", e.from, from, e.to, to,
                       e.confidence > 0 ? fmt::format(" ({:.0f}%)", e.confidence * 100) : std::string());
    if (!e.evidence.empty()) out << "       evidence: " << e.evidence << '\n';
  }
  out << "\nConclusion: " << inv.conclusion << '\n';
}

}  // namespace slowburn
