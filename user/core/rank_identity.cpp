#include "core/rank_identity.h"

#include <fmt/format.h>

namespace slowburn {

std::string rank_label(const RankIdentity& id) { return fmt::format("rank {} (pid {})", id.rank, id.pid); }

}  // namespace slowburn
