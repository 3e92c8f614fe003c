// An investigation as people and programs read it: a text report, JSON
// lines ({"kind":"layer",...} per layer, then {"kind":"graph",...}) and
// Graphviz DOT (`dot -Tsvg graph.dot > graph.svg`).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "investigate/investigation.h"

namespace slowburn {

// {"kind":"layer","layer":NAME,"state":"ruled_in|ruled_out|not_checked","looked_at":[...],"evidence":[...]}
nlohmann::json layer_json(const Layer& layer);
// {"kind":"graph","nodes":[{"id","kind","layer","label"}],"edges":[{"from","to","evidence","confidence"}],
//  "conclusion":...}
nlohmann::json graph_json(const Investigation& investigation);
// A digraph: the symptom at the top, mechanisms, causes (the likeliest
// edge bold), ruled-out layers dashed.
std::string graph_dot(const Investigation& investigation);
void print_investigation(const Investigation& investigation, std::ostream& out);

}  // namespace slowburn
