// Attaching many probes' sites in one library as one batch (one link set:
// fewer links, one RCU wait to detach), and, when the kernel refuses the
// batch, each probe alone so that each failure is pinned on its probe.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/error.h"
#include "loader/uprobe_links.h"

namespace slowburn {

// `member_sites[i]` are probe i's sites; `attach` attaches a set of sites
// (all or nothing) and keeps what holds them. Returns, per member, nullopt
// when it is attached, else the kernel's error for it alone.
std::vector<std::optional<Error>> attach_batch(const std::vector<std::vector<UprobeSite>>& member_sites,
                                               const std::function<Result<void>(std::span<const UprobeSite>)>& attach);

}  // namespace slowburn
