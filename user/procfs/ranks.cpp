#include "procfs/ranks.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "core/files.h"
#include "core/strings.h"

namespace slowburn {

namespace {

struct LauncherRule {
  const char* launcher;
  const char* rank_var;
  const char* required_var;  // must also be present (nullptr: none)
  const char* job_var;
};

// Most specific first: an OpenMPI job under Slurm has both OMPI_* and SLURM_*;
// the MPI rank is the one collectives use.
constexpr LauncherRule kLaunchers[] = {
    {"openmpi", "OMPI_COMM_WORLD_RANK", nullptr, "OMPI_MCA_ess_base_jobid"},
    {"pmix", "PMIX_RANK", nullptr, "PMIX_NAMESPACE"},
    {"pmi", "PMI_RANK", nullptr, "PMI_JOBID"},
    {"torchrun", "RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID"},
    {"slurm", "SLURM_PROCID", nullptr, "SLURM_JOB_ID"},
};

constexpr const char* kLocalRankVars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK", "MPI_LOCALRANKID",
                                          "LOCAL_RANK", "SLURM_LOCALID"};
constexpr const char* kWorldSizeVars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "WORLD_SIZE",
                                          "SLURM_NTASKS"};

// Ranks, pids: non-negative integers only.
std::optional<int> parse_int(std::string_view text) {
  auto value = parse_number<int>(text);
  if (!value || *value < 0) return std::nullopt;
  return value;
}

std::optional<int> first_int(const Environment& env, const auto& names) {
  for (const char* name : names) {
    auto it = env.find(name);
    if (it == env.end()) continue;
    if (auto value = parse_int(it->second)) return value;
  }
  return std::nullopt;
}

std::string env_or_empty(const Environment& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

std::string read_hostname(const std::filesystem::path& proc_root) {
  auto name = read_file(proc_root / "sys/kernel/hostname");
  if (!name) return {};
  return std::string(trim_right(*name));
}

std::optional<int32_t> parse_pid(const std::string& name) {
  auto pid = parse_int(name);
  if (!pid || *pid == 0) return std::nullopt;
  return static_cast<int32_t>(*pid);
}

}  // namespace

const char* rank_variable_names() {
  return "OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, RANK with WORLD_SIZE, SLURM_PROCID";
}

std::optional<RankIdentity> identify_rank(const Environment& env) {
  for (const LauncherRule& rule : kLaunchers) {
    auto it = env.find(rule.rank_var);
    if (it == env.end()) continue;
    if (rule.required_var && !env.contains(rule.required_var)) continue;
    auto rank = parse_int(it->second);
    if (!rank) continue;
    RankIdentity id;
    id.rank = *rank;
    id.launcher = rule.launcher;
    id.job = env_or_empty(env, rule.job_var);
    // A PMI or PMIx rank started by srun names its job by Slurm's ids when
    // the PMI library sets none.
    if (id.job.empty() && env.contains("SLURM_JOB_ID")) id.job = env_or_empty(env, "SLURM_JOB_ID");
    if (!id.job.empty() && id.job == env_or_empty(env, "SLURM_JOB_ID") && env.contains("SLURM_STEP_ID"))
      id.job += "." + env_or_empty(env, "SLURM_STEP_ID");
    id.local_rank = first_int(env, kLocalRankVars);
    id.world_size = first_int(env, kWorldSizeVars);
    id.cuda_visible_devices = env_or_empty(env, "CUDA_VISIBLE_DEVICES");
    id.nccl_ib_hca = env_or_empty(env, "NCCL_IB_HCA");
    id.ucx_net_devices = env_or_empty(env, "UCX_NET_DEVICES");
    return id;
  }
  return std::nullopt;
}

namespace {
struct ProcStat {
  char state = '?';
  int32_t ppid = 0;
};

std::optional<ProcStat> read_stat(const std::filesystem::path& proc_root, int32_t pid) {
  auto stat = read_file(proc_root / std::to_string(pid) / "stat");
  if (!stat) return std::nullopt;
  // "PID (comm) S PPID ...": fields follow the last ')', since comm may hold ')'.
  size_t paren = stat->rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat->size()) return std::nullopt;
  ProcStat parsed;
  parsed.state = (*stat)[paren + 2];
  std::string_view rest = std::string_view(*stat).substr(std::min(paren + 4, stat->size()));
  size_t space = rest.find(' ');
  if (auto ppid = parse_int(rest.substr(0, space))) parsed.ppid = *ppid;
  return parsed;
}
// Hydra (MPICH's mpiexec) gives its ranks no job id; its proxy on every
// node is started with the launcher's "--control-port HOST:PORT", one per
// mpiexec: the job's name on every node.
std::string hydra_job(const std::filesystem::path& proc_root, int32_t proxy) {
  auto raw = read_file(proc_root / std::to_string(proxy) / "cmdline");
  if (!raw) return {};
  std::vector<std::string> argv = split(*raw, '\0');
  if (argv.empty() || std::filesystem::path(argv[0]).filename() != "hydra_pmi_proxy") return {};
  for (size_t i = 1; i + 1 < argv.size(); ++i)
    if (argv[i] == "--control-port") return "hydra:" + argv[i + 1];
  return {};
}
}  // namespace

uint64_t process_start_ticks(const std::filesystem::path& proc_root, int32_t pid) {
  std::ifstream in(proc_root / std::to_string(pid) / "stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  // The command name (field 2) may hold spaces and parentheses: count from
  // the last ')'. Field 3 is the first after it; starttime is field 22.
  auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i)
    if (!(fields >> field)) return 0;
  uint64_t ticks = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), ticks);
  return ec == std::errc() && end == field.data() + field.size() ? ticks : 0;
}

bool process_alive(const std::filesystem::path& proc_root, int32_t pid) {
  auto stat = read_stat(proc_root, pid);
  return stat && stat->state != 'Z' && stat->state != 'X';
}

Result<RankIdentity> read_rank(const std::filesystem::path& proc_root, int32_t pid) {
  std::filesystem::path proc = proc_root / std::to_string(pid);
  if (!process_alive(proc_root, pid))
    return make_error("pid {} does not exist or has exited ({} not found)", pid, proc.string());
  auto environ = read_file(proc / "environ");
  if (!environ) {
    if (environ.error().sys_errno == EACCES || environ.error().sys_errno == EPERM)
      return geteuid() == 0 ? make_error(
                                  "{}: denied to root as well (the process is beyond what this root may inspect: "
                                  "another user namespace, or a ptrace restriction); give a rank's pid (slowburn ranks "
                                  "lists them)",
                                  environ.error().message)
                            : make_error("{} (run as root, or with CAP_SYS_PTRACE)", environ.error().message);
    return make_error("pid {}: {}", pid, environ.error().message);
  }
  auto cmdline = read_file(proc / "cmdline");
  std::string command = cmdline ? parse_cmdline(*cmdline) : std::string();
  auto identity = identify_rank(parse_environ(*environ));
  if (!identity)
    return make_error("pid {} ({}) is not a rank of a training job: none of {} is in its environment", pid,
                      command.empty() ? "?" : command, rank_variable_names());
  if (identity->job.empty() && identity->launcher == "pmi")
    if (auto stat = read_stat(proc_root, pid)) identity->job = hydra_job(proc_root, stat->ppid);
  identity->pid = pid;
  identity->command = std::move(command);
  identity->host = read_hostname(proc_root);
  return *identity;
}

std::vector<RankIdentity> discover_ranks(const std::filesystem::path& proc_root, int32_t exclude_pid) {
  std::vector<RankIdentity> ranks;
  std::map<int32_t, int32_t> parents;
  std::error_code ec;
  std::string host = read_hostname(proc_root);
  for (const auto& entry : std::filesystem::directory_iterator(proc_root, ec)) {
    auto pid = parse_pid(entry.path().filename().string());
    if (!pid || *pid == exclude_pid) continue;
    auto environ = read_file(entry.path() / "environ");
    if (!environ) continue;  // exited while scanning, or kernel thread
    auto identity = identify_rank(parse_environ(*environ));
    if (!identity) continue;
    auto stat = read_stat(proc_root, *pid);
    if (!stat || stat->state == 'Z' || stat->state == 'X') continue;
    if (identity->job.empty() && identity->launcher == "pmi") identity->job = hydra_job(proc_root, stat->ppid);
    identity->pid = *pid;
    parents[*pid] = stat->ppid;
    auto cmdline = read_file(entry.path() / "cmdline");
    if (cmdline) identity->command = parse_cmdline(*cmdline);
    identity->host = host;
    ranks.push_back(std::move(*identity));
  }
  // Children inherit the environment (a DataLoader worker, a shell the rank
  // spawned): keep only the topmost process of each (job, rank).
  std::map<int32_t, std::pair<std::string, int>> job_rank_by_pid;
  for (const RankIdentity& r : ranks) job_rank_by_pid[r.pid] = {r.job, r.rank};
  std::erase_if(ranks, [&](const RankIdentity& r) {
    auto parent = job_rank_by_pid.find(parents[r.pid]);
    return parent != job_rank_by_pid.end() && parent->second == std::pair(r.job, r.rank);
  });
  std::sort(ranks.begin(), ranks.end(), [](const RankIdentity& a, const RankIdentity& b) {
    return std::tie(a.job, a.rank, a.pid) < std::tie(b.job, b.rank, b.pid);
  });
  return ranks;
}

nlohmann::json rank_json(const RankIdentity& r) {
  auto opt = [](const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"kind", "rank"},
          {"pid", r.pid},
          {"rank", r.rank},
          {"local_rank", opt(r.local_rank)},
          {"world_size", opt(r.world_size)},
          {"launcher", r.launcher},
          {"job", r.job},
          {"host", r.host},
          {"command", r.command},
          {"cuda_visible_devices", r.cuda_visible_devices},
          {"nccl_ib_hca", r.nccl_ib_hca},
          {"ucx_net_devices", r.ucx_net_devices}};
}

}  // namespace slowburn
