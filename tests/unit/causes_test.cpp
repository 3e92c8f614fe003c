#include "detect/causes.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/finding_explainer.h"
#include "sinks/json_sink.h"
#include "sources/device_events.h"

namespace slowburn::causes_test {
namespace {

DeviceEvent event(std::string type, std::string device, std::vector<int> ranks,
                  std::optional<EventSeverity> severity = std::nullopt) {
  DeviceEvent e;
  e.type = std::move(type);
  e.device = std::move(device);
  e.ranks = std::move(ranks);
  e.summary = e.type + " on " + e.device;
  e.severity = severity;
  return e;
}

Finding finding_for(int rank) {
  Finding f;
  f.type = "straggler";
  f.culprit.rank = rank;
  f.culprit.pid = 100 + rank;
  f.summary = "rank is the straggler";
  return f;
}

TEST(Causes, EventsOnTheCulpritsDevicesMostSevereFirst) {
  std::vector<DeviceEvent> events = {
      event("aer", "0000:03:00.0", {2}, EventSeverity::warning),
      event("link.downtrained", "0000:02:00.0", {2, 3}),
      event("link.recovered", "0000:02:00.0", {2, 3}),  // not a cause
      event("xid", "0000:05:00.0", {1}),                // another rank's GPU
      event("xid", "0000:03:00.0", {2}),
      event("xid", "0000:03:00.0", {2}),  // the same (type, device) once
  };
  Finding f = finding_for(2);
  ASSERT_TRUE(attach_likely_causes(f, events));
  EXPECT_EQ(f.likely_causes, (std::vector<std::string>{"xid on 0000:03:00.0", "link.downtrained on 0000:02:00.0",
                                                       "aer on 0000:03:00.0"}));
  EXPECT_EQ(f.summary, "rank is the straggler; likely cause: xid on 0000:03:00.0");
  // Re-attaching (at the summary) replaces, it does not repeat.
  Finding again = finding_for(2);
  attach_likely_causes(again, events);
  EXPECT_EQ(again.likely_causes.size(), 3u);
  Finding none = finding_for(0);
  EXPECT_FALSE(attach_likely_causes(none, events));
  EXPECT_TRUE(none.likely_causes.empty());
}

TEST(Causes, ANodeWithEccActivitySaysSoAfterTheCause) {
  std::vector<DeviceEvent> events = {event("link.downtrained", "0000:02:00.0", {2})};
  Finding f = finding_for(2);
  attach_likely_causes(f, events);
  attach_sdc_activity(f, "ECC/EDAC/MCE activity: memory.edac_ce mc0: 12 corrected since boot; +3 in 60 s");
  EXPECT_EQ(f.summary,
            "rank is the straggler; likely cause: link.downtrained on 0000:02:00.0; the node shows ECC/EDAC/MCE "
            "activity: memory.edac_ce mc0: 12 corrected since boot; +3 in 60 s");
  std::ostringstream out;
  JsonSink(out, "node-1", 0).finding(f);
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["sdc_activity"], "ECC/EDAC/MCE activity: memory.edac_ce mc0: 12 corrected since boot; +3 in 60 s");
  // A quiet node: the field is null and the summary says nothing.
  Finding quiet = finding_for(2);
  attach_sdc_activity(quiet, std::nullopt);
  EXPECT_EQ(quiet.summary, "rank is the straggler");
  std::ostringstream out2;
  JsonSink(out2, "node-1", 0).finding(quiet);
  EXPECT_TRUE(nlohmann::json::parse(out2.str())["sdc_activity"].is_null());
}

TEST(Causes, AServiceAsksItsOwnQuestionForEventsSeenBeforeTheJob) {
  // A link found degraded when the service started: no rank used it yet.
  std::vector<DeviceEvent> events = {event("link.downtrained", "0000:03:00.0", {})};
  Finding f = finding_for(2);
  EXPECT_FALSE(attach_likely_causes(f, events)) << "by rank number, nobody";
  auto by_pid = [](const DeviceEvent& e, const RankIdentity& who) {
    return e.device == "0000:03:00.0" && who.pid == 102;
  };
  ASSERT_TRUE(attach_likely_causes(f, events, by_pid));
  EXPECT_EQ(f.likely_causes, (std::vector<std::string>{"link.downtrained on 0000:03:00.0"}));
  Finding other = finding_for(3);
  EXPECT_FALSE(attach_likely_causes(other, events, by_pid));
}

TEST(Causes, TheDataPathsCausesAreEvidenceInsideTheCollectiveNotTheCpus) {
  EXPECT_TRUE(data_path_cause(event("host.tcp_retrans", "", {1})));
  EXPECT_TRUE(data_path_cause(event("rdma.retrans", "mlx5_0", {1})));
  EXPECT_TRUE(data_path_cause(event("link.downtrained", "0000:02:00.0", {1})));
  EXPECT_FALSE(data_path_cause(event("pfc.pause_storm", "mlx5_0", {1}))) << "congestion's victim as often as not";
  EXPECT_FALSE(data_path_cause(event("xid", "0000:05:00.0", {1}))) << "its GPU computes late: the arrival test's";
  EXPECT_FALSE(data_path_cause(event("ecn.cnp_surge", "mlx5_0", {1}))) << "told to slow down, as by pauses";
  EXPECT_FALSE(data_path_cause(event("host.cpu_throttled", "", {1}))) << "the kernel's CPU times judge that";
  EXPECT_FALSE(data_path_cause(event("link.recovered", "0000:02:00.0", {1}))) << "not a cause";
}

// rdma.retrans "rx" (gaps in what a port received) is a peer's packets lost:
// a weaker cause of this rank's slowness, and not its data path's evidence;
// a replay, which has the recorded cause rank and not the fields, agrees.
TEST(Causes, GapsInWhatARanksNicReceivedAreAPeersPathNotItsOwn) {
  FabricEvent retrans;
  retrans.type = "rdma.retrans";
  retrans.nic = "rxe_nic2";
  retrans.direction = "rx";
  DeviceEvent gaps = DeviceEventBuilder(nullptr).fabric(retrans);
  EXPECT_EQ(cause_rank(gaps), 4);
  EXPECT_FALSE(data_path_cause(gaps)) << "gaps in what it received: a peer's packets lost";
  retrans.direction = "tx";
  DeviceEvent own = DeviceEventBuilder(nullptr).fabric(retrans);
  EXPECT_EQ(cause_rank(own), 3);
  EXPECT_TRUE(data_path_cause(own)) << "its own sends resent";
  DeviceEvent replayed = event("rdma.retrans", "rxe_nic2", {1});  // no fields, as a recording reads back
  replayed.cause_rank = 4;
  EXPECT_FALSE(data_path_cause(replayed));
  replayed.cause_rank = 3;  // before stop 61 every rdma.retrans was recorded at 3
  EXPECT_TRUE(data_path_cause(replayed));
}

TEST(Causes, AnEventIsSaidOfItsRankAsIts) {
  RankIdentity rank = finding_for(1).culprit;
  DeviceEvent e = event("host.tcp_retrans", "", {1});
  e.summary = rank_label(rank) + "'s TCP sockets retransmitted 40 segments";
  EXPECT_EQ(event_about_rank(e, rank), "its TCP sockets retransmitted 40 segments");
  e.summary = "mlx5_0 retransmitted 40 packets";
  EXPECT_EQ(event_about_rank(e, rank), "mlx5_0 retransmitted 40 packets");
}

TEST(FindingExplainer, AnEventOlderThanItKeepsExplainsNothing) {
  FindingExplainer explainer({.keep_ns = 1'000'000'000, .max_events = 2, .by_node = false});
  DeviceEvent old_event = event("xid", "0000:03:00.0", {2});
  old_event.ts_ns = 1'000'000'000;
  explainer.add(old_event);
  Finding f = finding_for(2);
  explainer.explain(f, 1'500'000'000);
  EXPECT_EQ(f.likely_causes.size(), 1u) << "half a second old: a cause";
  Finding later = finding_for(2);
  explainer.explain(later, 2'500'000'000);
  EXPECT_TRUE(later.likely_causes.empty()) << "1.5 s old, kept for 1 s: history";
}

TEST(FindingExplainer, ASessionKeepsEveryEventAndSaysTheNodesSdcActivity) {
  FindingExplainer explainer;
  DeviceEvent old_event = event("link.downtrained", "0000:03:00.0", {2});
  old_event.ts_ns = 1'000'000'000;
  explainer.add(old_event);
  explainer.set_sdc_activity("ECC/EDAC/MCE activity: memory.edac_ce mc0: 12 corrected since boot");
  Finding f = finding_for(2);
  explainer.explain(f, 3'600'000'000'000);
  EXPECT_EQ(f.likely_causes, std::vector<std::string>{"link.downtrained on 0000:03:00.0"}) << "an hour later";
  EXPECT_EQ(f.sdc_activity, "ECC/EDAC/MCE activity: memory.edac_ce mc0: 12 corrected since boot");
  EXPECT_EQ(explainer.events().size(), 1u);
}

TEST(FindingExplainer, AMergedJobsCulpritIsExplainedByItsOwnNodesEventsAndNamedWithIt) {
  FindingExplainer explainer({.keep_ns = 0, .max_events = 0, .by_node = true});
  explainer.add(event("link.downtrained", "0000:03:00.0", {2}), "node-a");  // rank 2 on node-a is not the culprit
  explainer.add(event("xid", "0000:05:00.0", {2}), "node-b");
  Finding f = finding_for(2);
  f.culprit.host = "node-b";
  f.summary = rank_label(f.culprit) + " is the straggler";
  explainer.explain(f, 0);
  EXPECT_EQ(f.likely_causes, std::vector<std::string>{"xid on 0000:05:00.0"});
  EXPECT_EQ(f.summary.rfind("rank 2 (pid 102 on node-b) is the straggler", 0), 0u) << f.summary;
}

TEST(Causes, TheCulpritsOwnDeviceBeforeTheSwitchAboveIt) {
  DeviceEvent port = event("link.downtrained", "0000:02:00.0", {0});
  port.role = "switch-port";
  DeviceEvent gpu = event("link.downtrained", "0000:03:00.0", {0});
  gpu.role = "gpu";
  Finding f = finding_for(0);
  attach_likely_causes(f, std::vector<DeviceEvent>{port, gpu});
  EXPECT_EQ(f.likely_causes,
            (std::vector<std::string>{"link.downtrained on 0000:03:00.0", "link.downtrained on 0000:02:00.0"}));
}

TEST(Causes, TheCulpritsNicRetransmittingOrPausedIsNamed) {
  std::vector<DeviceEvent> events = {
      event("ecn.cnp_surge", "0000:04:00.0", {1}),
      event("rdma.retrans", "0000:04:00.0", {1}),
      event("pfc.pause_storm", "0000:06:00.0", {0}),                  // another rank's NIC
      event("rdma.async", "0000:04:00.0", {1}, EventSeverity::info),  // PORT_ACTIVE and the like explain nothing,
      event("nic.back", "0000:04:00.0", {1}),
      event("counters.reset", "0000:04:00.0", {1}),
  };
  Finding f = finding_for(1);
  ASSERT_TRUE(attach_likely_causes(f, events));
  EXPECT_EQ(f.likely_causes,
            (std::vector<std::string>{"rdma.retrans on 0000:04:00.0", "ecn.cnp_surge on 0000:04:00.0"}));
  events.push_back(event("rdma.async", "0000:04:00.0", {1}, EventSeverity::error));
  attach_likely_causes(f, events);
  EXPECT_EQ(f.likely_causes.front(), "rdma.async on 0000:04:00.0");  // a port error outranks congestion
}

TEST(DeviceEventBuilder, ASlowQpIsADataPathCauseNamedByItsNumber) {
  IbSlowConnection c{4242, IbDirection::qp, 2, 0x105, 900, 2'100'000, 250'000, 6.4};
  DeviceEvent e = DeviceEventBuilder(nullptr).slow_connection(c, 3, 7);
  EXPECT_EQ(e.type, "rdma.slow_qp");
  EXPECT_EQ(e.ranks, (std::vector<int>{3}));
  EXPECT_EQ(e.label, "pid 4242 qp 0x105");
  EXPECT_EQ(e.fields.at("qp_num"), 0x105);
  EXPECT_EQ(e.fields.at("direction"), "qp");
  EXPECT_FALSE(e.fields.contains("comm"));
  EXPECT_NE(e.summary.find("rank 3 pid 4242: QP 0x105: its sends complete 2.10 ms after posting on average over 900 "
                           "requests, 8.4x the job's median 250.00 us"),
            std::string::npos)
      << e.summary;
  EXPECT_TRUE(data_path_cause(e));
  EXPECT_EQ(e.pid, 4242);
  // Where the control path saw it connect: its NIC and peer.
  DeviceEvent connected = DeviceEventBuilder(nullptr).slow_connection(
      c, 3, 7, DeviceEventBuilder::QpPath{"mlx5_1", 0x2222, "fe80:0000:0000:0000:0000:0000:0000:0007"});
  EXPECT_NE(connected.summary.find(
                "QP 0x105 on mlx5_1 (to QP 0x2222 at GID fe80:0000:0000:0000:0000:0000:0000:0007): its sends"),
            std::string::npos)
      << connected.summary;
  EXPECT_EQ(connected.fields.at("nic"), "mlx5_1");
  EXPECT_EQ(connected.fields.at("dest_qp_num"), 0x2222);
  EXPECT_TRUE(connected.device.empty());
}

TEST(DeviceEventBuilder, FabricAndQpEventsJoinTheTopology) {
  const std::filesystem::path fixtures = std::filesystem::path(SLOWBURN_SOURCE_DIR) / "tests/fixtures";
  Topology topo = Topology::read(fixtures / "sys", fixtures / "proc-nvidia");
  RankIdentity r0, r1;
  r0.rank = 0, r0.local_rank = 0, r0.pid = 4001;
  r1.rank = 1, r1.local_rank = 1, r1.pid = 4002;
  topo.assign_ranks({r0, r1});
  DeviceEventBuilder builder(&topo);

  FabricEvent retrans;
  retrans.type = "rdma.retrans";
  retrans.nic = "mlx5_0";
  retrans.device = "0000:04:00.0";
  retrans.summary = "mlx5_0 port 1: 6.0 retransmissions/s";
  DeviceEvent e = builder.fabric(retrans);
  EXPECT_EQ(e.role, "nic");
  EXPECT_EQ(e.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(e.summary, "rdma.retrans mlx5_0 port 1: 6.0 retransmissions/s [ranks 0,1]");
  retrans.device.clear();  // found by its kernel name too
  EXPECT_EQ(builder.fabric(retrans).device, "0000:04:00.0");
  retrans.nic = "mlx5_9";  // not in the topology: no address made up from its name
  DeviceEvent unknown = builder.fabric(retrans);
  EXPECT_EQ(unknown.device, "");
  EXPECT_EQ(unknown.label, "mlx5_9");

  QpEvent qp;
  qp.type = "qp.error";
  qp.severity = "error";
  qp.device = "mlx5_0";
  qp.qp_num = 0x101;
  qp.summary = "pid 4002 mlx5_0: QP 0x101 moved RTS -> ERR";
  DeviceEvent q = builder.qp(qp, 1);
  EXPECT_EQ(q.device, "0000:04:00.0");
  EXPECT_EQ(q.ranks, (std::vector<int>{1}));  // the QP's process only
  QpEvent port = qp;
  port.type = "rdma.async";
  port.qp_num = 0;
  EXPECT_EQ(builder.qp(port, 1).ranks, (std::vector<int>{0, 1}));  // a port error: everyone on the NIC

  std::ostringstream out;
  JsonSink(out, "node-1", 0).device_event(e);
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["type"], "rdma.retrans");
  EXPECT_EQ(j["nic"], "mlx5_0");
  EXPECT_TRUE(j["counters"].is_object());
  std::ostringstream out2;
  qp.from_state = 3, qp.to_state = 6;
  JsonSink(out2, "node-1", 0).device_event(builder.qp(qp, 1));
  auto k = nlohmann::json::parse(out2.str());
  EXPECT_EQ(k["qp_num"], 0x101);
  EXPECT_EQ(k["from_state"], "RTS");
  EXPECT_EQ(k["to_state"], "ERR");
}

TEST(DeviceEventJson, XidHasTheDocumentedShape) {
  XidEvent xid;
  xid.code = 79;
  xid.pci = "0000:3b:00";
  xid.pid = 1234;
  xid.process = "python3";
  xid.message = "GPU has fallen off the bus.";
  DeviceEvent e = DeviceEventBuilder(nullptr).xid(xid, 1'000'000'000, "kmsg");
  e.role = "gpu";
  e.label = "GPU 3";
  e.ranks = {3};
  std::ostringstream out;
  JsonSink(out, "node-1", 0).device_event(e);
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["kind"], "event");
  EXPECT_EQ(j["type"], "xid");
  EXPECT_EQ(j["code"], 79);
  EXPECT_EQ(j["pci"], "0000:3b:00");
  EXPECT_EQ(j["pid"], 1234);
  EXPECT_EQ(j["process"], "python3");
  EXPECT_EQ(j["message"], "GPU has fallen off the bus.");
  EXPECT_EQ(j["severity"], "reboot-node");
  EXPECT_EQ(j["action"], "reboot the node; contact support if it recurs");
  EXPECT_EQ(j["device"], "0000:3b:00.0");
  EXPECT_EQ(j["ranks"], nlohmann::json::array({3}));
  EXPECT_DOUBLE_EQ(j["ts"].get<double>(), 1.0);

  XidEvent anonymous = xid;
  anonymous.pid.reset();
  anonymous.process.reset();
  e = DeviceEventBuilder(nullptr).xid(anonymous, 1'000'000'000, "kmsg");
  std::ostringstream out2;
  JsonSink(out2, "node-1", 0).device_event(e);
  auto k = nlohmann::json::parse(out2.str());
  EXPECT_TRUE(k["pid"].is_null());
  EXPECT_TRUE(k["process"].is_null());
}

}  // namespace
}  // namespace slowburn::causes_test
