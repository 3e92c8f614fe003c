#include "engine/discover.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/strings.h"
#include "probes/resolver.h"
#include "procfs/ranks.h"

namespace slowburn {

namespace {
// Libraries a training job communicates through, supported or not: naming
// them tells a user why nothing was traced and what to ask for.
constexpr const char* kCommunicationLibraries[] = {
    "libmpi.so",    "libmpich.so", "libmpi_cray.so", "libmpi_mpifh.so",    "libnccl.so",
    "librccl.so",   "libgloo.so",  "libucc.so",      "libtorch_cpu.so",    "libtorch_cuda.so",
    "libc10d.so",   "libhorovod",  "libmlsl.so",     "libccl.so",          "libibverbs.so",
    "libfabric.so", "libucp.so",   "libcudart.so",   "libtorch_python.so",
};

bool is_communication_library(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  return std::any_of(std::begin(kCommunicationLibraries), std::end(kCommunicationLibraries),
                     [&](const char* stem) { return base.rfind(stem, 0) == 0; });
}

// "0-3", "0,2,5".
std::string rank_list(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  bool contiguous = !ranks.empty() && ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
  if (contiguous && ranks.size() > 2) return fmt::format("{}-{}", ranks.front(), ranks.back());
  std::vector<std::string> parts;
  for (int r : ranks) parts.push_back(std::to_string(r));
  return join(parts, ",");
}
}  // namespace

Result<std::vector<RankIdentity>> find_ranks(const std::vector<int32_t>& pids, const std::filesystem::path& proc_root) {
  std::vector<RankIdentity> ranks;
  if (!pids.empty()) {
    for (int32_t pid : pids) {
      auto rank = read_rank(proc_root, pid);
      if (!rank) return rank.error();
      ranks.push_back(std::move(*rank));
    }
    return ranks;
  }
  ranks = discover_ranks(proc_root, getpid());
  if (ranks.empty())
    return nothing_to_watch(
        "no rank processes found on this node (looked for {} in /proc/*/environ); start the job first, or "
        "name processes with --pid",
        rank_variable_names());
  return ranks;
}

std::vector<std::string> communication_libraries(const std::filesystem::path& proc_root, int32_t pid) {
  std::vector<std::string> found;
  auto maps = read_process_maps(proc_root, pid);
  if (!maps) return found;
  std::set<std::string> seen;
  for (const MapEntry& m : *maps) {
    if (m.path.empty() || !is_communication_library(m.path)) continue;
    std::string base = m.path.substr(m.path.rfind('/') + 1);
    if (seen.insert(base).second) found.push_back(base);
  }
  return found;
}

Error nothing_traced_error(const std::vector<RankIdentity>& ranks, const std::filesystem::path& proc_root) {
  // Ranks that load the same libraries, together.
  std::map<std::string, std::vector<int>> by_libraries;
  for (const RankIdentity& r : ranks) {
    auto libs = communication_libraries(proc_root, r.pid);
    by_libraries[libs.empty() ? std::string("no communication library") : join(libs, ", ")].push_back(r.rank);
  }
  std::vector<std::string> parts;
  for (const auto& [libs, rank_numbers] : by_libraries)
    parts.push_back(fmt::format("rank{} {} load{} {}", rank_numbers.size() > 1 ? "s" : "", rank_list(rank_numbers),
                                rank_numbers.size() > 1 ? "" : "s", libs));
  return nothing_to_watch(
      "nothing traced: {}; no collective probe (mpi.*, nccl.*, gloo.*) attached, so no straggler can be named. "
      "Try `slowburn catalog --pid {}` to see why each probe did not attach",
      join(parts, "; "), ranks.empty() ? 0 : ranks.front().pid);
}

}  // namespace slowburn
