// A network interface's driver statistics through the SIOCETHTOOL ioctl,
// what `ethtool -S` prints (no shelling out): ETHTOOL_GSSET_INFO for how
// many, ETHTOOL_GSTRINGS for their names, ETHTOOL_GSTATS for the values.
// In the calling thread's network namespace.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace slowburn {

using EthtoolStats = std::vector<std::pair<std::string, uint64_t>>;  // in the driver's order

Result<EthtoolStats> read_ethtool_stats(const std::string& ifname);

}  // namespace slowburn
