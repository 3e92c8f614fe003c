// Fabric counters: deltas across wraps, resets and saturation; the sysfs
// port reader on the fixture tree; the monitor on scripted deltas of mlx5
// counter names; replay of a captured tree with a NIC that goes away.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/files.h"
#include "net/ethtool_dump.h"
#include "rdma/counter_delta.h"
#include "rdma/fabric_monitor.h"
#include "rdma/fabric_sampler.h"
#include "support/temp_dir.h"
#include "sysfs/rdma_ports.h"

namespace slowburn::fabric_test {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = fs::path(SLOWBURN_SOURCE_DIR) / "tests/fixtures";
constexpr uint64_t kSecond = 1'000'000'000;

TEST(CounterDelta, NormalWrapResetAndSaturation) {
  EXPECT_EQ(counter_delta(10, 25).delta, 15u);
  EXPECT_EQ(counter_delta(10, 25).kind, DeltaKind::normal);
  auto wrap32 = counter_delta(0xffffff00, 0x10);  // a 32-bit firmware counter rolled over
  EXPECT_EQ(wrap32.kind, DeltaKind::wrapped);
  EXPECT_EQ(wrap32.delta, 0x100u + 0x10u);
  auto wrap64 = counter_delta(~uint64_t{0} - 4, 5);
  EXPECT_EQ(wrap64.kind, DeltaKind::wrapped);
  EXPECT_EQ(wrap64.delta, 10u);
  auto reset = counter_delta(5000, 12);  // cleared: counts since the reset
  EXPECT_EQ(reset.kind, DeltaKind::reset);
  EXPECT_EQ(reset.delta, 12u);
  auto saturated = counter_delta(0xffff, 0xffff, ib_counter_saturation("symbol_error"));
  EXPECT_EQ(saturated.kind, DeltaKind::saturated);
  EXPECT_EQ(saturated.delta, 0u);
  EXPECT_EQ(counter_delta(0xfff0, 0xffff, ib_counter_saturation("symbol_error")).delta, 15u);
  EXPECT_EQ(ib_counter_saturation("link_downed"), 0xffu);
  EXPECT_FALSE(ib_counter_saturation("port_xmit_data").has_value());
}

TEST(RdmaPorts, ReadsTheFixturePortWithNotesForBadFiles) {
  auto ports = read_rdma_ports(kFixtures / "sys");
  ASSERT_EQ(ports.size(), 1u);
  const NicSample& p = ports[0];
  EXPECT_EQ(p.nic, "mlx5_0");
  EXPECT_EQ(p.port, 1u);
  EXPECT_EQ(p.netdev, "ib0");
  EXPECT_EQ(p.device, "0000:04:00.0");
  EXPECT_EQ(p.counters.at("port_xmit_data"), 1000000u);
  EXPECT_EQ(p.counters.at("np_cnp_sent"), 0u);
  EXPECT_EQ(p.counters.count("lifespan"), 0u);  // a setting, not a counter
  EXPECT_EQ(p.counters.count("VL15_dropped"), 0u);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_EQ(p.notes[0], "mlx5_0 port 1: counters/VL15_dropped is not a counter: 'N/A'");
  EXPECT_TRUE(read_rdma_ports(kFixtures / "sys", {"eth9"}).empty());
  EXPECT_EQ(read_rdma_ports(kFixtures / "sys", {"ib0"}).size(), 1u);  // by netdev
  EXPECT_TRUE(read_rdma_ports("/nonexistent").empty());
}

// Soft-RoCE as Linux 6.1 shows it (rdma link add rxe0 type rxe netdev veth0):
// no device link, the netdev named only in the port's GID table, whose
// unset entries cannot be read.
TEST(RdmaPorts, FindsSoftRoceNetdevInTheGidTable) {
  testing::TempDir sys;
  fs::path port = sys / "class/infiniband/rxe0/ports/1";
  fs::create_directories(port / "counters");
  fs::create_directories(port / "gid_attrs/ndevs");
  std::ofstream(port / "counters/port_xmit_packets") << "42\n";
  std::ofstream(port / "gid_attrs/ndevs/1") << "veth0\n";
  std::ofstream(port / "gid_attrs/ndevs/10") << "other0\n";
  fs::create_directory(port / "gid_attrs/ndevs/0");  // unreadable as a file, as an unset entry
  auto ports = read_rdma_ports(sys.path());
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(ports[0].nic, "rxe0");
  EXPECT_EQ(ports[0].netdev, "veth0");
  EXPECT_EQ(ports[0].device, "");  // a virtual device: no PCI function
  EXPECT_EQ(ports[0].counters.at("port_xmit_packets"), 42u);
  EXPECT_EQ(read_rdma_ports(sys.path(), {"veth0"}).size(), 1u);  // selected by its netdev
}

TEST(EthtoolDump, ParsesACaptureAndNamesBadLines) {
  auto text = read_file(kFixtures / "ethtool/ib0");
  ASSERT_TRUE(text.ok());
  auto stats = parse_ethtool_dump(*text);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->size(), 25u);
  EXPECT_EQ((*stats)[0], (std::pair<std::string, uint64_t>{"rx_packets", 1200000}));
  auto bad = parse_ethtool_dump("NIC statistics:\n     rx_packets: 12\n     tx_packets: lots\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("line 3: 'tx_packets: lots'"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(parse_ethtool_dump("").ok());
}

// A port's counters over scripted intervals.
class Port {
 public:
  explicit Port(std::map<std::string, uint64_t> counters) { sample_.counters = std::move(counters); }
  Port& add(const std::string& name, uint64_t n) {
    sample_.counters[name] += n;
    return *this;
  }
  Port& set(const std::string& name, uint64_t v) {
    sample_.counters[name] = v;
    return *this;
  }
  FabricSnapshot at(uint64_t ts_ns) const {
    NicSample s = sample_;
    s.nic = "mlx5_0";
    s.netdev = "eth0";
    s.device = "0000:04:00.0";
    return {ts_ns, {s}};
  }

 private:
  NicSample sample_;
};

std::map<std::string, uint64_t> mlx5_baseline() {
  std::map<std::string, uint64_t> c;
  for (const char* n : {"symbol_error",
                        "link_downed",
                        "port_rcv_errors",
                        "link_error_recovery",
                        "out_of_sequence",
                        "packet_seq_err",
                        "local_ack_timeout_err",
                        "roce_adp_retrans",
                        "np_cnp_sent",
                        "rp_cnp_handled",
                        "np_ecn_marked_roce_packets",
                        "req_transport_retries_exceeded",
                        "rx_prio3_pause",
                        "rx_prio3_pause_duration",
                        "tx_prio3_pause",
                        "tx_prio3_pause_duration",
                        "tx_pause_storm_warning_events",
                        "tx_pause_storm_error_events",
                        "link_down_events_phy",
                        "rx_pcs_symbol_err_phy"})
    c[n] = 0;
  c["port_xmit_data"] = 1000;
  c["port_rcv_data"] = 2000;
  return c;
}

std::vector<std::string> types(const std::vector<FabricEvent>& events) {
  std::vector<std::string> out;
  for (const FabricEvent& e : events) out.push_back(e.type + "/" + e.severity);
  return out;
}

TEST(FabricMonitor, BaselineThenQuietIntervalsRaiseNothing) {
  FabricMonitor monitor;
  Port port(mlx5_baseline());
  EXPECT_TRUE(monitor.update(port.at(1 * kSecond)).empty());
  EXPECT_TRUE(monitor.rates().empty());  // no interval yet
  // Traffic and a little pause, all below every threshold.
  port.add("port_xmit_data", 250'000'000).add("port_rcv_data", 125'000'000);
  port.add("rx_prio3_pause", 20).add("rx_prio3_pause_duration", 5'000);  // 5 ms of 1 s: 0.5%
  port.add("np_cnp_sent", 100);
  EXPECT_TRUE(monitor.update(port.at(2 * kSecond)).empty());
  ASSERT_EQ(monitor.rates().size(), 1u);
  const NicRates& r = monitor.rates()[0];
  EXPECT_DOUBLE_EQ(r.interval_s, 1.0);
  EXPECT_DOUBLE_EQ(*r.tx_bytes_per_s, 1e9);  // port_xmit_data counts 4-byte words
  EXPECT_DOUBLE_EQ(*r.rx_bytes_per_s, 5e8);
  EXPECT_DOUBLE_EQ(r.pause.at("3").rx_share, 0.005);
  EXPECT_DOUBLE_EQ(r.pause.at("3").rx_frames_per_s, 20);
  EXPECT_DOUBLE_EQ(r.cnp_sent_per_s, 100);
}

TEST(FabricMonitor, PauseStormsByShareAndByTheNicsStormCounters) {
  FabricMonitor monitor;
  Port port(mlx5_baseline());
  monitor.update(port.at(0));
  port.add("rx_prio3_pause", 9000).add("rx_prio3_pause_duration", 600'000);  // 0.6 s of 2 s: 30%
  port.add("tx_prio3_pause_duration", 1'200'000);                            // 60%
  port.add("tx_pause_storm_error_events", 1);
  auto events = monitor.update(port.at(2 * kSecond));
  ASSERT_EQ(types(events),
            (std::vector<std::string>{"pfc.pause_storm/warning", "pfc.pause_storm/error", "pfc.pause_storm/error"}));
  EXPECT_EQ(events[0].direction, "rx");
  EXPECT_EQ(events[0].priority, "3");
  EXPECT_DOUBLE_EQ(events[0].value, 0.3);
  EXPECT_EQ(events[0].deltas.at("rx_prio3_pause"), 9000u);
  EXPECT_EQ(events[0].summary,
            "mlx5_0 port 1 (eth0): priority 3 paused by its peer 30% of the last 2.0 s (4500 pause frames/s): the "
            "fabric downstream cannot drain");
  EXPECT_EQ(events[1].direction, "tx");
  EXPECT_DOUBLE_EQ(events[1].value, 0.6);
  EXPECT_EQ(events[2].deltas.at("tx_pause_storm_error_events"), 1u);
  EXPECT_EQ(events[0].device, "0000:04:00.0");
}

TEST(FabricMonitor, CongestionRetransmissionsFlapsAndErrors) {
  FabricMonitor monitor;
  Port port(mlx5_baseline());
  monitor.update(port.at(0));
  port.add("np_cnp_sent", 5000).add("np_ecn_marked_roce_packets", 5200);
  port.add("out_of_sequence", 4).add("local_ack_timeout_err", 2);
  port.add("link_downed", 1);
  port.add("symbol_error", 7).add("rx_pcs_symbol_err_phy", 3);
  auto events = monitor.update(port.at(kSecond));
  ASSERT_EQ(types(events), (std::vector<std::string>{"ecn.cnp_surge/warning", "rdma.retrans/error", "link.flap/error",
                                                     "link.errors/warning"}));
  EXPECT_DOUBLE_EQ(events[0].value, 5000);
  EXPECT_DOUBLE_EQ(events[1].value, 6);
  EXPECT_EQ(
      events[1].summary,
      "mlx5_0 port 1 (eth0): 6.0 retransmissions/s (local_ack_timeout_err +2, out_of_sequence +4): gaps in what it "
      "received, a peer's packets lost on their way");
  EXPECT_EQ(events[1].direction, "rx") << "more gaps than own resends";
  EXPECT_EQ(events[3].value, 7);  // symbol_error and the PHY's count are one family: the larger
  EXPECT_EQ(monitor.rates()[0].link_downs, 1u);

  // Retransmissions without timeouts are a warning; retries exhausted alone an error.
  port.add("roce_adp_retrans", 3);
  EXPECT_EQ(types(monitor.update(port.at(2 * kSecond))), (std::vector<std::string>{"rdma.retrans/warning"}));
  port.add("req_transport_retries_exceeded", 1);
  auto exhausted = monitor.update(port.at(3 * kSecond));
  ASSERT_EQ(types(exhausted), (std::vector<std::string>{"rdma.retrans/error"}));
  EXPECT_NE(exhausted[0].summary.find("ran out of retries"), std::string::npos);
}

// Soft-RoCE (rdma_rxe) names its counters its own way: the requester's
// retries, the NAKs and the responder's gaps are retransmissions; retries
// exhausted is the QP gone to ERR. rxe0's hw_counters as 6.1 writes them.
TEST(FabricMonitor, SoftRoceRetransmissionsAndExhaustedRetries) {
  FabricMonitor monitor;
  std::map<std::string, uint64_t> rxe;
  for (const char* n : {"sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request", "rcvd_rnr_err",
                        "send_rnr_err", "rcvd_seq_err", "ack_deferred", "retry_exceeded_err", "retry_rnr_exceeded_err",
                        "completer_retry_err", "send_err", "link_downed", "rdma_sends", "rdma_recvs"})
    rxe[n] = 0;
  Port port(rxe);
  monitor.update(port.at(0));
  port.add("completer_retry_err", 6).add("rcvd_seq_err", 2).add("sent_pkts", 900);
  auto events = monitor.update(port.at(2 * kSecond));
  ASSERT_EQ(types(events), (std::vector<std::string>{"rdma.retrans/warning"}));
  EXPECT_DOUBLE_EQ(events[0].value, 4);
  EXPECT_EQ(events[0].summary, "mlx5_0 port 1 (eth0): 4.0 retransmissions/s (completer_retry_err +6, rcvd_seq_err +2)");
  EXPECT_EQ(events[0].direction, "tx") << "its own resends";
  port.add("retry_exceeded_err", 1);
  auto exhausted = monitor.update(port.at(3 * kSecond));
  ASSERT_EQ(types(exhausted), (std::vector<std::string>{"rdma.retrans/error"}));
  EXPECT_EQ(exhausted[0].deltas.at("retry_exceeded_err"), 1u);
  EXPECT_NE(exhausted[0].summary.find("ran out of retries"), std::string::npos);
  port.add("link_downed", 1);
  EXPECT_EQ(types(monitor.update(port.at(4 * kSecond))), (std::vector<std::string>{"link.flap/error"}));
}

// The responder's gaps alone are a peer's packets lost on their way here
// ("rx"); with this port's own resends past the threshold too, "tx". As the
// 6.1 guest's two rxe ports counted a loss on rank 0's egress (RESULTS 40).
TEST(FabricMonitor, GapsInWhatAPortReceivedAreToldFromItsOwnResends) {
  FabricMonitor monitor;
  std::map<std::string, uint64_t> rxe;
  for (const char* n : {"out_of_seq_request", "completer_retry_err", "rcvd_seq_err", "retry_exceeded_err"}) rxe[n] = 0;
  Port port(rxe);
  monitor.update(port.at(0));
  port.add("out_of_seq_request", 40).add("completer_retry_err", 1);  // one resend in 2 s: under 1/s
  auto gaps = monitor.update(port.at(2 * kSecond));
  ASSERT_EQ(types(gaps), (std::vector<std::string>{"rdma.retrans/warning"}));
  EXPECT_EQ(gaps[0].direction, "rx");
  EXPECT_DOUBLE_EQ(gaps[0].value, 20.5);
  EXPECT_EQ(gaps[0].summary,
            "mlx5_0 port 1 (eth0): 20.5 retransmissions/s (completer_retry_err +1, out_of_seq_request +40): gaps in "
            "what it received, a peer's packets lost on their way");
  port.add("out_of_seq_request", 10).add("completer_retry_err", 12);  // its own resends outnumber the gaps
  auto both = monitor.update(port.at(3 * kSecond));
  ASSERT_EQ(types(both), (std::vector<std::string>{"rdma.retrans/warning"}));
  EXPECT_EQ(both[0].direction, "tx");
  port.add("out_of_seq_request", 40).add("retry_exceeded_err", 1);
  EXPECT_EQ(monitor.update(port.at(4 * kSecond))[0].direction, "tx") << "its own QPs ran out of retries";

  // mlx5's names: out_of_sequence is the responder's gaps; an ACK timeout
  // beside more gaps is still "rx" (an ACK lost on the way in times out
  // too), and resends that outnumber the gaps are "tx".
  FabricMonitor mlx5;
  Port cx(mlx5_baseline());
  mlx5.update(cx.at(0));
  cx.add("out_of_sequence", 5);
  auto rx = mlx5.update(cx.at(kSecond));
  ASSERT_EQ(types(rx), (std::vector<std::string>{"rdma.retrans/warning"}));
  EXPECT_EQ(rx[0].direction, "rx");
  cx.add("out_of_sequence", 5).add("local_ack_timeout_err", 2);
  auto timeout = mlx5.update(cx.at(2 * kSecond));
  ASSERT_EQ(types(timeout), (std::vector<std::string>{"rdma.retrans/error"}));
  EXPECT_EQ(timeout[0].direction, "rx");
  cx.add("out_of_sequence", 2).add("packet_seq_err", 3);
  EXPECT_EQ(mlx5.update(cx.at(3 * kSecond))[0].direction, "tx") << "sequence NAKs it received: its sends lost";
}

TEST(FabricMonitor, ThresholdsAreConfigurable) {
  FabricThresholds strict;
  strict.pause_share = 0.001;
  strict.cnp_per_s = 10;
  FabricThresholds lax;
  lax.retrans_per_s = 100;
  lax.link_errors = 50;
  FabricMonitor strict_monitor(strict), lax_monitor(lax);
  Port port(mlx5_baseline());
  strict_monitor.update(port.at(0));
  lax_monitor.update(port.at(0));
  port.add("rx_prio3_pause_duration", 5'000).add("np_cnp_sent", 20).add("out_of_sequence", 5).add("symbol_error", 5);
  EXPECT_EQ(types(strict_monitor.update(port.at(kSecond))),
            (std::vector<std::string>{"pfc.pause_storm/warning", "ecn.cnp_surge/warning", "rdma.retrans/warning",
                                      "link.errors/warning"}));
  EXPECT_TRUE(lax_monitor.update(port.at(kSecond)).empty());
}

TEST(FabricMonitor, WrapsAreCountedResetsAndSaturationReported) {
  FabricMonitor monitor;
  Port port(mlx5_baseline());
  port.set("out_of_sequence", 0xfffffffe).set("symbol_error", 0xffff);
  monitor.update(port.at(0));
  port.set("out_of_sequence", 1);  // 32-bit wrap: +3
  auto events = monitor.update(port.at(kSecond));
  ASSERT_EQ(types(events), (std::vector<std::string>{"rdma.retrans/warning"}));
  EXPECT_EQ(events[0].deltas.at("out_of_sequence"), 3u);
  auto notes = monitor.take_new_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("symbol_error is saturated at 65535"), std::string::npos) << notes[0];
  monitor.update(port.at(2 * kSecond));
  EXPECT_TRUE(monitor.take_new_notes().empty());  // each note once

  port.set("port_xmit_data", 10);  // cleared: 1000 -> 10
  events = monitor.update(port.at(3 * kSecond));
  ASSERT_EQ(types(events), (std::vector<std::string>{"counters.reset/info"}));
  EXPECT_NE(events[0].summary.find("port_xmit_data"), std::string::npos);
  EXPECT_DOUBLE_EQ(*monitor.rates()[0].tx_bytes_per_s, 40);  // counted from zero

  // A 64-bit pause-duration counter reset from just above 2^31 reads like a
  // 32-bit wrap: over a second longer than the second. Not a storm.
  port.set("rx_prio3_pause_duration", 0x90000000);  // itself a jump no second holds: ignored too
  EXPECT_TRUE(monitor.update(port.at(4 * kSecond)).empty());
  port.set("rx_prio3_pause_duration", 5);
  EXPECT_TRUE(monitor.update(port.at(5 * kSecond)).empty());
  notes = monitor.take_new_notes();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[1].find("rx_prio3_pause_duration moved by 1879048197 us in 1.0 s: a counter reset, ignored"),
            std::string::npos)
      << notes[1];
  EXPECT_DOUBLE_EQ(monitor.rates()[0].pause.at("3").rx_share, 0);
}

TEST(FabricMonitor, ANicThatDisappearsAndReturns) {
  FabricMonitor monitor;
  Port port(mlx5_baseline());
  monitor.update(port.at(0));
  auto gone = monitor.update(FabricSnapshot{kSecond, {}});
  ASSERT_EQ(types(gone), (std::vector<std::string>{"nic.gone/error"}));
  EXPECT_EQ(gone[0].summary, "mlx5_0 port 1 (eth0): disappeared (device removed, reset or driver unloaded)");
  EXPECT_TRUE(monitor.update(FabricSnapshot{2 * kSecond, {}}).empty());  // once
  // Back with counters from zero: a new baseline, not a reset or a storm.
  Port fresh(mlx5_baseline());
  fresh.set("port_xmit_data", 0).set("link_downed", 0);
  auto back = monitor.update(fresh.at(3 * kSecond));
  ASSERT_EQ(types(back), (std::vector<std::string>{"nic.back/info"}));
  fresh.add("link_downed", 1);
  EXPECT_EQ(types(monitor.update(fresh.at(4 * kSecond))), (std::vector<std::string>{"link.flap/error"}));
}

// A copy of the fixture tree, edited between samples as a live sysfs changes.
class ReplayTree {
 public:
  ReplayTree() {
    fs::copy(kFixtures / "sys", dir_.path() / "sys", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    fs::copy(kFixtures / "ethtool", dir_.path() / "ethtool", fs::copy_options::recursive);
  }
  fs::path sys() const { return dir_.path() / "sys"; }
  fs::path ethtool() const { return dir_.path() / "ethtool"; }
  void write(const std::string& counter_path, uint64_t value) {
    std::ofstream(sys() / "class/infiniband/mlx5_0/ports/1" / counter_path) << value << "\n";
  }

 private:
  testing::TempDir dir_;
};

TEST(FabricReplay, ScriptedSysfsAndEthtoolCaptures) {
  ReplayTree tree;
  FabricSamplerOptions options;
  options.sysfs_root = tree.sys();
  options.ethtool_dir = tree.ethtool();
  FabricMonitor monitor;
  FabricSnapshot first = sample_fabric(options, 0);
  ASSERT_EQ(first.nics.size(), 1u);
  EXPECT_EQ(first.nics[0].counters.at("rx_prio3_pause_duration"), 2000u);  // from the ethtool capture
  EXPECT_EQ(first.nics[0].counters.at("port_xmit_data"), 1000000u);        // from sysfs
  EXPECT_TRUE(monitor.update(first).empty());
  ASSERT_EQ(monitor.take_new_notes().size(), 1u);  // VL15_dropped

  tree.write("hw_counters/local_ack_timeout_err", 9);
  tree.write("counters/link_downed", 1);
  std::ofstream(tree.ethtool() / "ib0") << "NIC statistics:\n     rx_prio3_pause: 900\n"
                                        << "     rx_prio3_pause_duration: 802000\n";  // +0.8 s of 1 s
  auto events = monitor.update(sample_fabric(options, kSecond));
  EXPECT_EQ(types(events),
            (std::vector<std::string>{"pfc.pause_storm/error", "rdma.retrans/error", "link.flap/error"}));

  // A counter file vanishes, another turns to garbage: notes, no crash.
  fs::remove(tree.sys() / "class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent");
  std::ofstream(tree.sys() / "class/infiniband/mlx5_0/ports/1/counters/symbol_error") << "garbage\n";
  std::ofstream(tree.ethtool() / "ib0") << "this is not ethtool output\n";
  EXPECT_TRUE(monitor.update(sample_fabric(options, 2 * kSecond)).empty());
  auto notes = monitor.take_new_notes();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("counters/symbol_error is not a counter: 'garbage'"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("ib0: ethtool statistics"), std::string::npos) << notes[1];

  // The NIC goes away (driver unloaded): reported, and the sampler copes.
  fs::remove_all(tree.sys() / "class/infiniband/mlx5_0");
  EXPECT_EQ(types(monitor.update(sample_fabric(options, 3 * kSecond))), (std::vector<std::string>{"nic.gone/error"}));
}

}  // namespace
}  // namespace slowburn::fabric_test
