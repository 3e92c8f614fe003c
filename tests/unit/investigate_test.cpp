// The layer-by-layer method on what a session saw: layers ruled in and out
// with their evidence, and the failure graph's most likely path first.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "investigate/investigation.h"
#include "investigate/investigation_output.h"

namespace slowburn::investigate_test {
namespace {

Finding straggler(int rank, uint64_t cost_ns) {
  Finding f;
  f.type = "straggler";
  f.detector = "persistence";
  f.culprit.rank = rank;
  f.culprit.pid = 100 + rank;
  f.probe = "mpi.allreduce";
  f.last_fraction = 0.9;
  f.lateness_median_ns = 2.5e6;
  f.blame_share = 0.2;
  f.blame_dominance = 0.95;
  f.windows_flagged = 4;
  f.windows_considered = 5;
  f.cost_ns = cost_ns;
  f.cost_share = 0.12;
  f.summary = "rank is the straggler";
  return f;
}

DeviceEvent event(std::string type, std::vector<int> ranks, std::string label) {
  DeviceEvent e;
  e.type = std::move(type);
  e.ranks = std::move(ranks);
  e.label = std::move(label);
  e.summary = e.type + " on " + e.label;
  return e;
}

ProbeStatus source(std::string name, ProbeState state, std::string detail) {
  ProbeStatus s;
  s.probe = std::move(name);
  s.state = state;
  s.detail = std::move(detail);
  return s;
}

std::vector<ProbeStatus> every_source_attached() {
  return {source("host.sched", ProbeState::attached, "sched_switch"),
          source("host.cgroup", ProbeState::attached, "cgroup v1"),
          source("nvidia.xid", ProbeState::attached, "printk:console"),
          source("pcie.link", ProbeState::attached, "4 links"),
          source("pcie.aer", ProbeState::unavailable, "no ras:aer_event"),
          source("rdma.fabric", ProbeState::attached, "mlx5_0")};
}

const Layer& layer(const Investigation& inv, const std::string& name) {
  for (const Layer& l : inv.layers)
    if (l.name == name) return l;
  ADD_FAILURE() << "no layer " << name;
  return inv.layers.front();
}

std::string all(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

TEST(Investigate, TheDowntrainedLinkOfTheStragglersGpuIsTheMostLikelyPath) {
  InvestigationInput in;
  in.verdict.judged = true;
  in.verdict.instances = 900;
  in.verdict.stragglers = {straggler(0, 2'000'000'000)};
  in.traced_s = 10;
  in.sources = every_source_attached();
  in.events = {event("link.downtrained", {0}, "GPU 0"), event("link.recovered", {0}, "GPU 0"),  // no cause
               event("rdma.retrans", {1}, "mlx5_1"),                                            // another rank's NIC
               event("xid", {1}, "GPU 1")};                                                     // another rank's GPU
  in.devices_of[100] = {"GPU 0 (0000:03:00.0)", "mlx5_0 (0000:04:00.0)"};
  Investigation inv = investigate(in);

  ASSERT_EQ(inv.layers.size(), 5u);
  EXPECT_EQ(inv.layers[0].name, "collective");
  EXPECT_EQ(layer(inv, "collective").state, LayerState::ruled_in);
  EXPECT_EQ(layer(inv, "pcie").state, LayerState::ruled_in);
  EXPECT_NE(all(layer(inv, "pcie").evidence).find("rank 0 (pid 100): link.downtrained on GPU 0"), std::string::npos)
      << all(layer(inv, "pcie").evidence);
  for (const char* name : {"host", "gpu", "fabric"}) {
    const Layer& l = layer(inv, name);
    EXPECT_EQ(l.state, LayerState::ruled_out) << name;
    ASSERT_FALSE(l.evidence.empty()) << name;
    EXPECT_NE(l.evidence[0].find("concerns rank 0 (pid 100) (its devices: GPU 0 (0000:03:00.0)"), std::string::npos)
        << l.evidence[0];
    EXPECT_FALSE(l.looked_at.empty()) << name;
  }
  // Events on other ranks' devices were looked at, and set aside.
  EXPECT_NE(layer(inv, "gpu").evidence[0].find("1 event(s) concern other ranks"), std::string::npos);

  // The path: symptom -> rank 0 -> the link, then the ruled-out layers.
  const FailureGraph& g = inv.graph;
  ASSERT_GE(g.edges.size(), 2u);
  EXPECT_EQ(g.nodes[0].kind, "symptom");
  EXPECT_NE(g.nodes[0].label.find("lost 2.00 s"), std::string::npos) << g.nodes[0].label;
  EXPECT_EQ(g.edges[0].from, "symptom");
  EXPECT_EQ(g.edges[0].to, "rank0");
  EXPECT_DOUBLE_EQ(g.edges[0].confidence, 0.8);  // flagged in 4 of 5 windows
  EXPECT_EQ(g.edges[1].from, "rank0");
  EXPECT_EQ(g.edges[1].evidence, "link.downtrained on GPU 0");
  EXPECT_GT(g.edges[1].confidence, 0.5);
  int ruled_out = 0;
  for (const GraphNode& n : g.nodes) ruled_out += n.kind == "ruled_out";
  EXPECT_EQ(ruled_out, 3);
  EXPECT_EQ(inv.conclusion,
            "most likely: symptom -> rank 0 (pid 100) -> link.downtrained on GPU 0; ruled out: host, gpu, fabric");
}

TEST(Investigate, EachEventTypeHasItsLayer) {
  EXPECT_EQ(layer_of_event("host.cpu_throttled"), "host");
  // Read from the rank's process, about the path of its data.
  EXPECT_EQ(layer_of_event("host.tcp_retrans"), "fabric");
  EXPECT_EQ(layer_of_event("xid"), "gpu");
  EXPECT_EQ(layer_of_event("aer"), "pcie");
  EXPECT_EQ(layer_of_event("rdma.retrans"), "fabric");
  // A node's TCP sockets, readable nearly everywhere, rule out no fabric
  // (an InfiniBand job's or a VM's without RDMA): only their event rules it in.
  EXPECT_EQ(layer_of_source("host.tcp"), "host");
}

TEST(Investigate, AHealthyJobSaysWhatWasCheckedNotAnEmptyGraph) {
  InvestigationInput in;
  in.verdict.judged = true;
  in.verdict.windows_judged = 20;
  in.traced_s = 10;
  in.sources = every_source_attached();
  Investigation inv = investigate(in);
  EXPECT_EQ(layer(inv, "collective").state, LayerState::ruled_out);
  EXPECT_NE(all(layer(inv, "collective").evidence).find("no straggler and no hang"), std::string::npos);
  for (const char* name : {"host", "gpu", "pcie", "fabric"}) {
    EXPECT_EQ(layer(inv, name).state, LayerState::ruled_out) << name;
    EXPECT_NE(layer(inv, name).evidence.at(0).find("nothing found in"), std::string::npos) << name;
  }
  ASSERT_EQ(inv.graph.nodes.size(), 5u);  // the symptom and the four layers checked
  EXPECT_EQ(inv.graph.nodes[0].label, "no straggler or hang in 10 s traced");
  EXPECT_EQ(inv.graph.nodes[1].kind, "checked");
  EXPECT_EQ(inv.conclusion, "nothing found: checked collective, host, gpu, pcie, fabric");
}

// A recording with nothing judged and no source (investigate --from FILE
// of an empty session): never "checked ;" with an empty list.
TEST(Investigate, NothingCheckedSaysSoNotAnEmptyList) {
  InvestigationInput in;  // not judged, no source
  Investigation inv = investigate(in);
  EXPECT_EQ(inv.conclusion.find("checked ;"), std::string::npos) << inv.conclusion;
  EXPECT_EQ(inv.conclusion.find("checked  "), std::string::npos) << inv.conclusion;
  EXPECT_EQ(inv.conclusion.rfind("nothing found: ", 0), 0u) << inv.conclusion;
  std::cout << inv.conclusion << "\n";
}

TEST(Investigate, ALayerWithNoSourceIsNotCheckedAndSaysWhy) {
  InvestigationInput in;
  in.verdict.judged = true;
  in.verdict.stragglers = {straggler(2, 1'000'000'000)};
  in.sources = {source("host.sched", ProbeState::attached, ""),
                source("rdma.fabric", ProbeState::unavailable, "no RDMA device in /sys/class/infiniband")};
  in.events = {event("host.cpu_throttled", {2}, "cgroup /batch")};
  in.events[0].pid = 102;
  Investigation inv = investigate(in);
  EXPECT_EQ(layer(inv, "host").state, LayerState::ruled_in);
  const Layer& fabric = layer(inv, "fabric");
  EXPECT_EQ(fabric.state, LayerState::not_checked);
  EXPECT_EQ(fabric.looked_at, std::vector<std::string>{"rdma.fabric: unavailable (no RDMA device in "
                                                       "/sys/class/infiniband)"});
  EXPECT_NE(fabric.evidence.at(0).find("no source of NIC counters"), std::string::npos);
  EXPECT_EQ(layer(inv, "gpu").state, LayerState::not_checked);
  EXPECT_NE(inv.conclusion.find("-> host.cpu_throttled on cgroup /batch"), std::string::npos) << inv.conclusion;
  EXPECT_NE(inv.conclusion.find("not checked: gpu, pcie, fabric"), std::string::npos) << inv.conclusion;
}

TEST(Investigate, AHangComesBeforeAStragglerAndTheSdcRiskIsShown) {
  InvestigationInput in;
  in.verdict.judged = true;
  Finding hang = straggler(3, 0);
  hang.type = "hang";
  hang.waiting_ranks = {0, 1, 2};
  hang.waited_ns = 12'000'000'000;
  Finding slow = straggler(1, 5'000'000'000);
  slow.sdc_activity = "ECC/EDAC/MCE activity: memory.edac_ce mc0: +3";
  in.verdict.hangs = {hang};
  in.verdict.stragglers = {slow};
  in.sources = every_source_attached();
  Investigation inv = investigate(in);
  ASSERT_GE(inv.graph.edges.size(), 2u);
  EXPECT_EQ(inv.graph.edges[0].to, "rank3");
  EXPECT_EQ(inv.graph.edges[0].evidence, "ranks 0,1,2 waited 12.0 s inside mpi.allreduce");
  EXPECT_EQ(inv.graph.edges[1].to, "rank1");
  bool risk = false;
  for (const GraphNode& n : inv.graph.nodes) risk |= n.kind == "risk";
  EXPECT_TRUE(risk);
  EXPECT_NE(all(layer(inv, "host").evidence).find("memory.edac_ce mc0"), std::string::npos);
}

TEST(Investigate, TheFirstFailureLeadsAndItsFollowersAreNotCulprits) {
  InvestigationInput in;
  in.verdict.judged = true;
  Finding first = straggler(2, 0);
  first.type = "failure";
  first.detector = "lifecycle";
  ProcessEnd killed;
  killed.signal = 9;
  first.process = ended_view(killed);
  first.followed_by = {1, 0, 3};
  first.followed_within_ns = 70'000'000;
  Finding follower = straggler(1, 0);
  follower.type = "failure";
  in.verdict.failures = {first, follower};
  Finding mismatch = straggler(3, 0);
  mismatch.type = "mismatch";
  mismatch.probe = "mpi.bcast";
  in.verdict.hangs = {mismatch};
  in.sources = every_source_attached();
  Investigation inv = investigate(in);
  ASSERT_GE(inv.graph.edges.size(), 2u);
  EXPECT_EQ(inv.graph.edges[0].to, "rank2");
  EXPECT_EQ(inv.graph.edges[0].evidence, "ranks 1,0,3 ended within 0.07 s after it");
  EXPECT_EQ(inv.graph.edges[1].to, "rank3");
  for (const GraphEdge& e : inv.graph.edges) EXPECT_NE(e.to, "rank1") << "a follower is a victim";
  EXPECT_EQ(layer(inv, "collective").state, LayerState::ruled_in);
  EXPECT_NE(all(layer(inv, "collective").evidence).find("failure: "), std::string::npos);
  bool named = false;
  for (const GraphNode& n : inv.graph.nodes) named |= n.label.find("killed by SIGKILL") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(Investigate, AStragglerInsideTheCollectiveIsNotSaidToArriveLast) {
  InvestigationInput in;
  in.verdict.judged = true;
  Finding inside = straggler(1, 600'000'000);
  inside.detector = "inside";
  inside.where = "inside";
  inside.last_fraction = 0.25;
  inside.inside = InsideEvidence{0.26, 0.77, 0.55, 0.48, 4e6, std::nullopt, 0.31, true, {}};
  inside.likely_cause_type = "host.cpu_throttled";
  in.verdict.stragglers = {inside};
  in.sources = every_source_attached();
  Investigation inv = investigate(in);
  const GraphNode* mechanism = nullptr;
  for (const GraphNode& n : inv.graph.nodes)
    if (n.kind == "mechanism") mechanism = &n;
  ASSERT_NE(mechanism, nullptr);
  EXPECT_EQ(mechanism->label,
            "rank 1 (pid 101) arrives on time but holds up mpi.allreduce on its job from inside: its thread waited "
            "for a CPU 77% of its time there (its peers 48%)");
  ASSERT_FALSE(inv.graph.edges.empty());
  EXPECT_EQ(inv.graph.edges[0].evidence,
            "the collective waited for its CPU 31% of the window, flagged in 4 of 5 windows");
}

TEST(InvestigationOutput, JsonLinesAndDotCarryTheGraph) {
  InvestigationInput in;
  in.verdict.judged = true;
  in.verdict.stragglers = {straggler(0, 1'000'000'000)};
  in.sources = every_source_attached();
  in.events = {event("link.downtrained", {0}, "GPU \"0\"")};  // quotes survive into DOT
  Investigation inv = investigate(in);
  nlohmann::json l = layer_json(inv.layers[2]);
  EXPECT_EQ(l["kind"], "layer");
  EXPECT_EQ(l["layer"], "gpu");
  EXPECT_EQ(l["state"], "ruled_out");
  EXPECT_TRUE(l["evidence"].is_array());
  nlohmann::json g = graph_json(inv);
  EXPECT_EQ(g["kind"], "graph");
  EXPECT_EQ(g["nodes"][0]["id"], "symptom");
  EXPECT_EQ(g["edges"][1]["from"], "rank0");
  EXPECT_EQ(g["conclusion"], inv.conclusion);
  std::string dot = graph_dot(inv);
  EXPECT_EQ(dot.rfind("digraph failure {", 0), 0u);
  EXPECT_NE(dot.find("\"rank0\" -> \"cause1\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("GPU \\\"0\\\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("penwidth=2.5"), std::string::npos) << dot;
}

}  // namespace
}  // namespace slowburn::investigate_test
