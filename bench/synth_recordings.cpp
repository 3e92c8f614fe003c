// Writes the recordings of a synthetic multi-node job, one per node, through
// the tracer's own Recorder: what `slowburn analyze` is timed on in
// bench/record.sh (section 13). A barrier-synchronised job: every step each
// rank computes, then enters one all-reduce that releases every rank when
// the last arrives. Each node's clock is skewed (tens of ms, both signs) and
// its tracer starts a few steps late, as on a real cluster.
//
//   synth_recordings OUT_DIR RANKS RANKS_PER_NODE SECONDS [STEP_MS] [SLOW_RANK] [SLOWDOWN] [NOISE] [DRIFT_PPM]
//                    [RAMP_S] [SEED]
//
// SLOWDOWN: the slow rank's compute multiplier (1.5); NOISE: each compute
// step's standard deviation as a share of the step (0.01); DRIFT_PPM: each
// node's clock also drifts, by up to this many ppm either way (0); RAMP_S:
// the multiplier grows from 1 to SLOWDOWN over this many seconds of the
// job, then stays (0: SLOWDOWN from the start); SEED: the noise's (42).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "probes/catalog.h"
#include "record/recorder.h"
#include "record/recording_sink.h"

using namespace slowburn;

namespace {

int32_t pid_of(int rank) { return 10'000 + rank; }

// Every node re-runs the same simulation (same seed) and keeps its own
// ranks' calls: no node's calls wait in memory for another's writer.
struct Shape {
  int ranks = 0, per_node = 0, steps = 0;
  double step_ns = 0;
  int slow_rank = -1;
  double slowdown = 1.5, noise_share = 0.01, drift_ppm = 0, ramp_s = 0;
  uint64_t seed = 42;
  // The slow rank's multiplier at step s (t: the job's time then).
  double multiplier(double t_ns) const {
    if (ramp_s <= 0) return slowdown;
    return 1.0 + (slowdown - 1.0) * std::min(1.0, t_ns / (ramp_s * 1e9));
  }
};

int record_node(const std::filesystem::path& dir, int node, const Shape& shape) {
  const int ranks = shape.ranks, per_node = shape.per_node, steps = shape.steps, slow_rank = shape.slow_rank;
  const double step_ns = shape.step_ns, noise_share = shape.noise_share, drift_ppm = shape.drift_ppm;
  std::string host = fmt::format("node-{:03}", node);
  auto recorder = Recorder::create(dir / (host + ".sbr"), {host});
  if (!recorder) {
    fmt::print(stderr, "{}\n", recorder.error().message);
    return 1;
  }
  RecordingSink sink(**recorder);
  const ProbeSpec* allreduce = find_probe("mpi.allreduce");
  int first = node * per_node, last = std::min(ranks, first + per_node);
  for (int r = first; r < last; ++r) {
    ProbeStatus s;
    s.probe = allreduce->name;
    s.pid = pid_of(r);
    s.state = ProbeState::attached;
    RankIdentity id;
    id.pid = s.pid;
    id.rank = r;
    id.local_rank = r - first;
    id.world_size = ranks;
    id.job = "synthetic";
    id.launcher = "openmpi";
    id.host = host;
    s.rank = id;
    sink.probe_status(s);
  }
  auto comm = std::make_shared<CommunicatorInfo>();
  comm->key = "job:synthetic";
  comm->label = "all ranks";
  comm->size = ranks;

  const int64_t skew_ns = (static_cast<int64_t>(node) * 7919 % 200 - 100) * 1'000'000;
  const int skipped = (node * 3) % 17;  // its tracer started that many steps late
  // Its drift, spread over [-drift_ppm, +drift_ppm] by node.
  const double drift = drift_ppm * 1e-6 * (static_cast<double>((node * 31) % 101) / 50.0 - 1.0);
  auto on_node = [&](double t) { return static_cast<uint64_t>(static_cast<int64_t>(t + drift * (t - 1e9)) + skew_ns); };
  std::mt19937_64 rng(shape.seed);
  std::normal_distribution<double> noise(0, step_ns * noise_share);
  std::uniform_real_distribution<double> jitter(0, 20e3);
  std::vector<double> prev_exit(static_cast<size_t>(ranks), 1e9), entry(static_cast<size_t>(ranks));
  for (int s = 0; s < steps; ++s) {
    // A day of a job is written faster than SQLite takes it: wait for the
    // writer rather than let the recorder drop calls (it never waits).
    if (s % 64 == 0)
      while ((*recorder)->queued_calls() > (1u << 18)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    for (int r = 0; r < ranks; ++r) {
      double compute = (r == slow_rank ? shape.multiplier(prev_exit[0] - 1e9) : 1.0) * step_ns + noise(rng);
      entry[static_cast<size_t>(r)] = prev_exit[static_cast<size_t>(r)] + std::max(1e3, compute);
    }
    double release = *std::max_element(entry.begin(), entry.end()) + 50e3;
    for (int r = 0; r < ranks; ++r) {
      double exit = release + jitter(rng);
      if (s >= skipped && r >= first && r < last) {
        CallEvent e;
        e.pid = e.tid = static_cast<uint32_t>(pid_of(r));
        e.probe_id = allreduce->id;
        e.seq = static_cast<uint64_t>(s - skipped + 1);
        e.entry_ns = on_node(entry[static_cast<size_t>(r)]);
        e.exit_ns = on_node(exit);
        (*recorder)->call(e, {comm, r, e.seq, false});
      }
      prev_exit[static_cast<size_t>(r)] = exit;
    }
  }
  if (auto done = (*recorder)->finish(); !done) {
    fmt::print(stderr, "{}: {}\n", host, done.error().message);
    return 1;
  }
  if ((*recorder)->dropped_calls()) {
    fmt::print(stderr, "{}: {} calls dropped by the recorder\n", host, (*recorder)->dropped_calls());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    fmt::print(stderr,
               "usage: {} OUT_DIR RANKS RANKS_PER_NODE SECONDS [STEP_MS] [SLOW_RANK] [SLOWDOWN] [NOISE] [DRIFT_PPM] "
               "[RAMP_S] [SEED]\n",
               argv[0]);
    return 2;
  }
  std::filesystem::path dir = argv[1];
  int ranks = std::atoi(argv[2]), per_node = std::atoi(argv[3]);
  double seconds = std::atof(argv[4]);
  double step_ms = argc > 5 ? std::atof(argv[5]) : 50;
  int slow_rank = argc > 6 ? std::atoi(argv[6]) : -1;
  double slowdown = argc > 7 ? std::atof(argv[7]) : 1.5;
  double noise_share = argc > 8 ? std::atof(argv[8]) : 0.01;
  double drift_ppm = argc > 9 ? std::atof(argv[9]) : 0;
  double ramp_s = argc > 10 ? std::atof(argv[10]) : 0;
  auto seed = static_cast<uint64_t>(argc > 11 ? std::atoll(argv[11]) : 42);
  if (ranks < 2 || per_node < 1 || seconds <= 0 || step_ms <= 0 || slowdown <= 0 || noise_share < 0 ||
      std::abs(drift_ppm) > 1000 || ramp_s < 0) {
    fmt::print(stderr,
               "RANKS >= 2, RANKS_PER_NODE >= 1, SECONDS, STEP_MS and SLOWDOWN > 0, NOISE >= 0, |DRIFT_PPM| <= 1000, "
               "RAMP_S >= 0\n");
    return 2;
  }
  std::filesystem::create_directories(dir);
  int nodes = (ranks + per_node - 1) / per_node;
  int steps = static_cast<int>(seconds * 1000 / step_ms);
  Shape shape{ranks, per_node, steps, step_ms * 1e6, slow_rank, slowdown, noise_share, drift_ppm, ramp_s, seed};
  for (int n = 0; n < nodes; ++n)
    if (int rc = record_node(dir, n, shape)) return rc;
  fmt::print("{} recordings, {} ranks, {} steps of {} ms\n", nodes, ranks, steps, step_ms);
  return 0;
}
