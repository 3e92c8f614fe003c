// Which device is what, what sits below what, and which ranks use it:
// PCI devices from sysfs, GPUs from /proc/driver/nvidia (or PCI class),
// NICs from /sys/class/infiniband and /sys/class/net, ranks from their
// CUDA_VISIBLE_DEVICES / NCCL_IB_HCA / local rank. A link problem on a
// switch or root port concerns every device below it, and every rank behind
// those.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/rank_identity.h"
#include "sysfs/pci_devices.h"

namespace slowburn {

enum class DeviceRole { gpu, nic, nvswitch, switch_port, root_port, other };
std::string_view device_role_name(DeviceRole role);

struct TopologyDevice {
  PciDevice pci;
  DeviceRole role = DeviceRole::other;
  std::string label;               // "GPU 0 NVIDIA H100 80GB HBM3", "mlx5_0", "eth0"
  std::optional<int> gpu_index;    // nvidia device minor, else PCI order among GPUs
  std::string gpu_uuid;            // "GPU-..." when the driver reports it
  std::vector<std::string> names;  // kernel names: mlx5_0, ib0, eth0
  bool rdma = false;               // listed in /sys/class/infiniband
  std::vector<int> ranks;          // ranks that use this device directly
  std::vector<int32_t> pids;       // their processes: ranks of two jobs may share numbers
};

class Topology {
 public:
  // sysfs_root replaces /sys, proc_root replaces /proc.
  static Topology read(const std::filesystem::path& sysfs_root, const std::filesystem::path& proc_root);

  // Maps every rank to its GPU and NIC (notes say what could not be mapped).
  void assign_ranks(const std::vector<RankIdentity>& ranks);

  // By BDF in any common spelling ("0000:3b:00", "3b:00.0"), or by a NIC name.
  const TopologyDevice* find(std::string_view address) const;
  // The device and everything below it.
  std::vector<const TopologyDevice*> subtree(std::string_view bdf) const;
  // Ranks using the device or anything below it, sorted.
  std::vector<int> ranks_behind(std::string_view bdf) const;
  // Whether the process uses the device or anything below it.
  bool serves(std::string_view bdf, int32_t pid) const;
  // BDFs from the root port down to the device.
  std::vector<std::string> path_to_root(std::string_view bdf) const;
  // The devices at the other end of the PCIe link a device's link attributes
  // describe: the bridge above an endpoint or a switch's upstream port; the
  // devices below a root or downstream port.
  std::vector<const TopologyDevice*> link_partners(std::string_view bdf) const;
  // The most the other end of the link can do (max_link_* of its partners;
  // the best of several functions below a port); nullopt when unknown. A
  // switch port trained to an x8 Gen4 NIC is not downtrained.
  std::optional<LinkExpectation> link_partner_capability(std::string_view bdf) const;

  const std::vector<TopologyDevice>& devices() const { return devices_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  TopologyDevice* gpu_for(const RankIdentity& rank);
  TopologyDevice* nic_for(const RankIdentity& rank, const TopologyDevice* gpu);

  std::vector<TopologyDevice> devices_;
  std::map<std::string, size_t, std::less<>> index_;  // BDF and kernel names -> devices_ slot
  std::vector<std::string> notes_;
  std::optional<size_t> rank_notes_from_;  // notes_ past this index come from assign_ranks
};

}  // namespace slowburn
