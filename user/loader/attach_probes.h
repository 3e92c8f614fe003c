// Attaching resolved probes to one process, with a state for each probe.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "core/rank_identity.h"
#include "loader/callpair_program.h"
#include "probes/probe_status.h"
#include "probes/resolver.h"

namespace slowburn {

// The probe's sites in its resolved library, each with the probe's cookie.
std::vector<UprobeSite> uprobe_sites(const ProbeResolution& resolution);

// Attaches every resolved probe in process `pid` (-1: every process),
// batching the sites of one file into one attachment; when a batch fails,
// its probes are retried one by one so each failure is pinned on its probe.
// Returns one state per resolution, in order: attached, unavailable (not
// resolved: its reason) or failed (the kernel's error).
std::vector<ProbeStatus> attach_probes(CallpairProgram& program, int32_t pid, const std::optional<RankIdentity>& rank,
                                       const std::vector<ProbeResolution>& resolutions);

// One resolved probe of a program with its own attach (the RDMA programs):
// unavailable with the resolution's reason, failed with attach's error, or
// attached.
ProbeStatus attach_with_status(const ProbeResolution& resolution, int32_t pid, const std::optional<RankIdentity>& rank,
                               const std::function<Result<void>(const ProbeResolution&, int32_t)>& attach);

}  // namespace slowburn
