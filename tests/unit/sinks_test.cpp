#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "sinks/json_sink.h"
#include "sinks/text_sink.h"

namespace slowburn::sinks_test {
namespace {

RankIdentity rank(int r, int32_t pid) {
  RankIdentity id;
  id.rank = r;
  id.pid = pid;
  id.local_rank = r;
  id.world_size = 4;
  id.job = "777";
  id.launcher = "openmpi";
  return id;
}

Finding straggler() {
  Finding f;
  f.type = "straggler";
  f.detector = "persistence";
  f.culprit = rank(2, 4242);
  f.probe = "mpi.allgather";
  f.lateness_median_ns = 1.5e6;
  f.blame_share = 0.15;
  f.last_fraction = 0.9;
  f.z_lateness = 4.2;
  f.windows_flagged = 3;
  f.windows_considered = 5;
  f.cost_ns = 123456789;
  f.cost_share = 0.14;
  f.summary = "rank 2 (pid 4242) is the straggler";
  return f;
}

TEST(JsonSink, FindingHasTheDocumentedShape) {
  std::ostringstream out;
  JsonSink sink(out, "node-1", 0);
  sink.finding(straggler());
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["kind"], "finding");
  EXPECT_EQ(j["type"], "straggler");
  EXPECT_EQ(j["rank"], 2);
  EXPECT_EQ(j["pid"], 4242);
  EXPECT_EQ(j["host"], "node-1");
  EXPECT_EQ(j["job"], "777");
  EXPECT_TRUE(j["ts"].is_number());
  EXPECT_EQ(j["evidence"]["probe"], "mpi.allgather");
  EXPECT_DOUBLE_EQ(j["evidence"]["blame_share"].get<double>(), 0.15);
  EXPECT_DOUBLE_EQ(j["evidence"]["z_lateness"].get<double>(), 4.2);
  EXPECT_TRUE(j["evidence"]["z_gap"].is_null());
  EXPECT_EQ(j["cost_ns"], 123456789);
}

TEST(JsonSink, OneWindowLinePerRank) {
  std::ostringstream out;
  JsonSink sink(out, "node-1", 1'000'000'000);
  WindowReport w;
  w.start_ns = 1'000'000'000;
  w.end_ns = 1'500'000'000;
  w.probe = "mpi.allreduce";
  w.kind = CallKind::synchronizing;
  w.instances = 10;
  for (int r = 0; r < 3; ++r) {
    RankWindowStats s;
    s.identity = rank(r, 100 + r);
    s.calls = 10;
    s.wait_p50_ns = 1000;
    s.lateness_median_ns = r * 10.0;
    w.ranks.push_back(s);
  }
  sink.window(w);
  std::istringstream lines(out.str());
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["kind"], "window");
    EXPECT_EQ(j["rank"], n);
    EXPECT_EQ(j["probe"], "mpi.allreduce");
    EXPECT_DOUBLE_EQ(j["window_start"].get<double>(), 2.0);  // ktime + wall offset, in seconds
    EXPECT_TRUE(j["z_lateness"].is_null());
    ++n;
  }
  EXPECT_EQ(n, 3);
}

TEST(JsonSink, StatusLinesForProbesAndSummary) {
  std::ostringstream out;
  JsonSink sink(out, "h", 0);
  ProbeStatus status{"mpi.barrier", rank(0, 1), 1, ProbeState::unavailable, {}, {}, "symbol missing: x"};
  sink.probe_status(status);
  SessionSummary summary;
  summary.ringbuf_drops = 7;
  sink.summary(summary);
  std::istringstream lines(out.str());
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  auto a = nlohmann::json::parse(first);
  EXPECT_EQ(a["kind"], "status");
  EXPECT_EQ(a["state"], "unavailable");
  EXPECT_EQ(a["reason"], "symbol missing: x");
  auto b = nlohmann::json::parse(second);
  EXPECT_EQ(b["event"], "summary");
  EXPECT_EQ(b["ringbuf_drops"], 7);
}

TEST(TextSink, GroupsProbeStatesAcrossRanks) {
  std::ostringstream out;
  TextSink sink(out);
  for (int r = 0; r < 4; ++r) {
    sink.probe_status({"mpi.allreduce",
                       rank(r, 100 + r),
                       100 + r,
                       ProbeState::attached,
                       "/lib/libmpi.so.40",
                       {{"MPI_Allreduce", "", 0x69220, 0x69220}},
                       ""});
    sink.probe_status(
        {"nccl.allreduce", rank(r, 100 + r), 100 + r, ProbeState::unavailable, "", {}, "libnccl.so not loaded"});
  }
  sink.probes_done(0, 0);
  EXPECT_EQ(out.str(),
            "mpi.allreduce            attached    ranks 0,1,2,3: /lib/libmpi.so.40 [MPI_Allreduce+0x69220]\n"
            "nccl.allreduce           unavailable ranks 0,1,2,3: libnccl.so not loaded\n");
}

TEST(TextSink, VerdictNamesTheCulpritNobodyOrSaysWhyItCannot) {
  std::ostringstream out;
  TextSink sink(out);
  SessionVerdict verdict;
  verdict.judged = true;
  verdict.instances = 1200;
  verdict.windows_judged = 20;
  sink.verdict(verdict);
  EXPECT_NE(out.str().find("Verdict: no straggler found (1200 aligned collective instances in 20 judged windows)"),
            std::string::npos)
      << out.str();
  std::ostringstream out2;
  TextSink sink2(out2);
  verdict.stragglers.push_back(straggler());
  Episode episode;
  episode.summary = "rank 0 (pid 11) was late on mpi.allgather for 1.50 s";
  verdict.episodes.push_back(episode);
  sink2.verdict(verdict);
  EXPECT_NE(out2.str().find("straggler: rank 2 (pid 4242) is the straggler"), std::string::npos) << out2.str();
  EXPECT_NE(out2.str().find("episode: rank 0 (pid 11) was late"), std::string::npos) << out2.str();
  // Too little to judge is said, never passed off as an all-clear.
  std::ostringstream out3;
  TextSink sink3(out3);
  SessionVerdict thin;
  thin.reason = "only 1 window(s) had 5 or more aligned collective instances";
  sink3.verdict(thin);
  EXPECT_EQ(out3.str().find("no straggler found"), std::string::npos) << out3.str();
  EXPECT_NE(out3.str().find("Verdict: undetermined: only 1 window(s)"), std::string::npos) << out3.str();
}

}  // namespace
}  // namespace slowburn::sinks_test
