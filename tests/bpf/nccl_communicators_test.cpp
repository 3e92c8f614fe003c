// NCCL communicators on the stand-in libnccl (tests/targets/nccl_api_standin.c,
// nccl.h's signatures): four processes create a world communicator from one
// unique id, split it in pairs, destroy the pairs and split again. Traced by
// the real nccl.* probes, every call must land on its communicator, and the
// enqueues must align by (communicator, sequence number) — NCCL returns at
// enqueue, so no clock can line them up — and name the rank that enqueues
// late.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "core/subprocess.h"
#include "procfs/ranks.h"
#include "sinks/json_sink.h"
#include "support/test_support.h"
#include "trace/trace_session.h"

namespace slowburn::nccl_communicators_test {
namespace {

constexpr int kRanks = 4;

// The JSON sink, and a flag raised once the probes are attached.
class AttachedFlagSink : public JsonSink {
 public:
  using JsonSink::JsonSink;
  void probes_done(size_t attached, size_t processes) override {
    JsonSink::probes_done(attached, processes);
    attached_.store(true);
  }
  std::atomic<bool> attached_{false};
};
constexpr int kSteps = 1200;
constexpr int kSlowRank = 3;

TEST(NcclCommunicators, EachCallOnItsCommunicatorAlignedBySequence) {
  SKIP_UNLESS_ROOT();
  testing::TempDir dir;
  std::string id = fmt::format("{:016x}{:016x}", std::random_device{}(), std::random_device{}());
  std::vector<Subprocess> ranks;
  std::vector<int32_t> pids;
  for (int r = 0; r < kRanks; ++r) {
    auto child = Subprocess::spawn(
        {testing::target_path("nccl_ranks").string(), (dir / "go").string(), id, std::to_string(r),
         std::to_string(kRanks), std::to_string(kSteps), std::to_string(kSlowRank), "2000"},
        {"/dev/null",
         {fmt::format("RANK={}", r), fmt::format("WORLD_SIZE={}", kRanks), "TORCHELASTIC_RUN_ID=nccl-standin"}});
    ASSERT_TRUE(child) << child.error().message;
    pids.push_back(child->pid());
    ranks.push_back(std::move(*child));
  }
  // Past exec: until then a child is still this test binary.
  for (int32_t pid : pids)
    for (int i = 0; i < 500 && !read_rank("/proc", pid); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  TraceOptions options;
  options.pids = pids;
  options.probe_patterns = {"nccl.*"};
  options.duration_s = 60;  // the session ends when the ranks do
  options.node.hardware = false;
  options.node.rdma = false;
  std::ostringstream json;
  AttachedFlagSink sink(json, "test", 0);
  std::atomic<bool> stop{false}, done{false};
  // The communicators are made once the probes are attached: their creation is traced.
  std::thread go([&] {
    while (!sink.attached_.load() && !done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    testing::touch(dir / "go");
  });
  auto result = run_trace(options, sink, stop);
  done.store(true);
  go.join();
  for (Subprocess& r : ranks) EXPECT_EQ(r.wait_for(std::chrono::seconds(10)), 0);
  ASSERT_TRUE(result) << result.error().message;

  // World, two pairs, the two pairs made again: five NCCL communicators, named by their creation.
  std::map<std::string, CommunicatorRef> comms;
  for (const CommunicatorRef& c : result->communicators)
    if (c->backend == CommBackend::nccl) comms[c->key] = c;
  ASSERT_EQ(comms.size(), 5u) << json.str().substr(0, 2000);
  int worlds = 0;
  for (const auto& [key, c] : comms) {
    EXPECT_EQ(c->source, CommSource::creation) << key;
    if (c->size == kRanks) ++worlds;
  }
  EXPECT_EQ(worlds, 1);

  // Calls per (rank, communicator) from the window lines.
  std::map<std::pair<int, std::string>, uint64_t> calls;
  std::istringstream lines(json.str());
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == "window" && j["probe"] == "nccl.allreduce" && j["communicator"].is_object())
      calls[{j["rank"].get<int>(), j["communicator"]["key"].get<std::string>()}] += j["calls"].get<uint64_t>();
  }
  for (const auto& [key, c] : comms) {
    bool remade = key.find("#1") != std::string::npos;
    uint64_t expected = remade ? kSteps / 4 : kSteps;
    uint64_t total = 0;
    for (const auto& [rank_comm, n] : calls)
      if (rank_comm.second == key) total += n;
    uint64_t members = c->size == kRanks ? kRanks : kRanks / 2;
    EXPECT_EQ(total, expected * members) << key;
  }
  // Aligned by sequence number: every instance of every communicator.
  uint64_t instances = kSteps + 2 * kSteps + 2 * (kSteps / 4);
  EXPECT_EQ(result->summary.detector.aligned_by_sequence, instances);
  EXPECT_EQ(result->summary.detector.instances, instances);
  // The rank that enqueues late is named, on NCCL's enqueue times.
  std::set<int> named;
  for (const Finding& f : result->verdict.stragglers) named.insert(f.culprit.rank);
  EXPECT_EQ(named, std::set<int>{kSlowRank})
      << json.str().substr(json.str().size() > 3000 ? json.str().size() - 3000 : 0);
  ASSERT_FALSE(result->verdict.stragglers.empty());
  EXPECT_NE(result->verdict.stragglers.front().summary.find("enqueue"), std::string::npos)
      << result->verdict.stragglers.front().summary;
}

}  // namespace
}  // namespace slowburn::nccl_communicators_test
