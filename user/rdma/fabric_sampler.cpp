#include "rdma/fabric_sampler.h"

#include <fmt/format.h>

#include "core/files.h"
#include "net/ethtool.h"
#include "net/ethtool_dump.h"
#include "sysfs/rdma_ports.h"

namespace slowburn {

namespace {

Result<EthtoolStats> ethtool_stats(const FabricSamplerOptions& options, const std::string& netdev) {
  if (options.ethtool_dir.empty()) return read_ethtool_stats(netdev);
  auto text = read_file(options.ethtool_dir / netdev);
  if (!text) return text.error();
  auto stats = parse_ethtool_dump(*text);
  if (!stats) return make_error("{}: {}", (options.ethtool_dir / netdev).string(), stats.error().message);
  return stats;
}

bool merge_ethtool(const FabricSamplerOptions& options, NicSample& sample) {
  auto stats = ethtool_stats(options, sample.netdev);
  if (!stats) {
    sample.notes.push_back(fmt::format("{}: ethtool statistics: {}", sample.netdev, stats.error().message));
    return false;
  }
  for (auto& [name, value] : *stats) sample.counters.emplace(name, value);  // sysfs names win a clash
  return true;
}

}  // namespace

FabricSnapshot sample_fabric(const FabricSamplerOptions& options, uint64_t now_ns) {
  FabricSnapshot snapshot;
  snapshot.ts_ns = now_ns;
  snapshot.nics = read_rdma_ports(options.sysfs_root, options.nics);
  if (options.ethtool)
    for (NicSample& sample : snapshot.nics)
      if (!sample.netdev.empty()) merge_ethtool(options, sample);
  // An interface that cannot be read is left out: the monitor reports it
  // gone (and back) rather than comparing against nothing.
  for (const std::string& netdev : options.netdevs) {
    NicSample sample = netdev_sample(options.sysfs_root, netdev);
    if (options.ethtool ? merge_ethtool(options, sample)
                        : std::filesystem::exists(options.sysfs_root / "class/net" / netdev))
      snapshot.nics.push_back(std::move(sample));
  }
  return snapshot;
}

}  // namespace slowburn
