#include "sysfs/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <sstream>

#include "core/files.h"
#include "core/strings.h"
#include "sysfs/rdma_ports.h"

namespace slowburn {

namespace {

constexpr uint16_t kNvidia = 0x10de;

// PCIe port types (PCI Express capability register).
constexpr uint8_t kRootPort = 4, kUpstreamPort = 5, kDownstreamPort = 6, kIntegratedEndpoint = 9, kEventCollector = 10;

DeviceRole role_of(const PciDevice& d, bool named_nic) {
  uint32_t base_sub = d.class_code >> 8;  // class and subclass
  if (base_sub == 0x0302 || (base_sub == 0x0300 && d.vendor == kNvidia)) return DeviceRole::gpu;
  if (d.vendor == kNvidia && base_sub == 0x0680) return DeviceRole::nvswitch;
  if (named_nic || base_sub == 0x0207 || base_sub == 0x0200) return DeviceRole::nic;
  if (d.port_type == kRootPort) return DeviceRole::root_port;
  if (d.port_type == kUpstreamPort || d.port_type == kDownstreamPort) return DeviceRole::switch_port;
  // Without the config space (not root): a bridge on a host bridge is a root port.
  if (base_sub == 0x0604) return d.parent_bdf ? DeviceRole::switch_port : DeviceRole::root_port;
  return DeviceRole::other;
}

// The PCI device a class device (/sys/class/net/eth0/device) belongs to:
// the nearest BDF on its resolved path.
std::optional<std::string> pci_owner(const std::filesystem::path& device_link) {
  std::error_code ec;
  std::filesystem::path resolved = std::filesystem::weakly_canonical(device_link, ec);
  if (ec) return std::nullopt;
  for (std::filesystem::path p = resolved; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    std::string name = p.filename().string();
    if (is_bdf(name)) return name;
  }
  return std::nullopt;
}

// /proc/driver/nvidia/gpus/<bdf>/information: "Key:   value" lines.
std::map<std::string, std::string> read_nvidia_information(const std::filesystem::path& file) {
  std::map<std::string, std::string> fields;
  auto text = read_file(file);
  if (!text) return fields;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    fields[line.substr(0, colon)] = value;
  }
  return fields;
}

size_t common_depth(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

std::string_view device_role_name(DeviceRole role) {
  switch (role) {
    case DeviceRole::gpu:
      return "gpu";
    case DeviceRole::nic:
      return "nic";
    case DeviceRole::nvswitch:
      return "nvswitch";
    case DeviceRole::switch_port:
      return "switch-port";
    case DeviceRole::root_port:
      return "root-port";
    case DeviceRole::other:
      return "other";
  }
  return "?";
}

Topology Topology::read(const std::filesystem::path& sysfs_root, const std::filesystem::path& proc_root) {
  Topology topo;
  std::map<std::string, std::vector<std::string>> names;  // bdf -> class device names
  std::set<std::string> ib_devices;
  std::error_code ec;
  for (const char* cls : {"infiniband", "net"}) {
    bool rdma = std::string_view(cls) == "infiniband";
    for (const auto& entry : std::filesystem::directory_iterator(sysfs_root / "class" / cls, ec)) {
      auto owner = pci_owner(entry.path() / "device");
      // Soft-RoCE and siw have no device link: they are the PCI NIC their
      // netdev is on (a link or AER problem there stops their traffic).
      if (!owner && rdma)
        if (std::string netdev = rdma_netdev(entry.path()); !netdev.empty())
          owner = pci_owner(sysfs_root / "class/net" / netdev / "device");
      if (!owner) continue;  // virtual (lo, bonds, rxe on a veth) or not PCI
      names[*owner].push_back(entry.path().filename().string());
      if (rdma) ib_devices.insert(*owner);
    }
  }
  for (PciDevice& pci : read_pci_devices(sysfs_root)) {
    TopologyDevice dev;
    auto named = names.find(pci.bdf);
    dev.role = role_of(pci, named != names.end());
    dev.rdma = ib_devices.contains(pci.bdf);
    if (named != names.end()) dev.names = named->second;
    dev.pci = std::move(pci);
    topo.devices_.push_back(std::move(dev));
  }
  // GPUs by PCI bus order: what nvidia-smi shows and CUDA uses with
  // CUDA_DEVICE_ORDER=PCI_BUS_ID (the driver's device minor need not follow
  // it). Devices are sorted by BDF already.
  int next_index = 0;
  for (TopologyDevice& dev : topo.devices_) {
    if (dev.role != DeviceRole::gpu) continue;
    dev.gpu_index = next_index++;
    auto info = read_nvidia_information(proc_root / "driver/nvidia/gpus" / dev.pci.bdf / "information");
    if (auto uuid = info.find("GPU UUID"); uuid != info.end()) dev.gpu_uuid = uuid->second;
    std::string model =
        info.contains("Model") ? info["Model"] : fmt::format("{:04x}:{:04x}", dev.pci.vendor, dev.pci.device);
    dev.label = fmt::format("GPU {} {}", *dev.gpu_index, model);
  }
  for (size_t i = 0; i < topo.devices_.size(); ++i) {
    topo.index_.emplace(topo.devices_[i].pci.bdf, i);
    for (const std::string& name : topo.devices_[i].names) topo.index_.emplace(name, i);
  }
  for (TopologyDevice& dev : topo.devices_) {
    if (!dev.label.empty()) continue;
    dev.label = dev.names.empty() ? fmt::format("{:04x}:{:04x}", dev.pci.vendor, dev.pci.device) : join(dev.names, ",");
  }
  return topo;
}

const TopologyDevice* Topology::find(std::string_view address) const {
  auto it = index_.find(address);
  if (it == index_.end()) it = index_.find(normalize_bdf(address));
  return it == index_.end() ? nullptr : &devices_[it->second];
}

std::vector<std::string> Topology::path_to_root(std::string_view address) const {
  std::vector<std::string> path;
  const TopologyDevice* dev = find(address);
  while (dev) {
    path.insert(path.begin(), dev->pci.bdf);
    if (!dev->pci.parent_bdf || path.size() > 64) break;
    dev = find(*dev->pci.parent_bdf);
  }
  return path;
}

std::vector<const TopologyDevice*> Topology::link_partners(std::string_view address) const {
  std::vector<const TopologyDevice*> partners;
  const TopologyDevice* dev = find(address);
  if (!dev) return partners;
  std::vector<const TopologyDevice*> children;
  for (const TopologyDevice& other : devices_)
    if (other.pci.parent_bdf == dev->pci.bdf) children.push_back(&other);
  std::optional<uint8_t> type = dev->pci.port_type;
  if (dev->pci.virtual_function || type == kIntegratedEndpoint || type == kEventCollector) return partners;  // no link
  bool downstream_link;
  if (type) {
    downstream_link = *type == kRootPort || *type == kDownstreamPort;
  } else {
    // No config space (not root): a switch's upstream port sits below a
    // bridge and has only bridges (its downstream ports) below it; other
    // bridges link down.
    bool bridge = dev->role == DeviceRole::root_port || dev->role == DeviceRole::switch_port;
    bool upstream_port = bridge && dev->pci.parent_bdf && !children.empty() &&
                         std::all_of(children.begin(), children.end(),
                                     [](const TopologyDevice* c) { return c->role == DeviceRole::switch_port; });
    downstream_link = bridge && !upstream_port;
  }
  if (downstream_link) return children;
  if (dev->pci.parent_bdf)
    if (const TopologyDevice* parent = find(*dev->pci.parent_bdf)) partners.push_back(parent);
  return partners;
}

std::vector<const TopologyDevice*> Topology::subtree(std::string_view address) const {
  std::vector<const TopologyDevice*> below;
  const TopologyDevice* top = find(address);
  if (!top) return below;
  for (const TopologyDevice& dev : devices_) {
    auto path = path_to_root(dev.pci.bdf);
    if (std::find(path.begin(), path.end(), top->pci.bdf) != path.end()) below.push_back(&dev);
  }
  return below;
}

bool Topology::serves(std::string_view address, int32_t pid) const {
  for (const TopologyDevice* dev : subtree(address))
    if (std::find(dev->pids.begin(), dev->pids.end(), pid) != dev->pids.end()) return true;
  return false;
}

std::optional<LinkExpectation> Topology::link_partner_capability(std::string_view bdf) const {
  std::optional<LinkExpectation> partner;
  for (const TopologyDevice* p : link_partners(bdf)) {
    if (!p->pci.link.max_width && !p->pci.link.max_speed_gts) continue;
    if (!partner) partner = LinkExpectation{};
    if (p->pci.link.max_width) partner->width = std::max(partner->width.value_or(0), *p->pci.link.max_width);
    if (p->pci.link.max_speed_gts)
      partner->speed_gts = std::max(partner->speed_gts.value_or(0.0), *p->pci.link.max_speed_gts);
  }
  return partner;
}

std::vector<int> Topology::ranks_behind(std::string_view address) const {
  std::set<int> ranks;
  for (const TopologyDevice* dev : subtree(address)) ranks.insert(dev->ranks.begin(), dev->ranks.end());
  return {ranks.begin(), ranks.end()};
}

TopologyDevice* Topology::gpu_for(const RankIdentity& rank) {
  std::vector<TopologyDevice*> visible;
  if (!rank.cuda_visible_devices.empty()) {
    for (const std::string& entry : split(rank.cuda_visible_devices, ',')) {
      TopologyDevice* match = nullptr;
      for (TopologyDevice& dev : devices_) {
        if (dev.role != DeviceRole::gpu) continue;
        if (auto index = parse_number<int>(entry); index && dev.gpu_index == *index) match = &dev;
        if (entry.rfind("GPU-", 0) == 0 && !dev.gpu_uuid.empty() && dev.gpu_uuid.rfind(entry, 0) == 0) match = &dev;
      }
      if (match)
        visible.push_back(match);
      else
        notes_.push_back(fmt::format("{}: CUDA_VISIBLE_DEVICES entry '{}' matches no GPU", rank_label(rank), entry));
    }
  } else {
    for (TopologyDevice& dev : devices_)
      if (dev.role == DeviceRole::gpu) visible.push_back(&dev);
    std::sort(visible.begin(), visible.end(), [](auto* a, auto* b) { return a->gpu_index < b->gpu_index; });
  }
  if (visible.empty()) return nullptr;
  // A process sees its visible GPUs as 0..n-1; ranks that share them pick
  // by local rank (torch.cuda.set_device(local_rank)).
  size_t pick = rank.local_rank ? static_cast<size_t>(*rank.local_rank) % visible.size() : 0;
  if (rank.cuda_visible_devices.empty() && rank.local_rank && static_cast<size_t>(*rank.local_rank) >= visible.size())
    return nullptr;  // more ranks than GPUs: not a one-GPU-per-rank job
  return visible[pick];
}

TopologyDevice* Topology::nic_for(const RankIdentity& rank, const TopologyDevice* gpu) {
  // As NCCL does: of several, the NIC closest to the GPU on the PCI tree.
  auto nearest = [&](const std::vector<TopologyDevice*>& candidates) -> TopologyDevice* {
    if (candidates.empty()) return nullptr;
    if (!gpu) return candidates.front();
    auto gpu_path = path_to_root(gpu->pci.bdf);
    return *std::max_element(candidates.begin(), candidates.end(), [&](auto* a, auto* b) {
      return common_depth(path_to_root(a->pci.bdf), gpu_path) < common_depth(path_to_root(b->pci.bdf), gpu_path);
    });
  };
  // UCX_NET_DEVICES, where NCCL_IB_HCA is unset, of an MPI rank (an Open
  // MPI or MPICH job on UCX sets only it; NCCL without its UCX plugin
  // ignores it, so a torchrun or srun rank's is no hint): "mlx5_0:1,rxe0:1"
  // (device:port, exact names), a netdev ("eth0") for its TCP transport,
  // or "all" (UCX's default: any). A list that names no NIC here, or
  // excludes ("^..."), falls through to the rules below.
  bool mpi_rank = rank.launcher == "openmpi" || rank.launcher == "pmix" || rank.launcher == "pmi";
  std::string ucx(trim(rank.ucx_net_devices));
  if (mpi_rank && rank.nccl_ib_hca.empty() && !ucx.empty() && ucx != "all" && ucx[0] != '^') {
    std::vector<TopologyDevice*> listed;
    for (const std::string& entry : split(ucx, ',')) {
      std::string name(trim(std::string_view(entry).substr(0, entry.find(':'))));
      for (TopologyDevice& dev : devices_)
        if (dev.role == DeviceRole::nic && std::find(dev.names.begin(), dev.names.end(), name) != dev.names.end() &&
            std::find(listed.begin(), listed.end(), &dev) == listed.end())
          listed.push_back(&dev);
    }
    if (!listed.empty()) return nearest(listed);
  }
  // NCCL_IB_HCA: "mlx5_0,mlx5_1" (prefixes), "=mlx5_0:1" (exact), "^mlx5_2"
  // (excluded), "^=mlx5_2" (excluded, exact).
  std::string hca = rank.nccl_ib_hca;
  bool exclude = !hca.empty() && hca[0] == '^';
  if (exclude) hca.erase(0, 1);
  bool exact = !hca.empty() && hca[0] == '=';
  if (exact) hca.erase(0, 1);
  std::vector<std::string> wanted;
  for (const std::string& entry : split(hca, ',')) wanted.push_back(entry.substr(0, entry.find(':')));
  // NCCL's IB transport uses InfiniBand/RoCE devices (its list names them);
  // plain Ethernet NICs only when the node has none.
  bool any_rdma = std::any_of(devices_.begin(), devices_.end(), [](const TopologyDevice& d) { return d.rdma; });
  std::vector<TopologyDevice*> candidates;
  for (TopologyDevice& dev : devices_) {
    if (dev.role != DeviceRole::nic || (any_rdma && !dev.rdma)) continue;
    bool listed = std::any_of(wanted.begin(), wanted.end(), [&](const std::string& w) {
      return std::any_of(dev.names.begin(), dev.names.end(),
                         [&](const std::string& n) { return exact ? n == w : n.rfind(w, 0) == 0; });
    });
    if (wanted.empty() || listed != exclude) candidates.push_back(&dev);
  }
  return nearest(candidates);
}

void Topology::assign_ranks(const std::vector<RankIdentity>& ranks) {
  // The notes about ranks describe this assignment only: a service that
  // re-assigns at every job start must not pile them up.
  if (!rank_notes_from_) rank_notes_from_ = notes_.size();
  notes_.resize(*rank_notes_from_);
  for (TopologyDevice& dev : devices_) {
    dev.ranks.clear();
    dev.pids.clear();
  }
  for (const RankIdentity& rank : ranks) {
    TopologyDevice* gpu = gpu_for(rank);
    TopologyDevice* nic = nic_for(rank, gpu);
    for (TopologyDevice* used : {gpu, nic}) {
      if (!used) continue;
      auto& list = used->ranks;
      if (std::find(list.begin(), list.end(), rank.rank) == list.end()) list.push_back(rank.rank);
      used->pids.push_back(rank.pid);
    }
    if (!gpu && !devices_.empty() && std::any_of(devices_.begin(), devices_.end(), [](const TopologyDevice& d) {
          return d.role == DeviceRole::gpu;
        }))
      notes_.push_back(
          fmt::format("{}: no GPU could be mapped (set CUDA_VISIBLE_DEVICES or LOCAL_RANK)", rank_label(rank)));
  }
}

}  // namespace slowburn
