#include "detect/causes.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "sinks/json_sink.h"

namespace slowburn {
namespace {

DeviceEvent event(std::string type, std::string device, std::vector<int> ranks, DevicePayload payload) {
  DeviceEvent e;
  e.type = std::move(type);
  e.device = std::move(device);
  e.ranks = std::move(ranks);
  e.summary = e.type + " on " + e.device;
  e.payload = std::move(payload);
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
  AerEvent correctable;
  correctable.severity = AerSeverity::correctable;
  std::vector<DeviceEvent> events = {
      event("aer", "0000:03:00.0", {2}, correctable),
      event("link.downtrained", "0000:02:00.0", {2, 3}, LinkEvent{}),
      event("link.recovered", "0000:02:00.0", {2, 3}, LinkEvent{}),  // not a cause
      event("xid", "0000:05:00.0", {1}, XidReport{}),                // another rank's GPU
      event("xid", "0000:03:00.0", {2}, XidReport{}),
      event("xid", "0000:03:00.0", {2}, XidReport{}),  // the same (type, device) once
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

TEST(Causes, TheCulpritsOwnDeviceBeforeTheSwitchAboveIt) {
  DeviceEvent port = event("link.downtrained", "0000:02:00.0", {0}, LinkEvent{});
  port.role = "switch-port";
  DeviceEvent gpu = event("link.downtrained", "0000:03:00.0", {0}, LinkEvent{});
  gpu.role = "gpu";
  Finding f = finding_for(0);
  attach_likely_causes(f, {port, gpu});
  EXPECT_EQ(f.likely_causes,
            (std::vector<std::string>{"link.downtrained on 0000:03:00.0", "link.downtrained on 0000:02:00.0"}));
}

TEST(DeviceEventJson, XidHasTheDocumentedShape) {
  DeviceEvent e;
  e.type = "xid";
  e.ts_ns = 1'000'000'000;
  e.device = "0000:3b:00.0";
  e.role = "gpu";
  e.label = "GPU 3";
  e.ranks = {3};
  XidReport r;
  r.xid.code = 79;
  r.xid.pci = "0000:3b:00";
  r.xid.pid = 1234;
  r.xid.process = "python3";
  r.xid.message = "GPU has fallen off the bus.";
  r.info = xid_info(79);
  r.source = "kmsg";
  e.payload = r;
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

  XidReport anonymous = r;
  anonymous.xid.pid.reset();
  anonymous.xid.process.reset();
  e.payload = anonymous;
  std::ostringstream out2;
  JsonSink(out2, "node-1", 0).device_event(e);
  auto k = nlohmann::json::parse(out2.str());
  EXPECT_TRUE(k["pid"].is_null());
  EXPECT_TRUE(k["process"].is_null());
}

}  // namespace
}  // namespace slowburn
