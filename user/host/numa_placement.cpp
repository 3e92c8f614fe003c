#include "host/numa_placement.h"

#include <fmt/format.h>

#include "core/strings.h"

namespace slowburn {

std::string cpu_list_words(const std::set<int>& cpus) {
  std::vector<std::string> parts;
  for (auto it = cpus.begin(); it != cpus.end();) {
    int first = *it, last = *it;
    while (++it != cpus.end() && *it == last + 1) last = *it;
    parts.push_back(first == last ? std::to_string(first) : fmt::format("{}-{}", first, last));
  }
  return join(parts, ",");
}

std::vector<HostCause> judge_numa_placement(const RankIdentity& rank, const std::set<int>& cpus_allowed,
                                            const std::map<int, int>& cpu_node,
                                            const std::vector<PlacedDevice>& devices) {
  std::vector<HostCause> causes;
  std::set<int> nodes_of_machine;
  for (const auto& [cpu, node] : cpu_node) nodes_of_machine.insert(node);
  if (nodes_of_machine.size() < 2 || cpus_allowed.empty()) return causes;
  std::set<int> rank_nodes;
  for (int cpu : cpus_allowed)
    if (auto it = cpu_node.find(cpu); it != cpu_node.end()) rank_nodes.insert(it->second);
  if (rank_nodes.empty()) return causes;
  for (const PlacedDevice& d : devices) {
    if (d.numa_node < 0 || rank_nodes.contains(d.numa_node)) continue;
    std::set<int> node_cpus;
    for (const auto& [cpu, node] : cpu_node)
      if (node == d.numa_node) node_cpus.insert(cpu);
    std::vector<std::string> nodes;
    for (int n : rank_nodes) nodes.push_back(std::to_string(n));
    HostCause c;
    c.pid = rank.pid;
    c.rank = rank.rank;
    c.type = "host.numa_placement";
    c.label = d.label;
    c.value = d.numa_node;
    c.summary = fmt::format(
        "{} may run only on NUMA node {} (CPUs {}), but its {} {} ({}) is on node {} (CPUs {}): every copy to it "
        "crosses the socket interconnect",
        rank_label(rank), join(nodes, ","), cpu_list_words(cpus_allowed), d.role, d.label, d.bdf, d.numa_node,
        cpu_list_words(node_cpus));
    causes.push_back(std::move(c));
  }
  return causes;
}

}  // namespace slowburn
