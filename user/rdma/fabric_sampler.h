// One FabricSnapshot of the node: sysfs RDMA port counters, merged with
// the ethtool statistics of each port's netdev (live only: a replayed tree
// has no interfaces to ask).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "rdma/fabric_monitor.h"

namespace slowburn {

struct FabricSamplerOptions {
  std::filesystem::path sysfs_root = "/sys";
  bool ethtool = true;               // SIOCETHTOOL on each port's netdev
  std::vector<std::string> nics;     // only these RDMA devices or netdevs (empty: all RDMA devices)
  std::vector<std::string> netdevs;  // interfaces without an RDMA device to watch too (ethtool only)
  // Replay: `ethtool -S` captures named by interface (DIR/eth0) instead of
  // the ioctl; an interface without a capture has no ethtool statistics.
  std::filesystem::path ethtool_dir;
};

FabricSnapshot sample_fabric(const FabricSamplerOptions& options, uint64_t now_ns);

}  // namespace slowburn
