// libFuzzer target for the Xid / SXid line parser: any bytes, no crash, no
// hang, no out-of-bounds read (built with ASan and UBSan by `make fuzz`),
// and a parsed line always carries a non-negative code.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "nvidia/xid.h"
#include "nvidia/xid_catalog.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  auto event = slowburn::parse_xid_line(line);
  if (event) {
    if (event->code < 0) std::abort();
    if (!slowburn::looks_like_xid_line(line)) std::abort();  // the parser accepts only what the filter passes
    (void)slowburn::xid_info(event->code, event->message);
  }
  return 0;
}
