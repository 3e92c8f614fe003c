// `ethtool -S IFACE` output, as captured from a node ("NIC statistics:"
// then "     name: value" lines), parsed back into statistics: the replay
// input of `slowburn fabric --ethtool-dir`. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "net/ethtool.h"

namespace slowburn {

// Lines that are not "name: unsigned number" are reported by line number,
// all at once, in the error; an empty capture is an error too.
Result<EthtoolStats> parse_ethtool_dump(std::string_view text);

}  // namespace slowburn
