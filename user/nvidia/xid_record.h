// A raw nvidia:nvidia_dev_xid record (driver 575.51.02+) -> XidEvent, decoded
// through the running driver's tracefs format. The fields come from
// kernel-open/nvidia/nv-tracepoint.h: __string(dev, pci_name(pdev)),
// __field(u32, error_code), __string(msg, msg), where msg is the message
// nv_report_error() formats, the same text the kernel-log line carries after
// the code. Pure: format and bytes in, event out.
#pragma once

#include <cstddef>
#include <span>

#include "core/error.h"
#include "nvidia/xid.h"
#include "tracefs/format.h"

namespace slowburn {

Result<XidEvent> decode_xid_record(const TracepointFormat& format, std::span<const std::byte> record);

}  // namespace slowburn
