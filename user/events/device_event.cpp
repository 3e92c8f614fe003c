#include "events/device_event.h"

namespace slowburn {

std::string_view event_severity_name(EventSeverity severity) {
  switch (severity) {
    case EventSeverity::info:
      return "info";
    case EventSeverity::warning:
      return "warning";
    case EventSeverity::error:
      return "error";
    case EventSeverity::fatal:
      return "fatal";
  }
  return "info";
}

}  // namespace slowburn
