// analyze on synthetic recordings of one job split over nodes whose clocks
// disagree: each node's offset recovered from the collectives alone, the
// slow rank named with its node wherever it runs, nobody in a healthy job;
// recordings of two jobs refused together; a node whose clock cannot be
// matched left out with the reason.
#include "analyze/analyze.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analyze/clock_placement.h"
#include "analyze/merged_replay.h"
#include "analyze/recording_set.h"
#include "probes/catalog.h"
#include "record/recorder.h"
#include "record/recording_reader.h"
#include "record/recording_sink.h"
#include "sinks/fan_out_sink.h"
#include "sinks/json_sink.h"
#include "sinks/perfetto_sink.h"
#include "support/synthetic_job.h"
#include "support/temp_dir.h"

namespace slowburn::analyze_test {
namespace {

using testing::SyntheticJob;
using testing::TempDir;

struct NodeSpec {
  std::string host;
  std::vector<int> ranks;
  int64_t clock_shift_ns = 0;  // added to its timestamps: its clock runs that far ahead
  std::string job = "77";
  uint64_t ringbuf_drops = 0;            // its tracer's loss counter, written in its summary
  std::vector<DeviceEvent> events = {};  // what its tracer saw on its hardware and host
  std::map<int, ProcessEnd> ends = {};   // rank -> how it ended (on the job's clock)
  double drift_ppm = 0;                  // its clock also runs this much fast from the job's first call
  uint64_t killed_after_step = 0;        // its tracer was killed after this step (0: it closed the recording)
  int32_t pid_shift = 0;                 // added to its ranks' pids (another node's may be the same)
};

// One recording per node of the job's calls: its ranks' calls only, on its
// own clock, from `first_step` (a tracer started later sees fewer).
void record(const TempDir& dir, const std::vector<CallEvent>& events, const NodeSpec& node, int steps_skipped = 0,
            uint64_t lost_step = 0) {
  auto recorder = Recorder::create(dir.path() / (node.host + ".sbr"), {node.host});
  ASSERT_TRUE(recorder) << recorder.error().message;
  RecordingSink sink(**recorder);
  const ProbeSpec* allreduce = find_probe("mpi.allreduce");
  for (int r : node.ranks) {
    ProbeStatus s;
    s.probe = allreduce->name;
    s.pid = SyntheticJob::pid(r) + node.pid_shift;
    s.state = ProbeState::attached;
    RankIdentity id;
    id.pid = s.pid;
    id.rank = r;
    id.job = node.job;
    s.rank = id;
    sink.probe_status(s);
  }
  auto comm = std::make_shared<CommunicatorInfo>();
  comm->id = 0;
  comm->key = "job:" + node.job;
  comm->label = "all ranks";
  for (const CallEvent& e : events) {
    int rank = static_cast<int>(e.pid) - SyntheticJob::pid(0);
    if (std::find(node.ranks.begin(), node.ranks.end(), rank) == node.ranks.end()) continue;
    if (e.seq <= static_cast<uint64_t>(steps_skipped)) continue;
    if (node.killed_after_step && e.seq > node.killed_after_step) continue;
    if (e.seq == lost_step && rank == node.ranks.front()) continue;  // a record the ring buffer dropped
    CallEvent mine = e;
    mine.probe_id = allreduce->id;
    mine.pid = mine.tid = static_cast<uint32_t>(static_cast<int32_t>(e.pid) + node.pid_shift);
    auto on_node = [&](uint64_t t) {
      double drift = node.drift_ppm * 1e-6 * static_cast<double>(t - events.front().entry_ns);
      return static_cast<uint64_t>(static_cast<int64_t>(t) + node.clock_shift_ns + static_cast<int64_t>(drift));
    };
    mine.entry_ns = on_node(e.entry_ns);
    mine.exit_ns = on_node(e.exit_ns);
    (*recorder)->call(mine, {comm, std::nullopt, e.seq - static_cast<uint64_t>(steps_skipped), false});
  }
  for (const DeviceEvent& e : node.events) sink.device_event(e);
  for (auto [rank, end] : node.ends) {
    end.ts_ns = static_cast<uint64_t>(static_cast<int64_t>(end.ts_ns) + node.clock_shift_ns);
    (*recorder)->process_end(SyntheticJob::pid(rank) + node.pid_shift, end);
  }
  if (node.ringbuf_drops) {
    SessionSummary summary;
    summary.ringbuf_drops = node.ringbuf_drops;
    sink.summary(summary);
  }
  ASSERT_TRUE((*recorder)->finish());
  // A killed tracer never ends its session: nothing marks it closed.
  if (node.killed_after_step) {
    SQLite::Database db((dir.path() / (node.host + ".sbr")).string(), SQLite::OPEN_READWRITE);
    db.exec("DELETE FROM meta WHERE key = 'closed_monotonic_ns'");
  }
}

std::vector<CallEvent> job_events(int slow_rank, int steps = 3000) {
  SyntheticJob job;
  job.ranks = 4;
  job.compute_ns = [slow_rank](int rank, int) { return rank == slow_rank ? 4.5e6 : 3e6; };
  return job.run(steps);
}

struct Analyzed {
  Result<AnalyzeResult> result;
  std::string json;
};

Analyzed analyze(const TempDir& dir, std::optional<std::string> job = std::nullopt, PerfettoSink* timeline = nullptr,
                 OffsetSearch offsets = {}) {
  AnalyzeOptions options;
  options.offsets = offsets;
  options.inputs = {dir.path()};
  options.job = job;
  options.timeline = timeline;
  std::ostringstream out;
  JsonSink json(out, "analyst", 0);
  std::vector<Sink*> sinks{&json};
  if (timeline) sinks.push_back(timeline);
  FanOutSink sink(sinks);
  auto result = run_analyze(options, sink);
  return {std::move(result), out.str()};
}

std::set<std::pair<int, std::string>> named(const SessionVerdict& v) {
  std::set<std::pair<int, std::string>> out;
  for (const Finding& f : v.stragglers) out.insert({f.culprit.rank, f.culprit.host});
  return out;
}

TEST(Analyze, OffsetsRecoveredAndTheSlowRankNamedWithItsNode) {
  // node-b's clock is 2.5 s behind node-a's and its tracer started 200
  // steps later; rank 3, on node-b, computes 1.5x longer.
  for (int64_t shift : {int64_t{-2'500'000'000}, int64_t{40'000'000}}) {
    TempDir dir;
    auto events = job_events(3);
    record(dir, events, {"node-a", {0, 1}});
    record(dir, events, {"node-b", {2, 3}, shift}, 200);
    auto a = analyze(dir);
    ASSERT_TRUE(a.result) << a.result.error().message;
    ASSERT_EQ(a.result->nodes.size(), 2u);
    EXPECT_TRUE(a.result->nodes[0].reference);
    ASSERT_TRUE(a.result->nodes[1].offset_ns.has_value()) << a.result->nodes[1].unknown_reason;
    EXPECT_NEAR(static_cast<double>(*a.result->nodes[1].offset_ns), static_cast<double>(-shift), 100'000);
    EXPECT_EQ(named(a.result->verdict), (std::set<std::pair<int, std::string>>{{3, "node-b"}})) << a.json;
    ASSERT_FALSE(a.result->verdict.stragglers.empty());
    EXPECT_NE(a.result->verdict.stragglers[0].summary.find("on node-b)"), std::string::npos)
        << a.result->verdict.stragglers[0].summary;
    // The waits, on no clock, name the same rank: the merged clocks hold.
    ASSERT_TRUE(a.result->verdict.clock_check.has_value());
    const ClockCheck& check = *a.result->verdict.clock_check;
    EXPECT_FALSE(check.disagrees) << check.summary;
    ASSERT_TRUE(check.culprit.has_value()) << check.summary;
    EXPECT_EQ(check.culprit->rank, 3);
    EXPECT_EQ(check.culprit->host, "node-b");
    EXPECT_GT(check.instances, 2000u);
    EXPECT_GT(check.agreed_blame_share, 0.9) << check.summary;
    EXPECT_NE(a.json.find("\"clock_check\":{"), std::string::npos);
    EXPECT_EQ(a.json.find("\"clock_offset_ns\":null"), std::string::npos) << "every node placed";
    EXPECT_NE(a.json.find("\"kind\":\"node\""), std::string::npos);
    EXPECT_NE(a.json.find("\"kind\":\"verdict\""), std::string::npos);
    // When it would have been found live, on the reference's clock (the
    // sink's wall offset is 0 here): within the job, soon after it began.
    bool found = false;
    std::istringstream lines(a.json);
    for (std::string line; std::getline(lines, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_object() || j.value("kind", "") != "finding") continue;
      ASSERT_TRUE(j["found_at"].is_number()) << line;
      double at_ns = j["found_at"].get<double>() * 1e9;
      EXPECT_GT(at_ns, static_cast<double>(events.front().entry_ns)) << line;
      EXPECT_LT(at_ns, static_cast<double>(events.front().entry_ns) + 5e9) << "shift " << shift << ": " << line;
      found = true;
    }
    EXPECT_TRUE(found) << a.json;
  }
}

TEST(Analyze, ARankWhosePidAnotherNodeAlsoUsedIsNamedByItsOwnPid) {
  // Two nodes booted alike start their ranks under the same pids: node-b's
  // ranks 2 and 3 are pids 1000 and 1001 there, as node-a's 0 and 1 are.
  // analyze keys the merged job by pids of its own, but a person goes to
  // node-b and looks for 1001, so that is what the finding says.
  TempDir dir;
  auto events = job_events(3);
  record(dir, events, {"node-a", {0, 1}});
  NodeSpec b{"node-b", {2, 3}, 40'000'000};
  b.pid_shift = -2;
  record(dir, events, b, 200);
  auto a = analyze(dir);
  ASSERT_TRUE(a.result) << a.result.error().message;
  EXPECT_EQ(named(a.result->verdict), (std::set<std::pair<int, std::string>>{{3, "node-b"}})) << a.json;
  ASSERT_FALSE(a.result->verdict.stragglers.empty());
  const Finding& f = a.result->verdict.stragglers[0];
  EXPECT_NE(f.culprit.pid, SyntheticJob::pid(1)) << "merged pids stay unique";
  EXPECT_EQ(f.culprit.node_pid, SyntheticJob::pid(1));
  EXPECT_NE(f.summary.find("rank 3 (pid 1001 on node-b)"), std::string::npos) << f.summary;
  bool said = false;
  std::istringstream lines(a.json);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("kind", "") != "finding" || j.value("rank", -1) != 3) continue;
    EXPECT_EQ(j.value("node_pid", 0), SyntheticJob::pid(1)) << line;
    EXPECT_EQ(j.value("pid", 0), f.culprit.pid) << line;
    said = true;
  }
  EXPECT_TRUE(said) << a.json;
}

TEST(Analyze, ARecordingCutShortIsSaidWithWhatItLeavesOut) {
  // node-b's tracer was killed after step 1500 of 3000: its recording holds
  // what it committed until then, and does not say it ended. The job is
  // judged up to there, and the output says what is missing.
  TempDir dir;
  auto events = job_events(3);
  record(dir, events, {"node-a", {0, 1}});
  NodeSpec b{"node-b", {2, 3}, -2'500'000'000};
  b.killed_after_step = 1500;
  record(dir, events, b);
  auto a = analyze(dir);
  ASSERT_TRUE(a.result) << a.result.error().message;
  ASSERT_EQ(a.result->nodes.size(), 2u);
  EXPECT_TRUE(a.result->nodes[0].closed);
  EXPECT_FALSE(a.result->nodes[1].closed);
  std::map<std::string, bool> closed;
  std::istringstream lines(a.json);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("kind", "") == "node") closed[j["host"]] = j["closed"].get<bool>();
  }
  EXPECT_EQ(closed, (std::map<std::string, bool>{{"node-a", true}, {"node-b", false}})) << a.json.substr(0, 800);
  // 1500 steps of ~4.5 ms (the slow rank's) before the job's end.
  auto note = a.json.find("node-b's recording was not closed");
  ASSERT_NE(note, std::string::npos) << a.json.substr(0, 800);
  std::string said = a.json.substr(note, 300);
  EXPECT_NE(said.find("after it, ranks 2, 3 are unseen"), std::string::npos) << said;
  auto before = said.find(" s before the job's last recorded call");
  ASSERT_NE(before, std::string::npos) << said;
  double seconds = std::stod(said.substr(said.rfind(' ', before - 1) + 1));
  EXPECT_NEAR(seconds, 1500 * 4.5e-3, 1.0) << said;
  // Judged up to the cut: after it, ranks 0 and 1 alone would make one of
  // them last in every collective.
  EXPECT_NEAR(a.result->summary.traced_seconds, 1500 * 4.5e-3, 1.0);
  EXPECT_EQ(named(a.result->verdict), (std::set<std::pair<int, std::string>>{{3, "node-b"}})) << a.json;
}

// A node whose clock drifts 300 ppm (5.4 ms over the 18 s recording, most
// of a 3 ms step): placed on the reference's clock as a line, its slow rank
// is named on it, and the waits (on no clock) agree with the merged clocks.
TEST(Analyze, ADriftingNodesClockIsPlacedAsALine) {
  TempDir dir;
  auto events = job_events(3, 6000);
  record(dir, events, {"node-a", {0, 1}});
  NodeSpec b{"node-b", {2, 3}, 70'000'000};
  b.drift_ppm = 300;
  record(dir, events, b, 100);
  auto a = analyze(dir);
  ASSERT_TRUE(a.result) << a.result.error().message;
  ASSERT_EQ(a.result->nodes.size(), 2u);
  const NodeClock& node = a.result->nodes[1];
  ASSERT_TRUE(node.offset_ns.has_value()) << node.unknown_reason;
  EXPECT_NEAR(node.drift_ppm, -300, 5) << "its clock runs fast: what to add shrinks";
  EXPECT_LT(node.spread_ns, 50'000) << "the releases lie on the line";
  EXPECT_EQ(named(a.result->verdict), (std::set<std::pair<int, std::string>>{{3, "node-b"}})) << a.json;
  ASSERT_TRUE(a.result->verdict.clock_check.has_value());
  EXPECT_FALSE(a.result->verdict.clock_check->disagrees) << a.result->verdict.clock_check->summary;
  EXPECT_GT(a.result->verdict.clock_check->agreed_blame_share, 0.9) << a.result->verdict.clock_check->summary;
  EXPECT_NE(a.json.find("\"clock_drift_ppm\":-"), std::string::npos) << a.json.substr(0, 600);
}

TEST(Analyze, ARankOnTimeWhoseCpuTheCollectiveWaitsForIsNamedInsideOnItsNode) {
  // A communication-bound job: 0.5 ms of compute, 3 ms of collective; rank
  // 2's thread waits for a CPU 75% of its time inside, the others 2%. Each
  // rank's CPU times are durations on its own node: no offset needed.
  SyntheticJob job;
  job.compute_ns = [](int, int) { return 0.5e6; };
  job.collective_ns = 3e6;
  std::vector<CallEvent> events = job.run(3000);
  testing::set_cpu_waits(events, [](int rank) { return rank == 2 ? 0.75 : 0.02; });
  TempDir dir;
  record(dir, events, {"node-a", {0, 1}});
  record(dir, events, {"node-b", {2, 3}, -1'500'000'000});
  auto a = analyze(dir);
  ASSERT_TRUE(a.result) << a.result.error().message;
  EXPECT_EQ(named(a.result->verdict), (std::set<std::pair<int, std::string>>{{2, "node-b"}})) << a.json;
  ASSERT_FALSE(a.result->verdict.stragglers.empty());
  const Finding& f = a.result->verdict.stragglers[0];
  EXPECT_EQ(f.where, "inside") << f.summary;
  ASSERT_TRUE(f.inside.has_value());
  EXPECT_NEAR(f.inside->runq_share, 0.75, 0.01);
  EXPECT_NE(a.json.find("\"where\":\"inside\""), std::string::npos);
}

TEST(Analyze, ARankWhoseSocketsRetransmitIsNamedInsideOnItsNodeNotTheRankWithItsPidOnAnother) {
  // Every rank on time; from step 1500 each instance takes 9 ms after its
  // last arrival instead of 3. Node-a's tracer said rank 1's TCP sockets
  // retransmit as the stretch began. Node-b's rank 3 has the pid rank 1 has
  // on node-a (analyze gives one of them another); node-b's clock is 1.5 s
  // behind.
  auto [events, slow_from] = testing::collective_slows();
  testing::set_cpu_waits(events, [](int) { return 0.02; });
  DeviceEvent tcp;
  tcp.type = "host.tcp_retrans";
  tcp.ts_ns = slow_from;
  tcp.ranks = {1};
  tcp.pid = SyntheticJob::pid(1) + 2;
  tcp.summary = fmt::format("rank 1 (pid {})'s TCP sockets retransmitted 3.0% of the bytes they sent", *tcp.pid);
  TempDir dir;
  record(dir, events, {"node-a", {0, 1}, 0, "77", 0, {tcp}, {}, 0, 0, 2});
  record(dir, events, {"node-b", {2, 3}, -1'500'000'000});
  auto a = analyze(dir);
  ASSERT_TRUE(a.result) << a.result.error().message;
  EXPECT_EQ(named(a.result->verdict), (std::set<std::pair<int, std::string>>{{1, "node-a"}})) << a.json;
  ASSERT_FALSE(a.result->verdict.stragglers.empty());
  const Finding& f = a.result->verdict.stragglers[0];
  EXPECT_EQ(f.where, "inside") << f.summary;
  ASSERT_TRUE(f.inside.has_value());
  EXPECT_EQ(f.inside->transport, "its TCP sockets retransmitted 3.0% of the bytes they sent") << f.summary;
  EXPECT_EQ(f.likely_cause_type, "host.tcp_retrans") << f.summary;
}

DeviceEvent recorded_event(std::string type, int rank, std::string summary, std::optional<int32_t> pid = {}) {
  DeviceEvent e;
  e.type = std::move(type);
  e.ranks = {rank};
  e.summary = std::move(summary);
  e.pid = pid;
  return e;
}

// The slow burn across nodes: 64 ranks on 8 nodes whose clocks are off by
// up to +-90 ms, 1% compute noise, one rank 5% slower. Under every window's
// floor; its own lateness over the session costs ~2.5%: named minor on its
// node. The same job healthy names nobody.
TEST(Analyze, AFivePercentRankOf64AcrossSkewedNodesIsNamedMinor) {
  // With 1% noise, on skewed clocks, and on clocks that also drift by up to
  // 50 ppm either way (issue 30).
  for (auto [slow, drift_ppm] : {std::pair{37, 0.0}, {-1, 0.0}, {37, 50.0}, {-1, 50.0}}) {
    SCOPED_TRACE(fmt::format("slow rank {}, drift {} ppm", slow, drift_ppm));
    SyntheticJob job;
    job.ranks = 64;
    job.noise_ns = 30e3;
    job.compute_ns = [slow](int rank, int) { return rank == slow ? 3e6 * 1.05 : 3e6; };
    // A drift is fitted once the matches span 10 s (kMinDriftSpanNs): 3500
    // steps of ~3.2 ms. Over 3000 (9.6 s) each node's releases spread by its
    // drift and the regular steps left nodes out.
    auto events = job.run(drift_ppm > 0 ? 3500 : 3000);
    TempDir dir;
    for (int n = 0; n < 8; ++n) {
      NodeSpec node{fmt::format("node-{}", n), {}, (n % 2 ? 1 : -1) * int64_t{n} * 13'000'000};
      node.drift_ppm = (n % 2 ? -1 : 1) * drift_ppm * n / 7;
      for (int r = 8 * n; r < 8 * n + 8; ++r) node.ranks.push_back(r);
      record(dir, events, node, n * 3);
    }
    auto a = analyze(dir);
    ASSERT_TRUE(a.result) << a.result.error().message;
    for (const NodeClock& node : a.result->nodes)
      EXPECT_TRUE(node.offset_ns) << node.host << ": " << node.unknown_reason;
    if (slow < 0) {
      EXPECT_TRUE(a.result->verdict.stragglers.empty()) << a.result->verdict.stragglers.front().summary;
      continue;
    }
    EXPECT_EQ(named(a.result->verdict), (std::set<std::pair<int, std::string>>{{37, "node-4"}})) << a.json;
    ASSERT_EQ(a.result->verdict.stragglers.size(), 1u);
    const Finding& f = a.result->verdict.stragglers.front();
    EXPECT_EQ(f.detector, "session-cost") << f.summary;
    EXPECT_EQ(f.severity, "minor") << f.summary;
    EXPECT_GT(f.cost_share, 0.01) << f.summary;
    EXPECT_NE(a.json.find("\"severity\":\"minor\""), std::string::npos);
  }
}

TEST(Analyze, AThreePercentRankIsNamedWhereItsCostPassesTheFloor) {
  // 8 ranks and half a percent of noise: the rank 3% slower is last in most
  // instances by most of its extra work, a cost over the 1% floor (at 64
  // ranks and 1% noise the others' noise hides it: bench/RESULTS.md 24a).
  SyntheticJob job;
  job.ranks = 8;
  job.noise_ns = 15e3;
  job.compute_ns = [](int rank, int) { return rank == 6 ? 3e6 * 1.03 : 3e6; };
  auto events = job.run(3000);
  TempDir dir;
  for (int n = 0; n < 2; ++n) {
    NodeSpec node{fmt::format("node-{}", n), {}, int64_t{n} * 21'000'000};
    for (int r = 4 * n; r < 4 * n + 4; ++r) node.ranks.push_back(r);
    record(dir, events, node, n * 5);
  }
  auto a = analyze(dir);
  ASSERT_TRUE(a.result) << a.result.error().message;
  ASSERT_EQ(named(a.result->verdict), (std::set<std::pair<int, std::string>>{{6, "node-1"}})) << a.json;
  const Finding& f = a.result->verdict.stragglers.front();
  EXPECT_EQ(f.severity, "minor") << f.summary;
  EXPECT_GT(f.cost_share, 0.01) << f.summary;
  EXPECT_LT(f.cost_share, 0.03) << f.summary;
}

TEST(Analyze, ARampToTenPercentOverTenMinutesIsNamedBeforeFourPercent) {
  // 8 ranks, 50 ms steps, 1% noise; rank 5's compute grows from 1.00x to
  // 1.10x over 600 s of the job (issue 30: named before it passes 1.04x).
  // The finding's found_at, on the reference node's clock, dates it.
  constexpr double kStepNs = 50e6, kRampNs = 600e9;
  SyntheticJob job;
  job.ranks = 8;
  job.noise_ns = 0.01 * kStepNs;
  job.compute_ns = [&](int rank, int step) {
    double t = step * (kStepNs + job.collective_ns);
    return rank == 5 ? kStepNs * (1 + 0.1 * std::min(1.0, t / kRampNs)) : kStepNs;
  };
  auto events = job.run(static_cast<int>(kRampNs / kStepNs) + 600);
  TempDir dir;
  for (int n = 0; n < 2; ++n) {
    NodeSpec node{fmt::format("node-{}", n), {}, int64_t{n} * -37'000'000};
    for (int r = 4 * n; r < 4 * n + 4; ++r) node.ranks.push_back(r);
    record(dir, events, node, n * 2);
  }
  auto a = analyze(dir);
  ASSERT_TRUE(a.result) << a.result.error().message;
  ASSERT_EQ(named(a.result->verdict), (std::set<std::pair<int, std::string>>{{5, "node-1"}})) << a.json;
  auto first = std::find_if(a.result->summary.findings.begin(), a.result->summary.findings.end(),
                            [](const Finding& f) { return f.culprit.rank == 5; });
  ASSERT_NE(first, a.result->summary.findings.end());
  double found_after_ns = static_cast<double>(first->detected_ns - events.front().entry_ns);
  double slowdown_then = 1 + 0.1 * std::min(1.0, found_after_ns / kRampNs);
  RecordProperty("found_after_s", std::to_string(found_after_ns / 1e9));
  RecordProperty("slowdown_then", std::to_string(slowdown_then));
  EXPECT_LT(slowdown_then, 1.04) << first->summary;
  for (const Finding& f : a.result->summary.findings) EXPECT_EQ(f.culprit.rank, 5) << f.summary;
}

TEST(Analyze, TheCulpritsNodeRecordedItsLikelyCause) {
  TempDir dir;
  auto events = job_events(3);
  NodeSpec a{"node-a", {0, 1}};
  // Rank numbers, not devices, join a recorded event: node-a's rank 1 link
  // is not the culprit's; a recovered link is no cause.
  a.events = {recorded_event("link.downtrained", 1, "link.downtrained on GPU 1"),
              recorded_event("link.recovered", 3, "link.recovered")};
  NodeSpec b{"node-b", {2, 3}};
  b.events = {recorded_event("host.cpu_throttled", 3, "rank 3's cgroup /batch throttled it in 99% of periods",
                             SyntheticJob::pid(3))};
  record(dir, events, a);
  record(dir, events, b);
  auto an = analyze(dir);
  ASSERT_TRUE(an.result) << an.result.error().message;
  ASSERT_EQ(named(an.result->verdict), (std::set<std::pair<int, std::string>>{{3, "node-b"}})) << an.json;
  const Finding& f = an.result->verdict.stragglers[0];
  EXPECT_EQ(f.likely_causes, std::vector<std::string>{"rank 3's cgroup /batch throttled it in 99% of periods"});
  EXPECT_EQ(f.likely_cause_type, "host.cpu_throttled");
  EXPECT_NE(f.summary.find("; likely cause: rank 3's cgroup /batch throttled"), std::string::npos) << f.summary;
  // Read back as it was recorded: how strong a cause, and whose process.
  auto info = read_recording_info(dir.path() / "node-b.sbr");
  ASSERT_TRUE(info) << info.error().message;
  ASSERT_EQ(info->device_events.size(), 1u);
  const DeviceEvent& recorded = info->device_events[0];
  EXPECT_EQ(recorded.fields.value("pid", 0), SyntheticJob::pid(3));
  EXPECT_EQ(recorded.cause_rank, 2);
}

TEST(Analyze, OneRankPerNodeAndAHealthyJob) {
  TempDir slow_dir, healthy_dir;
  auto slow = job_events(0);
  auto healthy = job_events(-1);
  for (int r = 0; r < 4; ++r) {
    NodeSpec node{"node-" + std::to_string(r), {r}, r * 7'000'000 - 10'000'000};
    record(slow_dir, slow, node, r * 50);
    record(healthy_dir, healthy, node, r * 50);
  }
  auto s = analyze(slow_dir);
  ASSERT_TRUE(s.result) << s.result.error().message;
  for (size_t i = 1; i < 4; ++i) {
    ASSERT_TRUE(s.result->nodes[i].offset_ns) << s.result->nodes[i].unknown_reason;
    EXPECT_NEAR(static_cast<double>(*s.result->nodes[i].offset_ns), -7e6 * static_cast<double>(i), 100'000);
  }
  EXPECT_EQ(named(s.result->verdict), (std::set<std::pair<int, std::string>>{{0, "node-0"}})) << s.json;
  auto h = analyze(healthy_dir);
  ASSERT_TRUE(h.result) << h.result.error().message;
  EXPECT_TRUE(h.result->verdict.judged);
  EXPECT_TRUE(h.result->verdict.stragglers.empty()) << h.json;
  // One rank per node: every instance crosses nodes, and the waits name the
  // slow rank as the clocks do, and nobody in the healthy job.
  ASSERT_TRUE(s.result->verdict.clock_check && s.result->verdict.clock_check->culprit);
  EXPECT_EQ(s.result->verdict.clock_check->culprit->rank, 0);
  EXPECT_FALSE(s.result->verdict.clock_check->disagrees) << s.result->verdict.clock_check->summary;
  ASSERT_TRUE(h.result->verdict.clock_check);
  EXPECT_FALSE(h.result->verdict.clock_check->culprit) << h.result->verdict.clock_check->summary;
  EXPECT_FALSE(h.result->verdict.clock_check->disagrees) << h.result->verdict.clock_check->summary;
}

TEST(Analyze, TheFirstFailureAcrossNodesIsNamedOnTheReferenceClock) {
  // Rank 2 (node-b, clock 40 ms ahead) was killed 5 ms before rank 0
  // (node-a) exited with status 1: on their own clocks rank 0 ended first.
  TempDir dir;
  auto events = job_events(-1, 1000);
  uint64_t end_ns = events.back().exit_ns;
  ProcessEnd killed;
  killed.ts_ns = end_ns + 10'000'000;
  killed.signal = 9;
  ProcessEnd status;
  status.ts_ns = end_ns + 15'000'000;
  status.exit_code = 1;
  ProcessEnd normal;
  normal.ts_ns = end_ns + 16'000'000;
  normal.exit_code = 0;
  record(dir, events, {"node-a", {0, 1}, 0, "77", 0, {}, {{0, status}, {1, normal}}});
  record(dir, events, {"node-b", {2, 3}, 40'000'000, "77", 0, {}, {{2, killed}}});
  auto a = analyze(dir);
  ASSERT_TRUE(a.result) << a.result.error().message;
  const SessionVerdict& v = a.result->verdict;
  ASSERT_EQ(v.failures.size(), 2u) << a.json;
  EXPECT_EQ(v.failures[0].culprit.rank, 2) << a.json;
  EXPECT_EQ(v.failures[0].culprit.host, "node-b");
  EXPECT_NE(v.failures[0].summary.find("killed by SIGKILL"), std::string::npos) << v.failures[0].summary;
  EXPECT_EQ(v.failures[0].followed_by, (std::vector<int>{0, 1}));
  EXPECT_EQ(v.failures[1].culprit.rank, 0);
  EXPECT_NE(a.json.find("\"failures\":[{"), std::string::npos);
}

TEST(Analyze, TheNodesLossCountersAddUp) {
  // A merged verdict is only as good as what each tracer kept: the
  // recordings' ring-buffer drops are the job's, and a call missing from a
  // thread's numbers is counted.
  TempDir dir;
  auto events = job_events(-1);
  NodeSpec a{"node-a", {0, 1}}, b{"node-b", {2, 3}, 5'000'000};
  a.ringbuf_drops = 5;
  b.ringbuf_drops = 7;
  record(dir, events, a, 0, 1500);
  record(dir, events, b);
  auto r = analyze(dir);
  ASSERT_TRUE(r.result) << r.result.error().message;
  EXPECT_EQ(r.result->summary.ringbuf_drops, 12u);
  EXPECT_EQ(r.result->summary.detector.sequence_gaps, 1u) << "rank 0's lost call, by its thread's numbers";
  EXPECT_NE(r.json.find("\"ringbuf_drops\":12"), std::string::npos) << r.json;
}

TEST(Analyze, TwoJobsAreRefusedTogetherUnlessOneIsPicked) {
  TempDir dir;
  auto events = job_events(1);
  record(dir, events, {"node-a", {0, 1}});
  record(dir, events, {"node-b", {2, 3}, 0, "78"});
  auto both = analyze(dir);
  ASSERT_FALSE(both.result);
  EXPECT_NE(both.result.error().message.find("pick one with --job"), std::string::npos) << both.result.error().message;
  auto one = analyze(dir, "77");
  ASSERT_TRUE(one.result) << one.result.error().message;
  ASSERT_EQ(one.result->nodes.size(), 1u) << "node-b holds none of job 77's ranks";
  auto other = analyze(dir, "78");
  ASSERT_TRUE(other.result) << other.result.error().message;
  ASSERT_EQ(other.result->nodes.size(), 1u);
  EXPECT_EQ(other.result->nodes[0].host, "node-b") << "the reference is the first node of the job picked";
  auto unknown = analyze(dir, "79");
  ASSERT_FALSE(unknown.result);
  EXPECT_NE(unknown.result.error().message.find("no rank of job '79'"), std::string::npos);
}

TEST(Analyze, ANodeWhoseClockCannotBeMatchedIsLeftOutAndSaid) {
  // node-b recorded a different stretch of the job: no release in common.
  TempDir dir;
  auto events = job_events(1, 2000);
  record(dir, events, {"node-a", {0, 1}});
  std::vector<CallEvent> later = SyntheticJob{}.run(10, 5000);
  record(dir, later, {"node-b", {2, 3}});
  auto a = analyze(dir);
  ASSERT_TRUE(a.result) << a.result.error().message;
  EXPECT_FALSE(a.result->nodes[1].offset_ns.has_value());
  EXPECT_FALSE(a.result->nodes[1].unknown_reason.empty());
  EXPECT_NE(a.json.find("\"clock_offset_ns\":null"), std::string::npos);
  // The JSON verdict says which node it judged without (not only the text).
  EXPECT_EQ(a.result->verdict.nodes_left_out, std::vector<std::string>{"node-b"});
  EXPECT_NE(a.json.find("\"nodes_left_out\":[\"node-b\"]"), std::string::npos) << a.json;
  EXPECT_FALSE(a.result->verdict.clock_check.has_value()) << "one node judged: no merged clock to check";
}

TEST(Analyze, TheClocksAreMatchedOnABoundedStretchAndASkewBeyondItIsSaid) {
  // A 3000-step job (~13 s) matched on 2 s either side of the reference's
  // middle, clocks searched 1 s apart: a node 0.5 s off is placed; one 30 s
  // off is left out, with the reason, not matched a step away.
  OffsetSearch narrow;
  narrow.match_half_span_ns = 2'000'000'000;
  narrow.max_skew_ns = 1'000'000'000;
  auto events = job_events(3);
  TempDir near_dir, far_dir;
  record(near_dir, events, {"node-a", {0, 1}});
  record(near_dir, events, {"node-b", {2, 3}, 500'000'000}, 100);
  auto n = analyze(near_dir, std::nullopt, nullptr, narrow);
  ASSERT_TRUE(n.result) << n.result.error().message;
  ASSERT_TRUE(n.result->nodes[1].offset_ns) << n.result->nodes[1].unknown_reason;
  EXPECT_NEAR(static_cast<double>(*n.result->nodes[1].offset_ns), -5e8, 100'000);
  EXPECT_LT(n.result->nodes[1].matched, 2000u) << "only the stretch, not the whole recording";
  EXPECT_EQ(named(n.result->verdict), (std::set<std::pair<int, std::string>>{{3, "node-b"}})) << n.json;

  record(far_dir, events, {"node-a", {0, 1}});
  record(far_dir, events, {"node-b", {2, 3}, 30'000'000'000});
  auto f = analyze(far_dir, std::nullopt, nullptr, narrow);
  ASSERT_TRUE(f.result) << f.result.error().message;
  EXPECT_FALSE(f.result->nodes[1].offset_ns);
  EXPECT_NE(f.result->nodes[1].unknown_reason.find("further off than analyze searches"), std::string::npos)
      << f.result->nodes[1].unknown_reason;
}

TEST(Analyze, TwoRecordingsFromOneHostAreRefused) {
  TempDir dir;
  auto events = job_events(1, 100);
  record(dir, events, {"node-a", {0, 1}});
  std::filesystem::copy_file(dir.path() / "node-a.sbr", dir.path() / "node-a-copy.sbr");
  auto a = analyze(dir);
  ASSERT_FALSE(a.result);
  EXPECT_NE(a.result.error().message.find("give each tracer its own --host"), std::string::npos);
}

TEST(Analyze, ThePerfettoTimelineHasANodePerProcessARankPerTrackAndNoOverlaps) {
  TempDir dir, out;
  auto events = job_events(3, 1500);
  record(dir, events, {"node-a", {0, 1}});
  record(dir, events, {"node-b", {2, 3}, 900'000'000}, 100);
  auto path = (out.path() / "timeline.json").string();
  auto timeline = PerfettoSink::create(path, 0, "");
  ASSERT_TRUE(timeline) << timeline.error().message;
  auto a = analyze(dir, std::nullopt, timeline->get());
  ASSERT_TRUE(a.result) << a.result.error().message;
  std::ifstream in(path);
  auto trace = nlohmann::json::parse(in);  // throws, failing the test, on a malformed file
  ASSERT_TRUE(trace["traceEvents"].is_array());
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> tracks;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;
  size_t instants = 0, counters = 0;
  for (const auto& e : trace["traceEvents"]) {
    std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
    if (ph == "M" && e["name"] == "thread_name") tracks[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (ph == "X") {
      ASSERT_GE(e["dur"].get<double>(), 0.0);
      slices[{e["pid"], e["tid"]}].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    }
    instants += ph == "i";
    counters += ph == "C";
  }
  std::set<std::string> nodes;
  for (const auto& [pid, name] : processes) nodes.insert(name);
  EXPECT_EQ(nodes, (std::set<std::string>{"node-a", "node-b"}));
  EXPECT_EQ(tracks.size(), 4u) << "one track per rank (one communicator each)";
  EXPECT_GE(instants, 1u) << "the finding";
  EXPECT_GT(counters, 0u) << "lateness per window";
  for (auto& [track, spans] : slices) {
    ASSERT_TRUE(tracks.contains(track)) << "every slice's track is named";
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) ASSERT_LE(spans[i - 1].second, spans[i].first) << tracks[track];
  }
  // On the merged clock node-b's calls end with node-a's (the collective
  // released them together), though its own clock was 0.9 s ahead.
  std::vector<double> a_ends, matched;
  for (auto& [track, spans] : slices)
    if (processes[track.first] == "node-a")
      for (auto& s : spans) a_ends.push_back(s.second);
  std::sort(a_ends.begin(), a_ends.end());
  size_t b_calls = 0;
  for (auto& [track, spans] : slices) {
    if (processes[track.first] != "node-b") continue;
    for (auto& s : spans) {
      ++b_calls;
      auto it = std::lower_bound(a_ends.begin(), a_ends.end(), s.second - 100.0);
      if (it != a_ends.end() && *it <= s.second + 100.0) matched.push_back(s.second);
    }
  }
  EXPECT_GT(static_cast<double>(matched.size()), 0.95 * static_cast<double>(b_calls))
      << "node-b's calls end within 100 us of one of node-a's";
}

}  // namespace
}  // namespace slowburn::analyze_test

namespace slowburn::analyze_test {
namespace {

TEST(PerfettoTimeline, TraceNamesItsNodeAsHostSaysAndAFullDiskIsAnError) {
  // trace --host node-a: its ranks' identities carry the real hostname,
  // the timeline's process is the node --host names.
  TempDir out;
  auto path = (out.path() / "t.json").string();
  auto sink = PerfettoSink::create(path, 0, "node-a", true);
  ASSERT_TRUE(sink) << sink.error().message;
  RankIdentity id;
  id.pid = 4242;
  id.rank = 0;
  id.host = "real-hostname";
  (*sink)->rank(id);
  CallEvent e;
  e.pid = e.tid = 4242;
  e.entry_ns = 1000;
  e.exit_ns = 5000;
  (*sink)->call(e, {}, "mpi.allreduce");
  ASSERT_TRUE((*sink)->close());
  std::ifstream in(path);
  auto trace = nlohmann::json::parse(in);
  std::set<std::string> processes;
  for (const auto& ev : trace["traceEvents"])
    if (ev["ph"] == "M" && ev["name"] == "process_name") processes.insert(ev["args"]["name"]);
  EXPECT_EQ(processes, std::set<std::string>{"node-a"});

  // A device with no room: the timeline is not said to be written.
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full to fill";
  auto full = PerfettoSink::create("/dev/full", 0, "n");
  ASSERT_TRUE(full) << full.error().message;
  for (int i = 0; i < 20000; ++i) (*full)->call(e, {}, "mpi.allreduce");
  auto closed = (*full)->close();
  ASSERT_FALSE(closed);
  EXPECT_NE(closed.error().message.find("is the disk full?"), std::string::npos) << closed.error().message;
}

// The stages of analyze, each on its own.

TEST(RecordingSet, TheJobsRanksAndTheirMergedPidsInTheOrderGiven) {
  TempDir dir;
  auto events = job_events(-1, 400);
  record(dir, events, {"node-a", {0, 1}});
  record(dir, events, {"node-b", {2, 3}});
  record(dir, events, {"node-c", {0}, 0, "other-job"});
  auto nodes = read_job_recordings({dir.path() / "node-b.sbr", dir.path() / "node-a.sbr"}, std::nullopt);
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].info.host, "node-b") << "the first given is the clock reference";
  EXPECT_EQ((*nodes)[0].pids, (std::set<int32_t>{SyntheticJob::pid(2), SyntheticJob::pid(3)}));
  auto two_jobs = read_job_recordings({dir.path()}, std::nullopt);
  ASSERT_FALSE(two_jobs);
  EXPECT_NE(two_jobs.error().message.find("pick one with --job"), std::string::npos) << two_jobs.error().message;
  auto other = read_job_recordings({dir.path()}, "other-job");
  ASSERT_TRUE(other) << other.error().message;
  ASSERT_EQ(other->size(), 1u) << "recordings without a rank of the job are not its nodes";
  EXPECT_EQ((*other)[0].info.host, "node-c");
}

TEST(ClockPlacement, EveryNodesOffsetToTheFirstFromTheReleasesAlone) {
  TempDir dir;
  auto events = job_events(-1, 1500);
  record(dir, events, {"node-a", {0}, 7'000'000});
  record(dir, events, {"node-b", {1}, -900'000'000}, 40);
  record(dir, events, {"node-c", {2, 3}, 3'000'000'000}, 100);
  auto nodes = read_job_recordings({dir.path()}, std::nullopt);
  ASSERT_TRUE(nodes) << nodes.error().message;
  auto placed = place_nodes(*nodes, {});
  ASSERT_TRUE(placed) << placed.error().message;
  ASSERT_EQ(placed->size(), 3u);
  EXPECT_EQ((*placed)[0].offset->offset_ns, 0) << "the reference";
  ASSERT_TRUE((*placed)[1].offset) << (*placed)[1].unknown_reason;
  ASSERT_TRUE((*placed)[2].offset) << (*placed)[2].unknown_reason;
  EXPECT_NEAR(static_cast<double>((*placed)[1].offset->offset_ns), 907'000'000.0, 100'000);
  EXPECT_NEAR(static_cast<double>((*placed)[2].offset->offset_ns), -2'993'000'000.0, 100'000);
  EXPECT_GE((*placed)[2].offset->matched, 20u);
}

TEST(MergedReplay, EveryCallOnceInExitOrderOnTheReferenceClock) {
  TempDir dir;
  auto events = job_events(1, 600);
  record(dir, events, {"node-a", {0, 1}});
  record(dir, events, {"node-b", {2, 3}, 250'000'000});
  auto nodes = read_job_recordings({dir.path()}, std::nullopt);
  ASSERT_TRUE(nodes) << nodes.error().message;
  std::vector<PlacedNode> placed = {{&(*nodes)[0], 0}, {&(*nodes)[1], -250'000'000}};
  std::vector<RankIdentity> ranks;
  for (int r = 0; r < 4; ++r) {
    RankIdentity id;
    id.pid = SyntheticJob::pid(r);
    id.rank = r;
    id.job = "77";
    ranks.push_back(id);
  }
  const ProbeSpec* allreduce = find_probe("mpi.allreduce");
  JobJudges judges({}, {allreduce}, ranks);
  for (const RankIdentity& r : ranks) judges.attached(allreduce->id, r.pid);
  uint64_t last_exit = 0;
  bool in_order = true;
  judges.set_call_tap([&](const CallEvent& e, const CallComm&) {
    in_order = in_order && e.exit_ns >= last_exit;
    last_exit = e.exit_ns;
  });
  MergedReplay replay(placed);
  size_t outputs = 0;
  auto span = replay.replay(judges, nullptr, [&](DetectorOutput) { ++outputs; });
  ASSERT_TRUE(span) << span.error().message;
  EXPECT_TRUE(in_order);
  EXPECT_EQ(judges.counters().calls, 2400u);
  EXPECT_EQ(judges.counters().instances, 600u) << "the nodes' calls meet in every instance";
  EXPECT_LT(span->first_ns, span->last_ns);
  EXPECT_GT(outputs, 10u) << "advanced every 100 ms of job time";
  ASSERT_EQ(replay.communicators().size(), 1u) << "one job-wide communicator, matched by its key";
  EXPECT_EQ(replay.communicators()[0]->id, 0u);
}

}  // namespace
}  // namespace slowburn::analyze_test
