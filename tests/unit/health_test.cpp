// slowburn health: the parsers, the collector on the fixture trees
// (tests/fixtures/health, hand-written by make-health-fixture.sh), the
// evaluator on pairs of readings, and this machine, where most sources are
// unavailable and each must say why.
#include <gtest/gtest.h>
#include <sys/timex.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "health/health_checks.h"
#include "net/dcb.h"
#include "nvidia/xid_catalog.h"
#include "procfs/ranks.h"
#include "support/temp_dir.h"

namespace slowburn::health_test {
namespace {

namespace fs = std::filesystem;

const fs::path kHealth = fs::path(SLOWBURN_SOURCE_DIR) / "tests/fixtures/health";

void write(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// A copy of the health fixture, edited between two readings as a live sysfs changes.
class HealthTree {
 public:
  HealthTree() {
    for (const char* tree : {"sys", "proc"})
      fs::copy(kHealth / tree, dir_ / tree, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    topology_ = Topology::read(sys(), proc());
    ranks_ = discover_ranks(proc());
    topology_.assign_ranks(ranks_);
  }
  fs::path sys() const { return dir_ / "sys"; }
  fs::path proc() const { return dir_ / "proc"; }

  HealthSnapshot read(bool with_log = true) const {
    HealthSources sources;
    sources.sysfs_root = sys();
    sources.proc_root = proc();
    if (with_log) sources.kmsg_file = kHealth / "kmsg";
    auto snapshot = collect_health(sources);
    EXPECT_TRUE(snapshot.ok()) << snapshot.error().message;
    return std::move(*snapshot);
  }
  HealthContext context() const {
    HealthContext c;
    c.topology = &topology_;
    c.ranks = ranks_;
    return c;
  }
  // Two readings with `change` applied between them.
  std::vector<CheckRow> evaluate_around(const std::function<void()>& change) const {
    HealthSnapshot before = read(false);
    change();
    HealthSnapshot after = read();
    after.ts_ns = before.ts_ns + 1'000'000'000;  // one second apart, whatever the machine's speed
    return evaluate_health(before, after, context());
  }

 private:
  testing::TempDir dir_;
  Topology topology_;
  std::vector<RankIdentity> ranks_;
};

const CheckRow& row(const std::vector<CheckRow>& checks, const std::string& check, const std::string& device = "") {
  for (const CheckRow& c : checks)
    if (c.check == check && c.device == device) return c;
  static const CheckRow missing{"missing", CheckState::unavailable, "", nullptr, nullptr, {}, "no such row", false, ""};
  ADD_FAILURE() << "no row " << check << " '" << device << "'";
  return missing;
}

std::string state(const CheckRow& c) { return std::string(check_state_name(c.state)); }

TEST(HealthParsers, CpuLists) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("\n"), std::vector<int>{});
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  EXPECT_FALSE(parse_cpu_list("3-1"));
  EXPECT_FALSE(parse_cpu_list("0-99999999"));
  EXPECT_FALSE(parse_cpu_list("a,b"));
  EXPECT_EQ(format_cpu_list({8, 0, 1, 2, 3, 11, 10}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({}), "");
}

TEST(HealthParsers, TaintBitsByTheKernelTable) {
  auto flags = decode_taint((1u << 0) | (1u << 4) | (1u << 9) | (1u << 12) | (1u << 18) | (1ull << 40));
  EXPECT_EQ(taint_letters(flags), "PMWON?");
  EXPECT_EQ(flags[1].meaning, "processor reported a Machine Check Exception (MCE)");
  EXPECT_EQ(flags[0].severity, CheckState::ok);    // the NVIDIA driver is proprietary
  EXPECT_EQ(flags[1].severity, CheckState::fail);  // a machine check
  EXPECT_EQ(flags[2].severity, CheckState::warn);
  EXPECT_EQ(flags[5].bit, 40);
  // Every letter the kernel documents, in bit order.
  EXPECT_EQ(taint_letters(decode_taint((1u << 19) - 1)), "PFSRMBUDAWCIOELKXTN");
  EXPECT_TRUE(decode_taint(0).empty());
}

TEST(HealthParsers, KernelLogLinesInEveryForm) {
  auto kmsg = parse_kernel_log_line("3,813,15234890,-;NVRM: Xid (PCI:0000:03:00): 48, pid=1, name=x, DBE\n");
  ASSERT_TRUE(kmsg);
  EXPECT_EQ(kmsg->ts_us, 15234890u);
  EXPECT_EQ(kmsg->level, 3);
  EXPECT_EQ(kmsg->message, "NVRM: Xid (PCI:0000:03:00): 48, pid=1, name=x, DBE");
  // A newer kernel's extra prefix fields ("caller=") still parse.
  auto caller = parse_kernel_log_line("12,40816,12002446993,-,caller=T123;hello");
  ASSERT_TRUE(caller);
  EXPECT_EQ(caller->level, 4);  // facility 1 (user) << 3 | 4
  EXPECT_EQ(caller->message, "hello");
  EXPECT_FALSE(parse_kernel_log_line(" SUBSYSTEM=pci"));     // a record's dictionary line
  EXPECT_FALSE(parse_kernel_log_line("3,813,15234890,-;"));  // a record without a message (found by the fuzzer)
  EXPECT_FALSE(parse_kernel_log_line(""));

  auto dmesg = parse_kernel_log_line("[   15.234567] mce: [Hardware Error]: Machine check events logged");
  ASSERT_TRUE(dmesg);
  EXPECT_EQ(dmesg->ts_us, 15234567u);
  EXPECT_EQ(dmesg->message, "mce: [Hardware Error]: Machine check events logged");
  EXPECT_EQ(format_kernel_log_line(*dmesg), "[   15.234567] mce: [Hardware Error]: Machine check events logged");
  auto raw = parse_kernel_log_line("<4>[ 1.5] hello");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->level, 4);
  EXPECT_EQ(raw->ts_us, 1'500'000u);
  auto human = parse_kernel_log_line("[Tue Mar  5 10:00:00 2024] hello");  // dmesg -T: a date, no timestamp
  ASSERT_TRUE(human);
  EXPECT_FALSE(human->ts_us);
  EXPECT_EQ(human->message, "hello");
  auto bare = parse_kernel_log_line("a message; with a semicolon");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->message, "a message; with a semicolon");
}

TEST(HealthParsers, KernelLogClasses) {
  EXPECT_EQ(classify_kernel_log_message("NVRM: Xid (PCI:0000:03:00): 48, DBE"), KernelLogClass::xid);
  EXPECT_EQ(classify_kernel_log_message("mce: [Hardware Error]: Machine check events logged"),
            KernelLogClass::machine_check);
  EXPECT_EQ(classify_kernel_log_message("[Hardware Error]: Corrected error, no action required."),
            KernelLogClass::machine_check);
  EXPECT_EQ(classify_kernel_log_message("Oops: 0002 [#1] PREEMPT SMP NOPTI"), KernelLogClass::oops);
  EXPECT_EQ(classify_kernel_log_message("BUG: kernel NULL pointer dereference, address: 0000000000000008"),
            KernelLogClass::oops);
  EXPECT_EQ(classify_kernel_log_message("INFO: task python:4002 blocked for more than 120 seconds."),
            KernelLogClass::hung_task);
  EXPECT_EQ(classify_kernel_log_message("watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [python:4002]"),
            KernelLogClass::lockup);  // a BUG:, but a lockup
  EXPECT_EQ(classify_kernel_log_message("NMI watchdog: Watchdog detected hard LOCKUP on cpu 2"),
            KernelLogClass::lockup);
  EXPECT_TRUE(is_hard_lockup_message("NMI watchdog: Watchdog detected hard LOCKUP on cpu 2"));
  EXPECT_EQ(classify_kernel_log_message("e1000e: eth0 NIC Link is Up"), KernelLogClass::other);
  EXPECT_EQ(classify_kernel_log_message("the word mce: inside"), KernelLogClass::other);
  EXPECT_TRUE(is_uncorrected_machine_check("[Hardware Error]: Uncorrected, software restartable error."));
}

TEST(HealthParsers, XidClassesAndSdcRelevance) {
  for (int code : {48, 63, 64, 92, 94, 95}) EXPECT_TRUE(xid_sdc_relevant(code, false)) << code;
  for (int code : {13, 31, 43, 74, 79, 119, 145}) EXPECT_FALSE(xid_sdc_relevant(code, false)) << code;
  EXPECT_EQ(xid_family(48, false), "ecc");
  EXPECT_EQ(xid_family(63, false), "row-remap");
  EXPECT_EQ(xid_family(74, false), "nvlink");
  EXPECT_EQ(xid_family(147, false), "nvlink");
  EXPECT_EQ(xid_family(79, false), "bus");
  EXPECT_EQ(xid_family(999, false), "other");
  EXPECT_EQ(xid_family(48, true), "nvswitch");
}

TEST(HealthParsers, PortsAndProcesses) {
  EXPECT_EQ(parse_ib_rate_gbps("200 Gb/sec (4X HDR)\n"), 200.0);
  EXPECT_EQ(parse_ib_rate_gbps("2.5 Gb/sec (1X SDR)"), 2.5);
  EXPECT_FALSE(parse_ib_rate_gbps("fast"));
  EXPECT_EQ(parse_ib_state_name("4: ACTIVE\n"), "ACTIVE");
  EXPECT_EQ(parse_ib_state_name("5: LinkUp"), "LinkUp");
  EXPECT_EQ(time_daemon_name("systemd-timesyn\n"), "systemd-timesyncd");  // comm keeps 15 characters
  EXPECT_EQ(time_daemon_name("chronyd"), "chronyd");
  EXPECT_FALSE(time_daemon_name("chronyc"));
  EXPECT_EQ(comm_from_stat("700 (chronyd) S 1 700"), "chronyd");
  EXPECT_EQ(comm_from_stat("301 (a) b) S 1"), "a) b");
}

TEST(HealthDcb, IeeePfcFromANetlinkReply) {
  // nlmsghdr, dcbmsg, DCB_ATTR_IFNAME "eth3", DCB_ATTR_IEEE { DCB_ATTR_IEEE_PFC {pfc_cap 8, pfc_en 0x08} }.
  std::vector<uint8_t> msg = {
      0,  0,  0,  0, 78,  0,    0,   0,   1, 0, 0, 0, 0, 0, 0, 0,  // header (length patched below), RTM_GETDCB = 78
      0,  22, 0,  0,                                               // dcbmsg: AF_UNSPEC, DCB_CMD_IEEE_GET = 22
      9,  0,  1,  0, 'e', 't',  'h', '3', 0, 0, 0, 0,              // DCB_ATTR_IFNAME = 1, padded
      20, 0,  13, 0,                                               // DCB_ATTR_IEEE = 13, nested
      16, 0,  2,  0, 8,   0x08, 0,   0,   0, 0, 0, 0, 0, 0, 0, 0   // DCB_ATTR_IEEE_PFC = 2: pfc_cap, pfc_en, ...
  };
  msg[0] = static_cast<uint8_t>(msg.size());
  auto pfc = parse_dcb_ieee_reply(std::as_bytes(std::span(msg)), "eth3");
  ASSERT_TRUE(pfc.ok()) << pfc.error().message;
  EXPECT_EQ(pfc->capability, 8);
  EXPECT_EQ(pfc->enabled, 0x08);
  EXPECT_EQ(pfc_priorities_text(*pfc), "3");

  // The kernel's answer for a driver without dcbnl_ops: NLMSG_ERROR, -EOPNOTSUPP.
  std::vector<uint8_t> err = {36, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xa1, 0xff, 0xff, 0xff};
  err.resize(36);
  auto refused = parse_dcb_ieee_reply(std::as_bytes(std::span(err)), "eth0");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("eth0: its driver has no DCB (dcbnl) support"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(parse_dcb_ieee_reply({}, "eth0").ok());
}

TEST(HealthDcb, TheKernelAnswersForThisMachinesInterfaces) {
  // A real round trip: loopback has no dcbnl_ops, so the kernel says EOPNOTSUPP.
  auto lo = read_pfc_config("lo");
  ASSERT_FALSE(lo.ok());
  EXPECT_EQ(lo.error().sys_errno, EOPNOTSUPP) << lo.error().message;
  EXPECT_NE(lo.error().message.find("lo: its driver has no DCB (dcbnl) support"), std::string::npos);
  auto missing = read_pfc_config("sbnonexist0");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().sys_errno, ENODEV) << missing.error().message;
}

TEST(HealthFixture, EdacCountersRisingBetweenReadings) {
  HealthTree tree;
  fs::path mc0 = tree.sys() / "devices/system/edac/mc/mc0";
  auto checks = tree.evaluate_around([&] {
    write(mc0 / "ce_count", "15\n");
    write(mc0 / "dimm1/dimm_ce_count", "6\n");
    write(mc0 / "ue_count", "1\n");
    write(mc0 / "dimm0/dimm_ue_count", "1\n");
  });
  const CheckRow& ce = row(checks, "memory.edac_ce", "mc0");
  EXPECT_EQ(state(ce), "warn");
  EXPECT_EQ(ce.value, 15);
  EXPECT_NE(ce.detail.find("+3 in 1.0 s: dimm1 'CPU_SrcID#0_MC#0_Chan#1_DIMM#0' +3"), std::string::npos) << ce.detail;
  EXPECT_EQ(ce.ranks, (std::vector<int>{0, 1}));  // host memory: every rank on the node
  const CheckRow& ue = row(checks, "memory.edac_ue", "mc0");
  EXPECT_EQ(state(ue), "fail");
  EXPECT_NE(ue.detail.find("dimm0 'CPU_SrcID#0_MC#0_Chan#0_DIMM#0' +1"), std::string::npos) << ue.detail;
  EXPECT_EQ(state(row(checks, "memory.edac_ce", "mc1")), "ok");  // the csrow layout, clean
  EXPECT_TRUE(any_failed(checks));
  auto sdc = sdc_activity(checks);
  ASSERT_TRUE(sdc);
  EXPECT_NE(sdc->find("memory.edac_ue mc0: mc0 (skx_edac): 1 uncorrected since boot"), std::string::npos) << *sdc;
}

// One severity rule for every counter: history is graded as a rise is.
TEST(HealthFixture, OneReadingGradesTheHistoryByTheSameRule) {
  HealthTree tree;
  HealthSnapshot once = tree.read();
  auto checks = evaluate_health(once, once, tree.context());
  const CheckRow& ce = row(checks, "memory.edac_ce", "mc0");
  EXPECT_EQ(state(ce), "warn") << "12 corrected since boot: history, with its count";
  EXPECT_NE(ce.detail.find("12 corrected since boot"), std::string::npos) << ce.detail;
  EXPECT_NE(ce.detail.find("one reading: no rise measured"), std::string::npos) << ce.detail;
  EXPECT_EQ(state(row(checks, "memory.edac_ue", "mc0")), "ok") << "none since boot";
  EXPECT_EQ(state(row(checks, "memory.edac_ce", "mc1")), "ok");
  EXPECT_EQ(state(row(checks, "pcie.aer", "0000:04:00.0")), "warn") << "correctable AER errors since boot";
  const CheckRow& t = row(checks, "cpu.thermal_throttle");
  EXPECT_EQ(state(t), "warn") << "throttled since boot, none in the reading: " << t.detail;
  EXPECT_NE(t.detail.find("since boot: "), std::string::npos) << t.detail;
  // The counters give no time; the kernel log's line (15.8 s after boot) and
  // /proc/uptime (3600 s) do.
  EXPECT_NE(t.detail.find("the last one logged 60 min ago"), std::string::npos) << t.detail;
  // An uncorrected error long ago, none while reading: it fails, as a GPU's
  // double-bit ECC Xid since boot does.
  write(tree.sys() / "devices/system/edac/mc/mc0/ue_count", "1\n");
  HealthSnapshot later = tree.read();
  const CheckRow& ue = row(evaluate_health(later, later, tree.context()), "memory.edac_ue", "mc0");
  EXPECT_EQ(state(ue), "fail") << ue.detail;
}

TEST(HealthFixture, ThermalThrottleCountsAndTheirRise) {
  HealthTree tree;
  fs::path cpu = tree.sys() / "devices/system/cpu";
  auto checks = tree.evaluate_around([&] {
    write(cpu / "cpu1/thermal_throttle/core_throttle_count", "7\n");  // was 2
    // Package 1's count repeats on cpu2 and cpu3: counted once.
    write(cpu / "cpu2/thermal_throttle/package_throttle_count", "4\n");
    write(cpu / "cpu3/thermal_throttle/package_throttle_count", "4\n");
  });
  const CheckRow& t = row(checks, "cpu.thermal_throttle");
  EXPECT_EQ(state(t), "warn");
  EXPECT_EQ(t.value, 12 + 5 + 5 + 4);  // cores 0+7+4+6, packages 5 and 4
  EXPECT_NE(t.detail.find("+8 in 1.0 s on CPUs 1 and packages 1"), std::string::npos) << t.detail;

  auto quiet = tree.evaluate_around([] {});
  EXPECT_EQ(state(row(quiet, "cpu.thermal_throttle")), "warn") << "no rise, but throttled since boot";
  for (const char* f : {"cpu0/thermal_throttle/core_throttle_count", "cpu1/thermal_throttle/core_throttle_count",
                        "cpu2/thermal_throttle/core_throttle_count", "cpu3/thermal_throttle/core_throttle_count",
                        "cpu0/thermal_throttle/package_throttle_count", "cpu1/thermal_throttle/package_throttle_count",
                        "cpu2/thermal_throttle/package_throttle_count", "cpu3/thermal_throttle/package_throttle_count"})
    if (fs::exists(cpu / f)) write(cpu / f, "0\n");
  auto cool = tree.evaluate_around([] {});
  EXPECT_EQ(state(row(cool, "cpu.thermal_throttle")), "ok") << row(cool, "cpu.thermal_throttle").detail;
}

TEST(HealthFixture, CpusGovernorFrequencyOfflineSmt) {
  HealthTree tree;
  auto checks = tree.evaluate_around([] {});
  const CheckRow& gov = row(checks, "cpu.governor");
  EXPECT_EQ(state(gov), "warn");
  EXPECT_EQ(gov.value, "mixed");
  EXPECT_NE(gov.detail.find("powersave on CPUs 3"), std::string::npos) << gov.detail;
  const CheckRow& freq = row(checks, "cpu.frequency");
  EXPECT_EQ(state(freq), "ok");
  EXPECT_EQ(freq.value, 0.68);  // (3.0 + 2.9 + 2.8 + 0.8) / 4 of 3.5 GHz
  const CheckRow& off = row(checks, "cpu.offline");
  EXPECT_EQ(state(off), "warn");
  EXPECT_EQ(off.value, 1);  // cpu3; 4-7 are possible, not present
  EXPECT_NE(off.detail.find("CPUs 3 present but offline"), std::string::npos) << off.detail;
  EXPECT_EQ(row(checks, "cpu.smt").value, "on");
}

TEST(HealthFixture, DowntrainedGpuLinkConcernsItsRank) {
  HealthTree tree;
  auto checks = tree.evaluate_around([] {});
  const CheckRow& gpu0 = row(checks, "pcie.link", "0000:03:00.0");
  EXPECT_EQ(state(gpu0), "warn");
  EXPECT_EQ(gpu0.value, "x16 16 GT/s");
  EXPECT_EQ(gpu0.threshold, "x16 32 GT/s");
  EXPECT_EQ(gpu0.ranks, std::vector<int>{0});  // rank 0's GPU by CUDA_VISIBLE_DEVICES
  EXPECT_EQ(state(row(checks, "pcie.link", "0000:05:00.0")), "ok");
  const CheckRow& eth2 = row(checks, "pcie.link", "0000:06:00.0");
  EXPECT_EQ(state(eth2), "warn");  // down, but no rank uses it
  EXPECT_NE(eth2.detail.find("(no rank uses it)"), std::string::npos);
  // --expect holds the NIC to more than it can do.
  HealthContext strict = tree.context();
  strict.link_rules.push_back(*parse_expectation_rule("15b3:101b=x16@32"));
  HealthSnapshot once = tree.read();
  EXPECT_EQ(state(row(evaluate_health(once, once, strict), "pcie.link", "0000:04:00.0")), "warn");
}

TEST(HealthFixture, AerCorrectableRiseWarnsUncorrectableFails) {
  HealthTree tree;
  fs::path gpu0 = tree.sys() / "devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0";
  auto checks = tree.evaluate_around([&] {
    write(gpu0 / "aer_dev_fatal",
          "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\n"
          "RxOF 0\nMalfTLP 2\nTOTAL_ERR_FATAL 2\n");
  });
  const CheckRow& aer = row(checks, "pcie.aer", "0000:03:00.0");
  EXPECT_EQ(state(aer), "fail");
  EXPECT_NE(aer.detail.find("+2 fatal MalfTLP in 1.0 s"), std::string::npos) << aer.detail;
  EXPECT_EQ(aer.ranks, std::vector<int>{0});
  const CheckRow& nic = row(checks, "pcie.aer", "0000:04:00.0");
  EXPECT_EQ(state(nic), "warn");  // correctable since boot, not rising: history with its count
  EXPECT_NE(nic.detail.find("unreadable lines: 'Receiver Error five'"), std::string::npos) << nic.detail;
}

TEST(HealthFixture, NicBelowItsSpeedAndNicStates) {
  HealthTree tree;
  auto checks = tree.evaluate_around([&] { write(tree.sys() / "class/net/eth2/statistics/rx_errors", "9\n"); });
  const CheckRow& slow = row(checks, "rdma.port", "mlx5_1/1");
  EXPECT_EQ(state(slow), "warn");
  EXPECT_EQ(slow.value, 100.0);
  EXPECT_EQ(slow.threshold, 200.0);
  EXPECT_NE(slow.detail.find("100 Gb/s < 200 Gb/s of mlx5_0/1, the fastest port of this model (15b3:101b) here"),
            std::string::npos)
      << slow.detail;
  EXPECT_EQ(state(row(checks, "rdma.port", "mlx5_0/1")), "ok");
  EXPECT_EQ(row(checks, "rdma.errors", "mlx5_1/1").value, 2);  // symbol_error since boot
  EXPECT_EQ(state(row(checks, "nic.link", "eth2")), "warn");   // down, used by no rank
  const CheckRow& errors = row(checks, "nic.errors", "eth2");
  EXPECT_EQ(state(errors), "warn");
  EXPECT_NE(errors.detail.find("rx_errors +5 in 1.0 s"), std::string::npos) << errors.detail;
  const CheckRow& ib0 = row(checks, "nic.link", "ib0");
  EXPECT_EQ(state(ib0), "ok");
  EXPECT_EQ(ib0.ranks, (std::vector<int>{0, 1}));
  const CheckRow& pfc = row(checks, "nic.pfc");
  EXPECT_EQ(state(pfc), "unavailable");
  EXPECT_NE(pfc.detail.find("PFC is Ethernet's: mlx5_0/1 (InfiniBand)"), std::string::npos) << pfc.detail;

  // Held to 400 Gb/s, every active port is below.
  HealthContext fast = tree.context();
  fast.thresholds.nic_speed_gbps = 400;
  HealthSnapshot once = tree.read();
  EXPECT_EQ(state(row(evaluate_health(once, once, fast), "rdma.port", "mlx5_0/1")), "warn");
}

TEST(HealthFixture, XidsFromBothLogFormatsNameTheGpuAndItsRank) {
  HealthTree tree;
  for (const char* log : {"kmsg", "dmesg.txt"}) {
    HealthSources sources;
    sources.sysfs_root = tree.sys();
    sources.proc_root = tree.proc();
    sources.kmsg_file = kHealth / log;
    auto snapshot = collect_health(sources);
    ASSERT_TRUE(snapshot.ok());
    auto checks = evaluate_health(*snapshot, *snapshot, tree.context());
    const CheckRow& xid = row(checks, "gpu.xid", "0000:03:00.0");
    EXPECT_EQ(state(xid), "fail") << log;  // Xid 48: reset the GPU
    EXPECT_EQ(xid.value, 2);
    EXPECT_EQ(xid.ranks, std::vector<int>{0});
    EXPECT_NE(xid.detail.find("by class: ecc 2"), std::string::npos) << xid.detail;
    const CheckRow& ecc = row(checks, "gpu.xid_ecc", "0000:03:00.0");
    EXPECT_EQ(state(ecc), "fail");
    EXPECT_NE(ecc.detail.find("Xid 48 x1 (ecc: double-bit ECC error; reset the GPU)"), std::string::npos);
    EXPECT_NE(ecc.detail.find("Xid 94 x1 (ecc: contained ECC error"), std::string::npos);
    const CheckRow& nvlink = row(checks, "gpu.xid", "0000:05:00.0");
    EXPECT_EQ(state(nvlink), "warn");
    EXPECT_NE(nvlink.detail.find("nvlink 1"), std::string::npos);
    EXPECT_EQ(nvlink.ranks, std::vector<int>{1});
    EXPECT_EQ(state(row(checks, "memory.mce_log")), "warn");
    EXPECT_EQ(state(row(checks, "kernel.hung_task")), "warn");
    EXPECT_EQ(state(row(checks, "kernel.soft_lockup")), "warn");
    EXPECT_EQ(state(row(checks, "kernel.oops")), "ok");
    auto sdc = sdc_activity(checks);
    ASSERT_TRUE(sdc);
    EXPECT_NE(sdc->find("gpu.xid_ecc 0000:03:00.0"), std::string::npos);
    EXPECT_NE(sdc->find("memory.mce_log"), std::string::npos);
  }
}

TEST(HealthFixture, ReplayWithoutAKernelLogOrClockSaysWhy) {
  HealthTree tree;
  HealthSnapshot once = tree.read(false);
  auto checks = evaluate_health(once, once, tree.context());
  for (const char* check : {"gpu.xid", "gpu.xid_ecc", "memory.mce_log", "kernel.oops", "kernel.hung_task"}) {
    const CheckRow& c = row(checks, check);
    EXPECT_EQ(state(c), "unavailable") << check;
    EXPECT_NE(c.detail.find("pass --kmsg FILE"), std::string::npos) << c.detail;
  }
  EXPECT_EQ(row(checks, "clock.sync").detail,
            "a captured tree holds no clock state (adjtimex(2) reads the running kernel's)");
  const CheckRow& daemon = row(checks, "clock.daemon");
  EXPECT_EQ(state(daemon), "ok");
  EXPECT_EQ(daemon.value, "chronyd");
  EXPECT_EQ(state(row(checks, "memory.mc_event_tracepoint")), "ok");
  const CheckRow& mce = row(checks, "memory.mce_tracepoint");
  EXPECT_EQ(state(mce), "unavailable");
  EXPECT_NE(mce.detail.find("no mce:mce_record tracepoint in"), std::string::npos);
}

TEST(HealthFixture, MissingRootsAndLogAreErrors) {
  HealthSources sources;
  sources.sysfs_root = "/nonexistent/sys";
  auto missing = collect_health(sources);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "--sysfs-root /nonexistent/sys: no such directory");
  sources.sysfs_root = kHealth / "sys";
  sources.proc_root = kHealth / "proc";
  sources.kmsg_file = "/nonexistent/kmsg";
  auto no_log = collect_health(sources);
  ASSERT_FALSE(no_log.ok());
  EXPECT_NE(no_log.error().message.find("--kmsg /nonexistent/kmsg: cannot read it"), std::string::npos);
}

TEST(HealthFixture, UnreadableAndMalformedFilesAreRowsNotCrashes) {
  HealthTree tree;
  write(tree.sys() / "devices/system/edac/mc/mc1/ce_count", "lots\n");
  write(tree.proc() / "sys/kernel/tainted", "x\n");
  fs::remove(tree.sys() / "devices/system/cpu/present");
  HealthSnapshot once = tree.read();
  auto checks = evaluate_health(once, once, tree.context());
  const CheckRow& ce = row(checks, "memory.edac_ce", "mc1");
  EXPECT_EQ(state(ce), "unavailable");
  EXPECT_NE(ce.detail.find("mc1/ce_count is not a counter: 'lots'"), std::string::npos) << ce.detail;
  EXPECT_NE(row(checks, "kernel.taint").detail.find("sys/kernel/tainted is not a number: 'x'"), std::string::npos);
  EXPECT_NE(row(checks, "cpu.offline").detail.find("cpu/present"), std::string::npos);
}

TEST(HealthEvaluate, UnsynchronisedClockFromATimex) {
  HealthThresholds t;
  ClockReading unsync;
  unsync.status = STA_UNSYNC;
  unsync.clock_state = TIME_ERROR;
  unsync.esterror_us = 16'000'000;
  unsync.maxerror_us = 16'000'000;
  CheckRow c = evaluate_clock(unsync, t);
  EXPECT_EQ(state(c), "warn");
  EXPECT_NE(c.detail.find("not synchronised"), std::string::npos);
  EXPECT_NE(c.detail.find("STA_UNSYNC"), std::string::npos);

  ClockReading synced;
  synced.status = STA_PLL;
  synced.esterror_us = 12;
  synced.maxerror_us = 300;
  EXPECT_EQ(state(evaluate_clock(synced, t)), "ok");
  EXPECT_EQ(evaluate_clock(synced, t).value, 12);
  synced.esterror_us = 5000;  // synchronised, but too loosely for merged traces
  EXPECT_EQ(state(evaluate_clock(synced, t)), "warn");
  EXPECT_EQ(state(evaluate_clock(Result<ClockReading>(make_error("no clock")), t)), "unavailable");
}

TEST(HealthEvaluate, TaintedKernel) {
  CheckRow fixture = evaluate_taint(uint64_t{12801});
  EXPECT_EQ(state(fixture), "warn");  // W
  EXPECT_NE(fixture.detail.find("tainted 12801 (PWOE)"), std::string::npos) << fixture.detail;
  EXPECT_EQ(state(evaluate_taint(uint64_t{1 | 4096})), "ok");  // the NVIDIA driver: proprietary, out of tree
  CheckRow mce = evaluate_taint(uint64_t{1 | 16});
  EXPECT_EQ(state(mce), "fail");
  EXPECT_EQ(evaluate_taint(uint64_t{0}).detail, "not tainted");
  // A machine-check taint is SDC activity.
  mce.state = CheckState::fail;
  auto sdc = sdc_activity({mce});
  ASSERT_TRUE(sdc);
  EXPECT_NE(sdc->find("kernel.taint: tainted 17 (PM)"), std::string::npos) << *sdc;
  EXPECT_FALSE(sdc_activity({evaluate_taint(uint64_t{512})}));
}

TEST(HealthEvaluate, JsonLineShape) {
  CheckRow c{"pcie.link", CheckState::warn, "0000:03:00.0", "x16 16 GT/s", "x16 32 GT/s", {0}, "speed", false, ""};
  nlohmann::json j = health_check_json(c);
  EXPECT_EQ(j.dump(),
            "{\"check\":\"pcie.link\",\"detail\":\"speed\",\"device\":\"0000:03:00.0\",\"kind\":\"health\","
            "\"ranks\":[0],\"state\":\"warn\",\"threshold\":\"x16 32 GT/s\",\"value\":\"x16 16 GT/s\"}");
  EXPECT_EQ(health_summary({c}), "1 checks: 0 ok, 1 warn, 0 fail, 0 unavailable");
}

TEST(HealthLive, ThisMachineEveryUnavailableRowSaysWhy) {
  HealthSources live;
  auto before = collect_health(live);
  ASSERT_TRUE(before.ok()) << before.error().message;
  Topology topology = Topology::read("/sys", "/proc");
  HealthContext context;
  context.ranks = discover_ranks("/proc", getpid());
  topology.assign_ranks(context.ranks);
  context.topology = &topology;
  auto checks = evaluate_health(*before, *before, context);
  ASSERT_GE(checks.size(), 20u);
  std::set<std::string> names;
  for (const CheckRow& c : checks) {
    names.insert(c.check);
    if (c.state == CheckState::unavailable) {
      EXPECT_FALSE(c.detail.empty()) << c.check << " " << c.device;
    }
  }
  for (const char* check :
       {"gpu.xid", "pcie.link", "pcie.aer", "memory.edac_ce", "memory.edac_ue", "memory.mce_tracepoint",
        "memory.mce_log", "cpu.thermal_throttle", "cpu.governor", "cpu.offline", "cpu.smt", "nic.pfc", "rdma.port",
        "clock.sync", "clock.daemon", "kernel.taint", "kernel.oops", "kernel.hung_task", "kernel.soft_lockup"})
    EXPECT_TRUE(names.contains(check)) << check;
  // Live, the clock is read: whatever its state, not "unavailable".
  EXPECT_NE(state(row(checks, "clock.sync")), "unavailable");
}

}  // namespace
}  // namespace slowburn::health_test
