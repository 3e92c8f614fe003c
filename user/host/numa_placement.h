// A rank on the wrong NUMA node for its GPU or NIC: every host-to-device
// copy and every RDMA buffer then crosses the socket interconnect, a
// standing slowdown no counter of the rank shows. Pure: the rank's allowed
// CPUs, the node of each CPU and the node of each of its devices in; a
// cause out when none of the CPUs it may run on is on the device's node.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "host/host_causes.h"

namespace slowburn {

struct PlacedDevice {
  std::string role;   // "GPU", "NIC"
  std::string label;  // "GPU 0 NVIDIA H100", "mlx5_0"
  std::string bdf;
  int numa_node = -1;  // -1: the firmware does not say (no cause)
};

// cpu_node: CPU -> its NUMA node (/sys/devices/system/node/nodeN/cpulist);
// one node (or none known): no cause.
std::vector<HostCause> judge_numa_placement(const RankIdentity& rank, const std::set<int>& cpus_allowed,
                                            const std::map<int, int>& cpu_node,
                                            const std::vector<PlacedDevice>& devices);

// "0-3,8-11" from a set of CPUs.
std::string cpu_list_words(const std::set<int>& cpus);

}  // namespace slowburn
