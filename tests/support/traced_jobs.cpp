#include "support/traced_jobs.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/subprocess.h"
#include "sinks/json_sink.h"
#include "support/test_support.h"

namespace slowburn::testing {

uint64_t runq_wait_ns(int32_t pid) {
  std::ifstream in(fmt::format("/proc/{}/schedstat", pid));
  uint64_t ran = 0, waited = 0;
  in >> ran >> waited;
  return waited;
}

NodeTicks node_ticks() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  NodeTicks t;
  t.busy = user + nice + system + irq + softirq + steal;
  t.total = t.busy + idle + iowait;
  return t;
}

uint64_t process_ticks(int32_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  std::getline(in, line);
  auto close = line.rfind(')');  // the command may hold spaces and parentheses
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return utime + stime;
}

namespace {
// The CPU time of `pids` and of this process, per pid.
std::map<int32_t, uint64_t> ours_ticks(const std::vector<int32_t>& pids) {
  std::map<int32_t, uint64_t> ticks{{getpid(), process_ticks(getpid())}};
  for (int32_t pid : pids) ticks[pid] = process_ticks(pid);
  return ticks;
}
}  // namespace

CpuWatch::CpuWatch(std::vector<int32_t> pids) : pids_(std::move(pids)), node_(node_ticks()), ours_(ours_ticks(pids_)) {}

// What went to anything else over the span, or nullopt where a watched
// process ended in it (its time is then unknown). mpirun and its helpers
// count as others: they idle while the job runs (an idle node reads ~0.5%).
std::optional<double> CpuWatch::others_share() const {
  NodeTicks after = node_ticks();
  uint64_t ours = 0;
  for (const auto& [pid, ticks] : ours_ticks(pids_)) {
    uint64_t was = ours_.at(pid);
    if (ticks == 0 || ticks < was) return std::nullopt;
    ours += ticks - was;
  }
  if (after.total <= node_.total || after.busy < node_.busy) return std::nullopt;
  uint64_t busy = after.busy - node_.busy;
  return static_cast<double>(busy - std::min(busy, ours)) / static_cast<double>(after.total - node_.total);
}

void record_others_cpu_share(const std::optional<double>& share) {
  // In the test's XML: scripts/run-tests.sh prints its median over the
  // suite and its value for each failed test.
  ::testing::Test::RecordProperty("others_cpu_share", share ? fmt::format("{:.3f}", *share) : "unknown");
}

Traced trace(const std::vector<int32_t>& pids, const std::vector<std::string>& probes, double seconds,
             uint64_t window_ns) {
  DetectorConfig detector;
  detector.window_ns = window_ns;
  return trace(pids, probes, seconds, detector);
}

Traced trace(const std::vector<int32_t>& pids, const std::vector<std::string>& probes, double seconds,
             const DetectorConfig& detector, const std::function<void(const CallEvent&, const CallComm&)>& on_call) {
  Traced out;
  TraceOptions options;
  options.detector = detector;
  options.on_call = on_call;
  options.pids = pids;
  options.probe_patterns = probes;
  options.duration_s = seconds;
  options.node.hardware = false;
  options.node.rdma = false;
  std::ostringstream json;
  JsonSink sink(json, "test", 0);
  std::atomic<bool> stop{false};
  std::map<int32_t, uint64_t> waited_before;
  for (int32_t pid : pids) waited_before[pid] = runq_wait_ns(pid);
  CpuWatch cpu(pids);
  auto began = std::chrono::steady_clock::now();
  auto result = run_trace(options, sink, stop);
  double span_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - began).count();
  out.others_cpu_share = cpu.others_share();
  record_others_cpu_share(out.others_cpu_share);
  out.span_ns = span_ns;
  out.json = json.str();
  for (int32_t pid : pids) out.runq_share[pid] = static_cast<double>(runq_wait_ns(pid) - waited_before[pid]) / span_ns;
  EXPECT_TRUE(result.ok()) << result.error().message;
  if (!result) return out;
  out.result = std::move(*result);
  for (const Finding& f : out.result.verdict.stragglers) out.named.insert(f.culprit.rank);
  for (const Finding& f : out.result.summary.findings) out.summaries += "finding: " + f.summary + "\n";
  for (const Episode& e : out.result.verdict.episodes) out.summaries += "episode: " + e.summary + "\n";
  for (const Finding& f : out.result.verdict.stragglers) out.summaries += "verdict: " + f.summary + "\n";
  for (const Withheld& w : out.result.verdict.withheld) out.summaries += "withheld: " + w.summary + "\n";
  // Said in the log: how often the scheduler rule withholds a name is worth seeing.
  for (const Withheld& w : out.result.verdict.withheld) std::cout << "withheld: " << w.summary << "\n";
  if (!out.result.verdict.judged) out.summaries += "not judged: " + out.result.verdict.reason + "\n";
  return out;
}

std::optional<std::string> workload(const std::string& name) {
  std::string path = workload_path(name);
  if (!std::filesystem::exists(path)) return std::nullopt;
  return path;
}

namespace {
// The demo workload under `launcher`: `program` its argv, laid out in groups of `tp`.
std::optional<MpiJob> launch_workload(MpiLauncher launcher, std::vector<std::string> program, int ranks, int tp,
                                      const TempDir& dir, const std::vector<std::string>& extra) {
  MpiJobOptions options;
  options.launcher = launcher;
  options.program = std::move(program);
  if (tp > 1) options.program.insert(options.program.end(), {"--tp", std::to_string(tp)});
  options.program.insert(options.program.end(), extra.begin(), extra.end());
  options.ranks = ranks;
  options.log_path = (dir / "mpirun.log").string();
  auto job = MpiJob::launch(options);
  EXPECT_TRUE(job.ok()) << job.error().message;
  if (!job) return std::nullopt;
  return std::move(*job);
}
}  // namespace

std::optional<MpiJob> mpi_job(int ranks, int tp, int slow_rank, const TempDir& dir, double slowdown, double compute_us,
                              const std::vector<std::string>& extra) {
  return launch_workload(MpiLauncher::open_mpi,
                         demo_workload_argv(*workload("slowburn-mpi-workload"), slow_rank, slowdown, compute_us, 90),
                         ranks, tp, dir, extra);
}

std::optional<MpiJob> mpich_job(int ranks, int tp, int slow_rank, const TempDir& dir, double slowdown,
                                const std::vector<std::string>& extra) {
  return launch_workload(MpiLauncher::mpich,
                         demo_workload_argv(target_path("mpich-workload").string(), slow_rank, slowdown, 3000, 90),
                         ranks, tp, dir, extra);
}

int32_t pid_of_rank(const std::vector<RankIdentity>& ranks, int rank) {
  for (const RankIdentity& r : ranks)
    if (r.rank == rank) return r.pid;
  return 0;
}

bool pin(int32_t pid, int cpu) {
  auto taskset = Subprocess::spawn({"taskset", "-a", "-p", "-c", std::to_string(cpu), std::to_string(pid)});
  return taskset && taskset->wait_for(std::chrono::seconds(10)) == 0;
}

const Finding* named_finding(const Traced& t, int rank) {
  for (const Finding& f : t.result.verdict.stragglers)
    if (f.culprit.rank == rank) return &f;
  return nullptr;
}

std::string host_events(const Traced& t) {
  std::string out;
  for (const DeviceEvent& e : t.result.device_events)
    if (e.type.starts_with("host.")) out += "\nevent: " + e.summary;
  return out;
}

std::string window_rows(const Traced& t, int rank) {
  std::string out;
  std::istringstream lines(t.json);
  std::string line;
  auto field = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && !j[key].is_null() ? j[key].dump() : std::string("-");
  };
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("kind", "") != "window" || j.value("rank", -1) != rank) continue;
    out += fmt::format(
        "\nwindow {:.1f}: calls {} after_last_arrival_ns {} last {} oncpu {} runq {} transport {} "
        "cost_share {} inside_flagged {} flagged {}",
        j.value("window_start", 0.0), field(j, "calls"), field(j, "after_last_arrival_ns"), field(j, "last_fraction"),
        field(j, "inside_oncpu_share"), field(j, "inside_runq_share"), j.contains("inside_transport") ? "yes" : "no",
        field(j, "inside_cost_share"), field(j, "inside_flagged"), field(j, "flagged"));
  }
  return out;
}

}  // namespace slowburn::testing
