// RDMA NIC ports as sysfs shows them, under a root directory: the
// counters/ and hw_counters/ files of every port of every device in
// class/infiniband, the device's PCI address and its netdevs. A file that
// cannot be read or parsed becomes a note on the port, never an error for
// the tree.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace slowburn {

// One NIC port's counters at one time. Names are the kernel's: sysfs
// counters/ and hw_counters/ file names, ethtool -S strings; they do not
// collide.
struct NicSample {
  std::string nic;     // RDMA device ("mlx5_0"), or the netdev for a NIC without one
  uint32_t port = 1;   // RDMA port; 1 for a netdev
  std::string netdev;  // the Ethernet/IPoIB interface whose ethtool statistics are merged in, if any
  std::string device;  // PCI address, for the topology join; empty when unknown
  std::map<std::string, uint64_t> counters;
  std::vector<std::string> notes;  // unreadable or malformed sources, per file
};

struct FabricSnapshot {
  uint64_t ts_ns = 0;  // CLOCK_MONOTONIC
  std::vector<NicSample> nics;
};

// Every port of every RDMA device (or of `only`, by device or netdev
// name), sorted by device and port. counters/port_xmit_data and friends
// keep their names; hw_counters/lifespan (a setting) is skipped.
std::vector<NicSample> read_rdma_ports(const std::filesystem::path& sysfs_root,
                                       const std::vector<std::string>& only = {});

// The netdev of an RDMA device (sysfs_root/class/infiniband/<name>): its PCI
// function's net/ (a NIC's own), else the first one a port's GID table
// names (Soft-RoCE, siw); "" when none.
std::string rdma_netdev(const std::filesystem::path& device_dir);

// A netdev without an RDMA device (its ethtool statistics alone): name, PCI
// address when it has one.
NicSample netdev_sample(const std::filesystem::path& sysfs_root, const std::string& netdev);

}  // namespace slowburn
