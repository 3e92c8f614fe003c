#include "sysfs/rdma_ports.h"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "core/files.h"
#include "core/strings.h"
#include "sysfs/pci_devices.h"

namespace slowburn {

namespace fs = std::filesystem;

namespace {

// The PCI address a class device's `device` link points to, if it is one.
std::string pci_address(const fs::path& class_device) {
  std::error_code ec;
  fs::path target = fs::read_symlink(class_device / "device", ec);
  if (ec) return {};
  std::string name = target.filename().string();
  return is_bdf(name) ? name : std::string();
}

void read_counter_dir(const fs::path& dir, const std::string& where, const std::string& subdir, NicSample& sample) {
  for (const std::string& name : sorted_dir_entries(dir)) {
    if (name == "lifespan") continue;  // hw_counters' refresh period in ms, not a counter
    auto text = read_file(dir / name);
    if (!text) {
      sample.notes.push_back(fmt::format("{}: {}/{} unreadable: {}", where, subdir, name, text.error().message));
      continue;
    }
    auto value = parse_number<uint64_t>(trim_right(*text));
    if (!value) {
      sample.notes.push_back(fmt::format("{}: {}/{} is not a counter: '{}'", where, subdir, name,
                                         std::string(trim_right(*text)).substr(0, 40)));
      continue;
    }
    sample.counters[name] = *value;
  }
}

}  // namespace

// Soft-RoCE (rdma_rxe) has no device link and names its netdev only in
// ports/N/gid_attrs/ndevs/K (an unset GID entry reads as an error, skipped).
std::string rdma_netdev(const fs::path& device_dir) {
  std::vector<std::string> netdevs = sorted_dir_entries(device_dir / "device/net");
  if (!netdevs.empty()) return netdevs.front();
  for (const std::string& port : sorted_dir_entries(device_dir / "ports")) {
    fs::path ndevs = device_dir / "ports" / port / "gid_attrs/ndevs";
    std::vector<std::string> entries = sorted_dir_entries(ndevs);
    std::sort(entries.begin(), entries.end(), [](const std::string& a, const std::string& b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;  // GID index order: 0, 1, ..., 10
    });
    for (const std::string& index : entries) {
      auto text = read_file(ndevs / index);
      if (!text) continue;
      std::string name(trim_right(*text));
      if (!name.empty()) return name;
    }
  }
  return {};
}

std::vector<NicSample> read_rdma_ports(const fs::path& sysfs_root, const std::vector<std::string>& only) {
  std::vector<NicSample> out;
  fs::path class_dir = sysfs_root / "class/infiniband";
  for (const std::string& nic : sorted_dir_entries(class_dir)) {
    fs::path device_dir = class_dir / nic;
    std::string netdev = rdma_netdev(device_dir);
    if (!only.empty() && std::find(only.begin(), only.end(), nic) == only.end() &&
        (netdev.empty() || std::find(only.begin(), only.end(), netdev) == only.end()))
      continue;
    std::string bdf = pci_address(device_dir);
    for (const std::string& port : sorted_dir_entries(device_dir / "ports")) {
      auto number = parse_number<uint32_t>(port);
      if (!number) continue;
      NicSample sample;
      sample.nic = nic;
      sample.port = *number;
      sample.netdev = netdev;
      sample.device = bdf;
      std::string where = fmt::format("{} port {}", nic, port);
      fs::path port_dir = device_dir / "ports" / port;
      bool any = false;
      for (const char* subdir : {"counters", "hw_counters"}) {
        std::error_code ec;
        if (!fs::is_directory(port_dir / subdir, ec)) continue;
        any = true;
        read_counter_dir(port_dir / subdir, where, subdir, sample);
      }
      if (!any) sample.notes.push_back(fmt::format("{}: no counters/ or hw_counters/ in sysfs", where));
      out.push_back(std::move(sample));
    }
  }
  return out;
}

NicSample netdev_sample(const fs::path& sysfs_root, const std::string& netdev) {
  NicSample sample;
  sample.nic = netdev;
  sample.port = 1;
  sample.netdev = netdev;
  sample.device = pci_address(sysfs_root / "class/net" / netdev);
  return sample;
}

}  // namespace slowburn
