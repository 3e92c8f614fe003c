// libFuzzer target for `ethtool -S` captures (net/ethtool_dump.h), the
// replay input of `slowburn fabric --ethtool-dir`: any text, no crash, no
// hang, no out-of-bounds read (ASan and UBSan, `make fuzz`); a capture is
// statistics with names, or an error that says why it is not one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "net/ethtool_dump.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto stats = slowburn::parse_ethtool_dump(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!stats) {
    if (stats.error().message.empty()) std::abort();
    return 0;
  }
  if (stats->empty()) std::abort();
  for (const auto& [name, value] : *stats)
    if (name.empty()) std::abort();
  return 0;
}
