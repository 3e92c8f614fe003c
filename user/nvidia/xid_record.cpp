#include "nvidia/xid_record.h"

namespace slowburn {

Result<XidEvent> decode_xid_record(const TracepointFormat& format, std::span<const std::byte> record) {
  RecordView view(format, record);
  auto dev = view.string("dev");
  auto code = view.unsigned_value("error_code");
  if (!dev || !code)
    return make_error("nvidia:nvidia_dev_xid record without dev or error_code ({} bytes): format mismatch",
                      record.size());
  XidEvent event;
  // The tracepoint carries the whole BDF ("0000:3b:00.0"); the log line drops the function.
  event.pci = *dev;
  event.code = static_cast<int>(*code);
  parse_xid_message(view.string("msg").value_or(""), event);
  return event;
}

}  // namespace slowburn
