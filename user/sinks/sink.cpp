#include "sinks/sink.h"

namespace slowburn {

std::string_view probe_state_name(ProbeState state) {
  switch (state) {
    case ProbeState::attached:
      return "attached";
    case ProbeState::unavailable:
      return "unavailable";
    case ProbeState::failed:
      return "failed";
  }
  return "?";
}

}  // namespace slowburn
