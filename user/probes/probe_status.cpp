#include "probes/probe_status.h"

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

ProbeState probe_state_named(std::string_view name) {
  for (ProbeState s : {ProbeState::attached, ProbeState::failed})
    if (name == probe_state_name(s)) return s;
  return ProbeState::unavailable;
}

}  // namespace slowburn
