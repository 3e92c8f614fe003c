// The state every probe and source ends a run in: attached, unavailable
// (with the precise reason) or failed (with the kernel's error).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/rank_identity.h"
#include "probes/resolver.h"

namespace slowburn {

enum class ProbeState { attached, unavailable, failed };
std::string_view probe_state_name(ProbeState state);
// Its inverse (a recording's probe_states); anything else is unavailable.
ProbeState probe_state_named(std::string_view name);

struct ProbeStatus {
  std::string probe;
  std::optional<RankIdentity> rank;  // absent for a library-wide attachment
  int32_t pid = 0;                   // 0: every process
  ProbeState state = ProbeState::unavailable;
  std::string library;
  std::vector<AttachSite> sites;
  std::string detail;  // why unavailable / failed
};

}  // namespace slowburn
