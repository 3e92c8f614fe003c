#include "demo/torch_job.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "probes/resolver.h"
#include "procfs/ranks.h"

namespace slowburn {

namespace {
// A port nobody listens on now, for the job's rendezvous store.
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 29500;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}
}  // namespace

std::optional<std::string> find_libexec(const std::string& name) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  auto dir = self.parent_path();
  for (const auto& candidate : {dir / "libexec" / name, dir / "../libexec/slowburn" / name, dir / "../libexec" / name})
    if (access(candidate.c_str(), R_OK) == 0) return std::filesystem::weakly_canonical(candidate, ec).string();
  return std::nullopt;
}

std::vector<std::string> ddp_workload_args(int slow_rank, double slow_ms, int group_size, double max_seconds) {
  std::vector<std::string> args = {"--seconds", fmt::format("{}", max_seconds)};
  if (slow_rank >= 0)
    args.insert(args.end(), {"--slow-rank", std::to_string(slow_rank), "--slow-ms", fmt::format("{}", slow_ms)});
  if (group_size > 1) args.insert(args.end(), {"--group-size", std::to_string(group_size)});
  return args;
}

std::vector<int32_t> TorchJob::pids() const {
  std::vector<int32_t> pids;
  for (const RankIdentity& r : ranks_) pids.push_back(r.pid);
  return pids;
}

int TorchJob::stop() {
  for (Subprocess& p : processes_) p.signal(SIGTERM);
  int clean = 0;
  for (Subprocess& p : processes_) {
    auto status = p.wait_for(std::chrono::milliseconds(10000));
    if (!status) status = p.terminate();
    clean += status == 0;
  }
  return clean;
}

Result<TorchJob> TorchJob::launch(const TorchJobOptions& o, double timeout_s) {
  if (access(o.python.c_str(), X_OK) != 0)
    return make_error(
        "{} is missing: the PyTorch workload needs Debian's python3 with python3-torch "
        "(apt-get install python3-torch, or make deps)",
        o.python);
  if (o.script.empty() || access(o.script.c_str(), R_OK) != 0)
    return make_error("the PyTorch workload {} is missing: run make", o.script);
  int port = o.master_port ? o.master_port : free_port();
  std::string run_id = fmt::format("slowburn-{:08x}", std::random_device{}());
  std::vector<Subprocess> processes;
  for (int r = 0; r < o.ranks; ++r) {
    std::vector<std::string> argv = o.prefix ? o.prefix(r) : std::vector<std::string>{};
    argv.insert(argv.end(), {o.python, o.script});
    argv.insert(argv.end(), o.args.begin(), o.args.end());
    // What torchrun sets (torch.distributed.run), and a run id that names the job.
    std::vector<std::string> env = {fmt::format("RANK={}", r),
                                    fmt::format("LOCAL_RANK={}", r),
                                    fmt::format("WORLD_SIZE={}", o.ranks),
                                    fmt::format("LOCAL_WORLD_SIZE={}", o.ranks),
                                    "MASTER_ADDR=" + o.master_addr,
                                    fmt::format("MASTER_PORT={}", port),
                                    "TORCHELASTIC_RUN_ID=" + run_id,
                                    "OMP_NUM_THREADS=1"};
    env.insert(env.end(), o.extra_env.begin(), o.extra_env.end());
    std::string log = o.log_dir.empty() ? "/dev/null" : fmt::format("{}/rank-{}.log", o.log_dir, r);
    auto child = Subprocess::spawn(argv, {log, env});
    if (!child) return child.error();
    processes.push_back(std::move(*child));
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<RankIdentity> ranks;
    for (Subprocess& p : processes) {
      if (auto status = p.poll())
        return make_error("a rank of the PyTorch job exited with status {} before it started (logs in {})", *status,
                          o.log_dir.empty() ? std::string("/dev/null") : o.log_dir);
      auto rank = read_rank(o.proc_root, p.pid());
      auto maps = read_process_maps(o.proc_root, p.pid());
      // The interpreter starts first; the rank is ready to trace once torch has loaded gloo.
      if (rank && maps && (find_library(*maps, "libgloo.so") || find_library(*maps, "libtorch_cpu.so")))
        ranks.push_back(std::move(*rank));
    }
    if (static_cast<int>(ranks.size()) == o.ranks) return TorchJob(std::move(processes), std::move(ranks));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return make_error("the {} ranks of the PyTorch job did not load torch within {:.0f} s", o.ranks, timeout_s);
}

}  // namespace slowburn
