// `slowburn investigate` on real OpenMPI jobs: a slowed rank whose GPU link
// the fixture tree shows downtrained (this VM has no PCIe links), and a
// healthy job; the JSON lines, the failure graph and its DOT, rendered by
// Debian's Graphviz.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/subprocess.h"
#include "demo/mpi_job.h"
#include "support/test_support.h"

namespace slowburn::investigate_cli_test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::TempDir;

struct Investigated {
  int status = -1;
  std::string output;
  json verdict, graph;
  std::map<std::string, json> layers;
};

std::string tail(const std::string& s) { return s.substr(s.size() > 4000 ? s.size() - 4000 : 0); }

Investigated investigate_job(int slow_rank, const TempDir& dir) {
  Investigated out;
  MpiJobOptions options;
  options.program =
      demo_workload_argv(testing::workload_path("slowburn-mpi-workload"), slow_rank, testing::kClearSlowdown, 3000, 60);
  options.ranks = 4;
  options.log_path = (dir / "mpirun.log").string();
  auto job = MpiJob::launch(options);
  EXPECT_TRUE(job) << job.error().message;
  if (!job) return out;
  std::vector<std::string> args = {"investigate",
                                   "-d",
                                   "8",
                                   "--probe",
                                   "mpi.*",
                                   "--json",
                                   "--dot",
                                   (dir / "graph.dot").string(),
                                   "--sysfs-root",
                                   (std::filesystem::path(SLOWBURN_SOURCE_DIR) / "tests/fixtures/sys").string()};
  for (const RankIdentity& r : job->ranks()) args.insert(args.end(), {"--pid", std::to_string(r.pid)});
  testing::Ran ran = testing::run_slowburn(args, 90s);
  job->stop();
  out.status = ran.status;
  out.output = ran.output;
  EXPECT_EQ(testing::schema_errors(ran.output, "layer,graph,verdict"), "");
  for (const json& j : testing::json_lines(ran.output)) {
    std::string kind = j.value("kind", "");
    if (kind == "verdict") out.verdict = j;
    if (kind == "graph") out.graph = j;
    if (kind == "layer") out.layers[j.value("layer", "")] = j;
  }
  return out;
}

std::string evidence(const json& layer) {
  std::string out;
  for (const json& e : layer.value("evidence", json::array())) out += e.get<std::string>() + "\n";
  return out;
}

TEST(Investigate, TheSlowRanksDowntrainedGpuLinkIsTheMostLikelyPath) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  // Local rank 0 uses GPU 0 in the fixture tree, trained at 16 GT/s of 32.
  Investigated inv = investigate_job(0, dir);
  ASSERT_EQ(inv.status, 0) << tail(inv.output);
  ASSERT_FALSE(inv.verdict.is_null()) << "the closing verdict, as trace prints it\n" << tail(inv.output);
  ASSERT_EQ(inv.verdict["stragglers"].size(), 1u) << tail(inv.output);
  EXPECT_EQ(inv.verdict["stragglers"][0]["rank"], 0);
  // One line per layer, in order down the stack.
  ASSERT_EQ(inv.layers.size(), 5u) << tail(inv.output);
  EXPECT_EQ(inv.layers["collective"]["state"], "ruled_in");
  EXPECT_EQ(inv.layers["pcie"]["state"], "ruled_in") << inv.layers["pcie"].dump();
  EXPECT_NE(evidence(inv.layers["pcie"]).find("link.downtrained"), std::string::npos) << inv.layers["pcie"].dump();
  // The host was watched (sched tracepoints, cgroups) and the fixture's NIC
  // counters read: both ruled out with what was seen.
  for (const char* name : {"host", "fabric"}) {
    EXPECT_EQ(inv.layers[name]["state"], "ruled_out") << inv.layers[name].dump();
    EXPECT_NE(evidence(inv.layers[name]).find("concerns rank 0"), std::string::npos) << inv.layers[name].dump();
    EXPECT_FALSE(inv.layers[name]["looked_at"].empty()) << inv.layers[name].dump();
  }
  // The graph's first path: the symptom, rank 0, its GPU's link.
  ASSERT_FALSE(inv.graph.is_null()) << tail(inv.output);
  const json& edges = inv.graph["edges"];
  ASSERT_GE(edges.size(), 2u) << inv.graph.dump();
  EXPECT_EQ(edges[0]["from"], "symptom");
  EXPECT_EQ(edges[0]["to"], "rank0");
  EXPECT_EQ(edges[1]["from"], "rank0");
  EXPECT_NE(edges[1]["evidence"].get<std::string>().find("link.downtrained"), std::string::npos) << inv.graph.dump();
  EXPECT_NE(inv.graph["conclusion"].get<std::string>().find("ruled out: host"), std::string::npos)
      << inv.graph["conclusion"];
  // The DOT renders.
  if (!find_program("dot")) GTEST_SKIP() << "graphviz not installed (apt-get install graphviz; make deps does)";
  auto render = Subprocess::spawn({"dot", "-Tsvg", "-o", (dir / "graph.svg").string(), (dir / "graph.dot").string()});
  ASSERT_TRUE(render);
  EXPECT_EQ(render->wait_for(30s), std::optional<int>(0)) << testing::read_text(dir / "graph.dot");
  EXPECT_NE(testing::read_text(dir / "graph.svg").find("<svg"), std::string::npos);
}

TEST(Investigate, AHealthyJobListsTheLayersCheckedAndFindsNothing) {
  SKIP_UNLESS_MPI();
  TempDir dir;
  Investigated inv = investigate_job(-1, dir);
  ASSERT_EQ(inv.status, 0) << tail(inv.output);
  ASSERT_FALSE(inv.verdict.is_null()) << tail(inv.output);
  EXPECT_TRUE(inv.verdict["stragglers"].empty()) << inv.verdict.dump();
  ASSERT_EQ(inv.layers.size(), 5u) << tail(inv.output);
  EXPECT_EQ(inv.layers["collective"]["state"], "ruled_out");
  EXPECT_EQ(inv.layers["host"]["state"], "ruled_out");
  ASSERT_FALSE(inv.graph.is_null());
  EXPECT_GE(inv.graph["nodes"].size(), 5u) << "not an empty graph: " << inv.graph.dump();
  EXPECT_EQ(inv.graph["conclusion"].get<std::string>().rfind("nothing found: checked collective, host", 0), 0u)
      << inv.graph["conclusion"];
}

}  // namespace
}  // namespace slowburn::investigate_cli_test
