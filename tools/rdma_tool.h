// What the RDMA tools (qp, ib) share: options, where to attach (processes
// by -p, the node's rank processes, or a library file system-wide), and
// attaching a program's probes with a reported state for each.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rank_identity.h"
#include "probes/resolver.h"
#include "rdma/ib_connections.h"
#include "sinks/sink.h"

namespace slowburn::cli {

struct RdmaToolArgs {
  bool json = false;
  double duration_s = 0;  // 0: until Ctrl-C (or every traced process exited)
  double interval_s = 0;  // 0: print at the end only
  std::vector<int32_t> pids;
  std::string lib;  // attach system-wide in this file
  std::string proc_root = "/proc";
  std::string sysfs_root = "/sys";
};

void add_rdma_options(CLI::App* sub, RdmaToolArgs& args, bool interval, const std::string& kinds);

struct RdmaTargets {
  std::vector<RankIdentity> ranks;          // every rank process found (for pid -> rank)
  std::vector<int32_t> pids;                // processes attached to; empty for system-wide
  std::map<int32_t, RankIdentity> rank_of;  // by pid
  size_t attached = 0;                      // probes attached
  size_t failed = 0;                        // of the others: present, but the attach failed (an error, not absent)
  std::map<std::string, size_t> why_not;    // each reason a probe was not attached, and how often
};

// Nothing attached: the error names each reason (a text sink prints probe
// states only with the tables, so "see above" would point at nothing) and
// what to do (`fix`). Nothing to watch (exit 2) when every probe was
// unavailable (no such library or symbol); an error (exit 1) when an attach
// failed (docs/cli.md).
Error nothing_attached(const RdmaTargets& targets, const std::string& what, const std::string& fix);

using AttachFn = std::function<Result<void>(const ProbeResolution&, int32_t pid)>;

// Attaches `probes` with `attach`: in each -p process; else system-wide in
// --lib or, when `default_lib` names one, that library; else in every rank
// process. Reports every probe's state to the sink.
Result<RdmaTargets> attach_rdma_probes(const RdmaToolArgs& args, const std::vector<const ProbeSpec*>& probes,
                                       const std::string& default_lib, const AttachFn& attach, Sink& sink);

std::optional<int> rank_for(const RdmaTargets& targets, uint32_t pid);

// The latency fields an `ib` and a `qp_latency` line share: latency_mean_us,
// latency_p50_us_max, latency_p99_us_max (log2 bounds), z, slow.
nlohmann::json latency_json(const IbConnectionView& view);
// A log2 quantile bound in a table: "255 us", or "-".
std::string bound_text(std::optional<uint64_t> bound_us);

}  // namespace slowburn::cli
