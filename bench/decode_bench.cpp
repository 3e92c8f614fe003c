// Throughput of the ring-buffer consumer's work per record: decoding alone,
// and decoding plus the straggler detector's ingest (the whole user-space
// path of `slowburn trace` per call). Google Benchmark, one thread.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "detect/straggler.h"
#include "engine/job_judges.h"
#include "events/decoder.h"
#include "slowburn/callpair.h"

using namespace slowburn;

namespace {

constexpr int kRanks = 8;

// Records as a 8-rank job produces them: one allreduce per step per rank.
std::vector<sb_call_event> make_records(size_t n) {
  std::vector<sb_call_event> records(n);
  for (size_t i = 0; i < n; ++i) {
    size_t step = i / kRanks, rank = i % kRanks;
    sb_call_event& e = records[i];
    e.hdr.type = SB_EVENT_CALL;
    e.hdr.version = SB_CALL_EVENT_VERSION;
    e.hdr.pid = e.hdr.tid = static_cast<uint32_t>(1000 + rank);
    e.probe_id = 1;
    e.seq = step + 1;
    e.entry_ns = 1'000'000'000 + step * 3'000'000 + rank * 1000;
    e.exit_ns = 1'000'000'000 + step * 3'000'000 + 100'000 + rank * 10;
    e.hdr.ts_ns = e.exit_ns;
  }
  return records;
}

void BM_Decode(benchmark::State& state) {
  auto records = make_records(1 << 16);
  EventDecoder decoder;
  size_t i = 0;
  uint64_t sum = 0;
  for (auto _ : state) {
    auto call = decoder.decode_call(std::as_bytes(std::span(&records[i], 1)));
    sum += call->exit_ns;
    i = (i + 1) & ((1 << 16) - 1);
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Decode);

void BM_DecodeAndDetect(benchmark::State& state) {
  size_t n = 1 << 20;
  auto records = make_records(n);
  EventDecoder decoder;
  // What a session runs per call: the communicator registry, then the detector.
  auto make_judges = [] {
    std::vector<RankIdentity> ranks;
    for (int r = 0; r < kRanks; ++r) ranks.push_back(RankIdentity{1000 + r, r, {}, {}, {}, {}, {}, {}, {}, {}});
    auto judges = std::make_unique<JobJudges>(
        DetectorConfig{}, std::vector<const ProbeSpec*>{find_probe(1)}, ranks,
        CommRegistry([](int32_t) { return nullptr; }, [](int32_t) { return MpiLibrary{}; }));
    for (int r = 0; r < kRanks; ++r) judges->attached(1, 1000 + r);
    return judges;
  };
  auto judges = make_judges();
  size_t i = 0;
  for (auto _ : state) {
    judges->on_call(*decoder.decode_call(std::as_bytes(std::span(&records[i], 1))));
    if (++i == n) {
      state.PauseTiming();
      judges->finish(records.back().exit_ns);
      i = 0;
      judges = make_judges();
      state.ResumeTiming();
    } else if (i % 4096 == 0) {
      judges->advance(records[i].exit_ns);  // the session advances every 100 ms; here every ~1.5 s of job time
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeAndDetect);

}  // namespace

BENCHMARK_MAIN();
