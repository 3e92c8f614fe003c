#include "core/rank_identity.h"

#include <fmt/format.h>
#include <unistd.h>

namespace slowburn {

int32_t own_pid(const RankIdentity& id) { return id.node_pid ? id.node_pid : id.pid; }

std::string rank_label(const RankIdentity& id) { return fmt::format("rank {} (pid {})", id.rank, own_pid(id)); }

std::string rank_node_label(const RankIdentity& id) {
  if (id.host.empty()) return rank_label(id);
  return fmt::format("rank {} (pid {} on {})", id.rank, own_pid(id), id.host);
}

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

}  // namespace slowburn
