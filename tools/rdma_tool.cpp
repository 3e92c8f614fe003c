#include "tools/rdma_tool.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>

#include "cli/options.h"
#include "core/strings.h"
#include "loader/attach_probes.h"
#include "procfs/ranks.h"

namespace slowburn::cli {

void add_rdma_options(CLI::App* sub, RdmaToolArgs& args, bool interval, const std::string& kinds) {
  add_json(sub, args.json, kinds);
  add_duration(sub, args.duration_s, "trace");
  if (interval) add_interval(sub, args.interval_s, "tables", "at the end only");
  add_pids(sub, args.pids, "Trace only these processes");
  sub->add_option("--lib", args.lib, "Attach system-wide in this library file (every process that maps it)");
  sub->add_option("--procfs-root", args.proc_root, "procfs to find rank processes in")
      ->capture_default_str()
      ->check(root_directory());
  sub->add_option("--sysfs-root", args.sysfs_root, "sysfs to join NICs to PCI devices")
      ->capture_default_str()
      ->check(root_directory());
}

Result<RdmaTargets> attach_rdma_probes(const RdmaToolArgs& args, const std::vector<const ProbeSpec*>& probes,
                                       const std::string& default_lib, const AttachFn& attach, Sink& sink) {
  RdmaTargets targets;
  targets.ranks = discover_ranks(args.proc_root, getpid());
  for (const RankIdentity& r : targets.ranks) targets.rank_of[r.pid] = r;
  SymbolCache cache;
  auto report = [&](const ProbeResolution& r, int32_t pid) {
    std::optional<RankIdentity> rank;
    if (auto it = targets.rank_of.find(pid); it != targets.rank_of.end()) rank = it->second;
    ProbeStatus status = attach_with_status(r, pid, rank, attach);
    targets.attached += status.state == ProbeState::attached;
    targets.failed += status.state == ProbeState::failed;
    if (status.state != ProbeState::attached) targets.why_not[status.detail] += 1;
    sink.probe_status(status);
  };

  std::string lib = args.lib;
  if (lib.empty() && args.pids.empty() && !default_lib.empty()) {
    auto found = find_library_file(default_lib);
    if (!found) return nothing_to_watch("{}", found.error().message);  // no such library on this node
    lib = *found;
  }
  if (!lib.empty()) {
    if (access(lib.c_str(), R_OK) != 0) return make_sys_error(errno, "cannot read " + lib);
    for (const ProbeSpec* spec : probes) report(resolve_in_file(*spec, lib, cache), -1);
    return targets;
  }
  std::vector<int32_t> pids = args.pids;
  if (pids.empty())
    for (const RankIdentity& r : targets.ranks) pids.push_back(r.pid);
  if (pids.empty())
    return nothing_to_watch(
        "no rank processes found on this node (no OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID or "
        "RANK in any environment); give -p PID or --lib PATH");
  for (int32_t pid : pids) {
    auto maps = read_process_maps(args.proc_root, pid);
    if (!maps) return make_error("process {}: {} (has it exited?)", pid, maps.error().message);
    targets.pids.push_back(pid);
    for (const ProbeSpec* spec : probes) report(resolve_in_process(*spec, args.proc_root, pid, *maps, cache), pid);
  }
  return targets;
}

Error nothing_attached(const RdmaTargets& targets, const std::string& what, const std::string& fix) {
  std::vector<std::string> reasons;
  for (const auto& [reason, count] : targets.why_not)
    reasons.push_back(count > 1 ? fmt::format("{} ({} probes)", reason, count) : reason);
  std::string where =
      targets.pids.empty() ? std::string("system-wide") : fmt::format("in {} process(es)", targets.pids.size());
  Error e = make_error("no {} probe could be attached {}: {}; {}", what, where,
                       reasons.empty() ? std::string("no reason reported") : join(reasons, "; "), fix);
  e.nothing_to_watch = targets.failed == 0;
  return e;
}

nlohmann::json latency_json(const IbConnectionView& v) {
  auto bound = [](std::optional<uint64_t> b) { return b ? nlohmann::json(*b) : nlohmann::json(nullptr); };
  return {{"latency_mean_us", v.mean_latency_ns / 1e3},
          {"latency_p50_us_max", bound(v.stats->latency.quantile_bound(0.5))},
          {"latency_p99_us_max", bound(v.stats->latency.quantile_bound(0.99))},
          {"z", v.z ? nlohmann::json(*v.z) : nlohmann::json(nullptr)},
          {"slow", v.slow}};
}

std::string bound_text(std::optional<uint64_t> bound_us) {
  return bound_us ? fmt::format("{} us", *bound_us) : std::string("-");
}

std::optional<int> rank_for(const RdmaTargets& targets, uint32_t pid) {
  auto it = targets.rank_of.find(static_cast<int32_t>(pid));
  if (it == targets.rank_of.end()) return std::nullopt;
  return it->second.rank;
}

}  // namespace slowburn::cli
