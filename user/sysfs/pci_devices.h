// PCI devices as sysfs shows them, read under a root directory ("/sys" in
// production, a captured or fixture tree in tests). A missing or malformed
// attribute becomes a note on that device, never an error for the whole
// tree.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pcie/aer.h"
#include "pcie/link.h"

namespace slowburn {

struct PciDevice {
  std::string bdf;                        // "0000:3b:00.0"
  std::optional<std::string> parent_bdf;  // the bridge above it; none for a device on a host bridge
  uint16_t vendor = 0;
  uint16_t device = 0;
  uint32_t class_code = 0;  // 0x030200
  LinkReading link;
  // PCIe Device/Port Type from the config space's PCI Express capability
  // (readable in full by root): 0 endpoint, 1 legacy endpoint, 4 root port,
  // 5 switch upstream port, 6 switch downstream port, 7 PCIe-to-PCI bridge,
  // 9 root-complex integrated endpoint, 10 root-complex event collector.
  std::optional<uint8_t> port_type;
  bool virtual_function = false;   // SR-IOV VF: has a physfn link, no link of its own
  std::optional<int> numa_node;    // numa_node; none where it reads -1 (one node, or the firmware is silent)
  std::vector<std::string> notes;  // attributes that were malformed (absent link files are normal)
};

// PCIe port type from raw config space bytes (nullopt: no PCIe capability,
// or the bytes stop short of it).
std::optional<uint8_t> pcie_port_type(std::string_view config);

// "0000:3b:00.0"
bool is_bdf(std::string_view name);

// Every device under sysfs_root/bus/pci/devices, sorted by BDF.
std::vector<PciDevice> read_pci_devices(const std::filesystem::path& sysfs_root);

// One device's link attributes, re-read (the poller's hot path).
LinkReading read_link_reading(const std::filesystem::path& sysfs_root, const std::string& bdf,
                              std::vector<std::string>* notes = nullptr);

// aer_dev_correctable / aer_dev_fatal / aer_dev_nonfatal of one device; a
// severity without its file is absent from the map.
std::map<AerSeverity, AerCounters> read_aer_counters(const std::filesystem::path& sysfs_root, const std::string& bdf);

// "0000:3b:00" (Xid prints no function) or "3b:00.0" -> "0000:3b:00.0".
std::string normalize_bdf(std::string_view address);

}  // namespace slowburn
