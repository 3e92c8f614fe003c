// slowburn ranks: the rank processes on this node, from their environment.
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/options.h"
#include "procfs/ranks.h"

namespace slowburn::cli {

namespace {
std::string or_dash(const std::optional<int>& v) { return v ? std::to_string(*v) : "-"; }
std::string or_dash(const std::string& v) { return v.empty() ? "-" : v; }
}  // namespace

Command add_ranks_command(CLI::App& app) {
  struct Args {
    bool json = false;
    std::string proc_root = "/proc";
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub =
      app.add_subcommand("ranks",
                         "List the rank processes on this node (OMPI_COMM_WORLD_*, PMIX_RANK, PMI_RANK, SLURM_PROCID, "
                         "RANK/LOCAL_RANK/WORLD_SIZE in /proc/PID/environ).\n\nExamples:\n"
                         "  slowburn ranks\n  slowburn ranks --json | jq 'select(.kind==\"rank\") | .pid'\n\n"
                         "Exit status: 0 ranks were found, 2 none (nothing to watch), 1 an error.");
  add_json(sub, args->json, "rank (one per rank), summary");
  sub->add_option("--procfs-root", args->proc_root, "procfs to read (a captured tree)")
      ->capture_default_str()
      ->check(root_directory());
  return {sub, [args] {
            auto ranks = discover_ranks(args->proc_root, getpid());
            std::string none = fmt::format("No rank processes found (looked for {}){}", rank_variable_names(),
                                           geteuid() != 0 ? "; not root: other users' processes are invisible" : "");
            if (args->json) {
              for (const RankIdentity& r : ranks) std::cout << rank_json(r).dump() << '\n';
              // Always one line: an empty output reads as a failure to run.
              nlohmann::json summary{{"kind", "summary"}, {"ranks", ranks.size()}};
              if (ranks.empty()) summary["note"] = none;
              std::cout << summary.dump() << '\n';
              return ranks.empty() ? kExitNothingToWatch : 0;
            }
            if (ranks.empty()) {
              std::cout << none << ".\n";
              return kExitNothingToWatch;
            }
            std::cout << fmt::format("{:>8} {:>5} {:>5} {:>5} {:<9} {:<12} {:<10} {:<10} {}\n", "PID", "RANK", "LOCAL",
                                     "SIZE", "LAUNCHER", "JOB", "GPUS", "NICS", "COMMAND");
            for (const RankIdentity& r : ranks)
              std::cout << fmt::format("{:>8} {:>5} {:>5} {:>5} {:<9} {:<12} {:<10} {:<10} {}\n", r.pid, r.rank,
                                       or_dash(r.local_rank), or_dash(r.world_size), r.launcher, or_dash(r.job),
                                       or_dash(r.cuda_visible_devices),
                                       or_dash(r.nccl_ib_hca.empty() ? r.ucx_net_devices : r.nccl_ib_hca), r.command);
            return 0;
          }};
}

}  // namespace slowburn::cli
