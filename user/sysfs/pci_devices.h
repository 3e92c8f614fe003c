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
#include <string_view>
#include <vector>

namespace slowburn {

// "16.0 GT/s PCIe", "8 GT/s" (older kernels), "2.5 GT/s" -> GT/s.
// "Unknown" / "Unknown speed" (link down) -> 0. nullopt: not a speed.
std::optional<double> parse_link_speed(std::string_view text);

struct LinkReading {
  std::optional<double> current_speed_gts;  // 0: link down
  std::optional<double> max_speed_gts;
  std::optional<unsigned> current_width;  // 0: link down
  std::optional<unsigned> max_width;
  // false: the device's sysfs directory is gone (hot-unplugged, removed, or
  // its slot powered off): a link down, not a reading that says nothing.
  bool present = true;
};

// A link's width and speed, either part open: what a link is held to, or
// what its partner at the other end can do.
struct LinkExpectation {
  std::optional<unsigned> width;
  std::optional<double> speed_gts;
};

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

// The contents of a device's attribute files that exist, by file name
// ("aer_dev_correctable" -> its text): absent files are left out.
std::map<std::string, std::string> read_device_files(const std::filesystem::path& sysfs_root, const std::string& bdf,
                                                     const std::vector<std::string>& names);

// "0000:3b:00" (Xid prints no function) or "3b:00.0" -> "0000:3b:00.0".
std::string normalize_bdf(std::string_view address);

}  // namespace slowburn
