// slowburn check: the parsers, the capability rules, the evaluator on
// readings written by hand (root, not root, no tracefs, lockdown
// confidentiality, no BTF, an old kernel, ranks with and without a
// collective), the reader on a captured tree (no BPF, no root), and the
// tracepoint list held to the BPF skeletons' sections.
#include <gtest/gtest.h>
#include <sys/timex.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "check/check_parsers.h"
#include "check/checks.h"
#include "check/tracepoint_uses.h"
#include "loader/privileges.h"
#include "sources/kernel_sources.h"
#include "support/temp_dir.h"

// The skeletons whose SEC()s name what slowburn attaches to.
#include "slowburn/callpair.h"
#include "slowburn/hwevents.h"
#include "slowburn/sched.h"
// After the ABI headers: the skeletons refer to their types.
#include "gpuirq.skel.h"
#include "kmsg_xid.skel.h"
#include "sched.skel.h"
#include "tprecord.skel.h"

namespace slowburn::check_test {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kRootCaps = 0x000001ffffffffffull;  // CapEff of root on 6.x
constexpr uint64_t bit(int cap) { return uint64_t{1} << cap; }

AttachProbe worked(const std::string& how) {
  AttachProbe p;
  p.ran = p.loaded = p.attached = true;
  p.fired = p.records = p.matched = 3;
  p.how = how;
  return p;
}

AttachProbe load_failed(const std::string& error) {
  AttachProbe p;
  p.ran = true;
  p.how = "uprobe+uretprobe at /usr/bin/slowburn:slowburn_check_probe_target";
  p.error = error;
  return p;
}

RankProbes mpi_rank(int32_t pid, int rank, bool allreduce_resolves) {
  RankProbes r;
  r.pid = pid;
  RankIdentity id;
  id.pid = pid;
  id.rank = rank;
  r.rank = id;
  r.libraries = {"libmpi.so.40"};
  std::vector<ProbeReading> probes;
  probes.push_back({"mpi.allreduce", true, true, allreduce_resolves, allreduce_resolves ? "/usr/lib/libmpi.so.40" : "",
                    allreduce_resolves ? "" : "MPI_Allreduce not in libmpi.so.40"});
  probes.push_back({"mpi.send", false, true, true, "/usr/lib/libmpi.so.40", ""});
  probes.push_back({"nccl.allreduce", true, false, false, "", "libnccl.so not loaded"});
  r.probes = std::move(probes);
  return r;
}

// This machine as root: 6.18, BTF, every capability, tracefs, the attach
// tests through, no kprobes, no AER tracepoint, no GPU, no RDMA.
CheckSnapshot privileged() {
  CheckSnapshot s;
  s.kernel_release = std::string("6.18.44-fc-v1098");
  s.btf = true;
  s.cap_effective = kRootCaps;
  s.lockdown = std::string("none");
  s.perf_event_paranoid = 2;
  s.unprivileged_bpf_disabled = 2;
  s.memlock = MemlockLimit{false, 8u << 20, false};
  s.tracefs_found.mount_point = "/sys/kernel/tracing";
  s.tracefs_found.events = fs::path("/sys/kernel/tracing/events");
  s.tracefs = s.tracefs_found;
  for (const TracepointUse& use : tracepoint_uses()) s.tracepoints[use.name()] = true;
  for (const char* absent :
       {"ras:aer_event", "pci:pcie_link_event", "pci:pci_hp_event", "nvidia:nvidia_dev_xid", "mce:mce_record"})
    s.tracepoints[absent] = false;
  s.kprobes_missing = "kernel lacks kprobes (no CONFIG_KPROBE_EVENTS: no kprobe PMU, no kprobe_events)";
  s.uprobe = worked("uprobe+uretprobe (perf-event links, bpf_cookie)");
  s.uprobe_multi = worked("uprobe+uretprobe (one multi-uprobe link per direction, bpf_cookie)");
  s.tracepoint = worked("tracepoint task:task_rename");
  s.ranks = std::vector<RankProbes>{mpi_rank(4242, 0, true)};
  s.clock = ClockReading{0, 20, 100, 0};
  return s;
}

// `setpriv --reuid=65534 --inh-caps=-all --bounding-set=-all`: no
// capability, tracefs root's, every load refused.
CheckSnapshot unprivileged() {
  CheckSnapshot s = privileged();
  s.cap_effective = uint64_t{0};
  s.tracefs_found.events = make_error("/sys/kernel/tracing/events cannot be listed: Permission denied");
  s.tracefs = s.tracefs_found;
  s.tracepoints.clear();
  std::string refused = "cannot load the call-pair BPF programs: Operation not permitted";
  s.uprobe = s.uprobe_multi = load_failed(refused);
  s.tracepoint = AttachProbe{};
  s.tracepoint.error = "not tried: " + s.tracefs.events.error().message;
  s.ranks = make_error("no rank processes found on this node");
  return s;
}

std::map<std::string, CheckRow> by_check(const std::vector<CheckRow>& rows) {
  std::map<std::string, CheckRow> out;
  for (const CheckRow& r : rows) {
    EXPECT_FALSE(out.contains(r.check)) << "two rows named " << r.check;
    out[r.check] = r;
  }
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CheckParsers, CapEffFromProcStatus) {
  auto caps = parse_cap_effective("Name:\tslowburn\nCapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\n");
  ASSERT_TRUE(caps.ok());
  EXPECT_EQ(*caps, 0x000001fffeffffffull);
  EXPECT_FALSE(parse_cap_effective("CapInh:\t0\n").ok());
  auto bad = parse_cap_effective("CapEff:\tzz\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error().message, "malformed CapEff"));
}

TEST(CheckParsers, LockdownKernelReleaseAndTracefsMount) {
  EXPECT_EQ(*parse_lockdown("none [integrity] confidentiality\n"), "integrity");
  EXPECT_EQ(*parse_lockdown("[none] integrity confidentiality\n"), "none");
  EXPECT_FALSE(parse_lockdown("none integrity\n").ok());
  EXPECT_EQ(parse_kernel_release("6.18.44-fc-v1098"), (KernelVersion{6, 18}));
  EXPECT_EQ(parse_kernel_release("5.15.0-91-generic"), (KernelVersion{5, 15}));
  EXPECT_EQ(parse_kernel_release("6.1"), (KernelVersion{6, 1}));
  EXPECT_FALSE(parse_kernel_release("linux").has_value());
  EXPECT_LT(*parse_kernel_release("5.10.0"), (KernelVersion{5, 11}));
  EXPECT_EQ(tracefs_mount_point("proc /proc proc rw 0 0\nnodev /sys/kernel/tracing tracefs rw,relatime 0 0\n"),
            "/sys/kernel/tracing");
  EXPECT_FALSE(tracefs_mount_point("proc /proc proc rw 0 0\n").has_value());
}

// Found by procfs_fuzz: from_chars read "-40.0" as major -40.
TEST(CheckParsers, KernelReleaseWithASignIsNotAVersion) {
  EXPECT_FALSE(parse_kernel_release("-40.0").has_value());
  EXPECT_FALSE(parse_kernel_release("+5.4").has_value());
  EXPECT_FALSE(parse_kernel_release(".5").has_value());
}

TEST(CheckCapabilities, BpfAndPerfmonOrSysAdminLoadPtraceReadsOthers) {
  EXPECT_TRUE(missing_load_capabilities(kRootCaps).empty());
  EXPECT_TRUE(missing_load_capabilities(bit(kCapBpf) | bit(kCapPerfmon)).empty());
  EXPECT_TRUE(missing_load_capabilities(bit(kCapSysAdmin)).empty());  // implies both
  EXPECT_EQ(missing_load_capabilities(bit(kCapBpf)), std::vector<std::string>{"CAP_PERFMON"});
  EXPECT_EQ(missing_load_capabilities(0), (std::vector<std::string>{"CAP_BPF", "CAP_PERFMON"}));
  EXPECT_TRUE(missing_ptrace_capabilities(bit(kCapSysPtrace)).empty());
  // CAP_SYS_ADMIN does not imply CAP_SYS_PTRACE.
  EXPECT_EQ(missing_ptrace_capabilities(bit(kCapSysAdmin)), std::vector<std::string>{"CAP_SYS_PTRACE"});
}

TEST(CheckEvaluate, PrivilegedOnThisKernelEveryRequiredRowOkTheAbsentOnesSayWhatIsMissed) {
  auto rows = evaluate_checks(privileged());
  EXPECT_FALSE(any_required_failed(rows));
  auto r = by_check(rows);
  for (const char* required : {"btf", "capabilities", "tracefs", "bpf.ringbuf", "bpf.uprobe"}) {
    SCOPED_TRACE(required);
    ASSERT_TRUE(r.contains(required));
    EXPECT_TRUE(r[required].required);
    EXPECT_TRUE(r[required].ok()) << r[required].detail;
    EXPECT_TRUE(r[required].fix.empty());
  }
  // Exactly those five are required.
  std::set<std::string> required;
  for (const CheckRow& row : rows)
    if (row.required) required.insert(row.check);
  EXPECT_EQ(required, (std::set<std::string>{"btf", "capabilities", "tracefs", "bpf.ringbuf", "bpf.uprobe"}));
  for (const CheckRow& row : rows) {
    SCOPED_TRACE(row.check);
    EXPECT_FALSE(row.detail.empty());
    // Every row that is not ok says what to do; an ok row has nothing to fix.
    EXPECT_EQ(row.fix.empty(), row.ok());
  }
  EXPECT_TRUE(contains(r["kernel"].detail, "6.18.44-fc-v1098"));
  EXPECT_TRUE(contains(r["bpf.uprobe"].detail, "3 record(s)"));
  EXPECT_TRUE(r["bpf.uprobe_multi"].ok());
  EXPECT_TRUE(r["memlock"].ok());  // 6.18: memcg accounting
  EXPECT_TRUE(contains(r["memlock"].detail, "memory cgroup"));
  EXPECT_TRUE(r["perf_event_paranoid"].ok());
  EXPECT_TRUE(r["unprivileged_bpf_disabled"].ok());
  EXPECT_TRUE(r["tracepoint.sched:sched_switch"].ok());
  EXPECT_FALSE(r["tracepoint.ras:aer_event"].ok());
  EXPECT_FALSE(r["tracepoint.ras:aer_event"].required);
  EXPECT_TRUE(contains(r["tracepoint.ras:aer_event"].detail, "CONFIG_PCIEAER"));
  EXPECT_TRUE(contains(r["tracepoint.ras:aer_event"].fix, "CONFIG_PCIEAER=y"));
  EXPECT_FALSE(r["kprobes"].ok());
  EXPECT_TRUE(contains(r["kprobes"].detail, "nvidia_isr"));
  EXPECT_TRUE(contains(r["kprobes"].fix, "CONFIG_KPROBES=y"));
  EXPECT_FALSE(r["nvidia.driver"].ok());
  EXPECT_FALSE(r["nvidia.xid"].ok());
  EXPECT_FALSE(r["rdma"].ok());
  EXPECT_TRUE(contains(r["rdma"].fix, "modprobe"));
  EXPECT_TRUE(r["clock.sync"].ok()) << r["clock.sync"].detail;
  ASSERT_TRUE(r.contains("probes.pid4242"));
  EXPECT_TRUE(r["probes.pid4242"].ok());
  EXPECT_TRUE(contains(r["probes.pid4242"].detail, "rank 0 (pid 4242)"));
  EXPECT_TRUE(contains(r["probes.pid4242"].detail, "mpi.allreduce"));
}

TEST(CheckEvaluate, UnprivilegedTheRequiredRowsFailWithTheFix) {
  auto rows = evaluate_checks(unprivileged());
  EXPECT_TRUE(any_required_failed(rows));
  auto r = by_check(rows);
  EXPECT_FALSE(r["capabilities"].ok());
  EXPECT_TRUE(contains(r["capabilities"].detail, "missing CAP_BPF, CAP_PERFMON"));
  EXPECT_TRUE(contains(r["capabilities"].fix, "setcap cap_bpf,cap_perfmon"));
  EXPECT_FALSE(r["capabilities.ptrace"].ok());
  EXPECT_FALSE(r["capabilities.ptrace"].required);
  for (const char* check : {"bpf.ringbuf", "bpf.uprobe"}) {
    SCOPED_TRACE(check);
    EXPECT_FALSE(r[check].ok());
    EXPECT_TRUE(contains(r[check].detail, "Operation not permitted"));
    EXPECT_TRUE(contains(r[check].fix, "run as root"));
  }
  EXPECT_FALSE(r["tracefs"].ok());
  EXPECT_TRUE(contains(r["tracefs"].detail, "Permission denied"));
  EXPECT_TRUE(contains(r["tracefs"].fix, "run as root"));
  // Without CAP_PERFMON the sysctl matters, and lowering it is not the fix.
  EXPECT_FALSE(r["perf_event_paranoid"].ok());
  EXPECT_TRUE(contains(r["perf_event_paranoid"].fix, "CAP_PERFMON"));
  // Tracepoints cannot be listed: each says so, with tracefs's fix.
  EXPECT_FALSE(r["tracepoint.sched:sched_switch"].ok());
  EXPECT_TRUE(contains(r["tracepoint.sched:sched_switch"].detail, "cannot tell"));
  EXPECT_FALSE(r["probes"].ok());
  EXPECT_FALSE(r["probes"].required);
}

TEST(CheckEvaluate, TracefsMissingIsRequiredAndTheFixMountsIt) {
  CheckSnapshot s = privileged();
  s.tracefs_found.mount_point.reset();
  s.tracefs_found.events = make_error("tracefs is not mounted (no /sys/kernel/tracing/events or ...)");
  s.tracefs = s.tracefs_found;  // and slowburn could not mount it
  s.tracepoints.clear();
  s.tracepoint = AttachProbe{};
  s.tracepoint.error = "not tried: " + s.tracefs.events.error().message;
  auto rows = evaluate_checks(s);
  EXPECT_TRUE(any_required_failed(rows));
  auto r = by_check(rows);
  EXPECT_FALSE(r["tracefs"].ok());
  EXPECT_TRUE(r["tracefs"].required);
  EXPECT_EQ(r["tracefs"].fix, "mount -t tracefs nodev /sys/kernel/tracing");
  EXPECT_TRUE(contains(r["tracefs"].detail, "the collective uprobes do not"));
  EXPECT_FALSE(r["bpf.tracepoint"].ok());
  EXPECT_EQ(r["bpf.tracepoint"].fix, "mount -t tracefs nodev /sys/kernel/tracing");
  EXPECT_TRUE(r["bpf.uprobe"].ok());  // uprobes need no tracefs
  EXPECT_FALSE(r["nvidia.xid"].ok());

  // Not mounted when looked at, mounted by the load (as slowburn does as root): ok, and said.
  s.tracefs.mount_point = "/sys/kernel/tracing";
  s.tracefs.events = fs::path("/sys/kernel/tracing/events");
  auto mounted = by_check(evaluate_checks(s));
  EXPECT_TRUE(mounted["tracefs"].ok());
  EXPECT_TRUE(contains(mounted["tracefs"].detail, "slowburn mounted it"));
}

TEST(CheckEvaluate, LockdownConfidentialityRefusesTracefsAndKernelReadsNotUprobes) {
  CheckSnapshot s = privileged();
  s.lockdown = std::string("confidentiality");
  s.tracefs.events = make_error("/sys/kernel/tracing/events cannot be listed: Operation not permitted");
  s.tracefs_found = s.tracefs;
  s.tracepoints.clear();
  s.tracepoint = AttachProbe{};
  s.tracepoint.error = "not tried: " + s.tracefs.events.error().message;
  auto rows = evaluate_checks(s);
  auto r = by_check(rows);
  EXPECT_FALSE(r["lockdown"].ok());
  EXPECT_FALSE(r["lockdown"].required);
  EXPECT_TRUE(contains(r["lockdown"].detail, "bpf_probe_read_kernel"));
  EXPECT_TRUE(contains(r["lockdown"].fix, "lockdown=integrity"));
  EXPECT_FALSE(r["tracefs"].ok());
  EXPECT_TRUE(contains(r["tracefs"].detail, "lockdown=confidentiality refuses tracefs"));
  EXPECT_TRUE(contains(r["tracefs"].fix, "lockdown=integrity"));
  EXPECT_TRUE(r["bpf.uprobe"].ok());
  EXPECT_TRUE(any_required_failed(rows));  // tracefs is required

  // Integrity refuses nothing slowburn uses.
  s = privileged();
  s.lockdown = std::string("integrity");
  EXPECT_TRUE(by_check(evaluate_checks(s))["lockdown"].ok());
  // Unreadable, but a program calling bpf_probe_read_kernel loaded: not confidentiality.
  s.lockdown = make_error("no /sys/kernel/security/lockdown (securityfs not mounted ...)");
  auto unreadable = by_check(evaluate_checks(s));
  EXPECT_TRUE(unreadable["lockdown"].ok());
  EXPECT_TRUE(contains(unreadable["lockdown"].detail, "not in confidentiality mode"));
  s.tracepoint = AttachProbe{};
  auto unknown = by_check(evaluate_checks(s));
  EXPECT_FALSE(unknown["lockdown"].ok());
  EXPECT_TRUE(contains(unknown["lockdown"].fix, "mount -t securityfs"));
}

TEST(CheckEvaluate, NoBtfIsRequiredAndTheLoadFailureGetsTheBtfFix) {
  CheckSnapshot s = privileged();
  s.btf = false;
  s.uprobe = s.uprobe_multi = s.tracepoint =
      load_failed("cannot load the call-pair BPF programs: kernel 6.18 has no BTF (/sys/kernel/btf/vmlinux)");
  auto rows = evaluate_checks(s);
  EXPECT_TRUE(any_required_failed(rows));
  auto r = by_check(rows);
  EXPECT_FALSE(r["btf"].ok());
  EXPECT_TRUE(contains(r["btf"].fix, "CONFIG_DEBUG_INFO_BTF=y"));
  for (const char* check : {"bpf.ringbuf", "bpf.uprobe", "bpf.uprobe_multi", "bpf.tracepoint"}) {
    SCOPED_TRACE(check);
    EXPECT_FALSE(r[check].ok());
    EXPECT_TRUE(contains(r[check].detail, "did not load"));
    EXPECT_TRUE(contains(r[check].fix, "CONFIG_DEBUG_INFO_BTF=y"));
  }
}

TEST(CheckEvaluate, AnOldKernelWithoutMultiUprobesAndALimitedMemlock) {
  CheckSnapshot s = privileged();
  s.kernel_release = std::string("5.10.0-28-amd64");
  s.uprobe_multi = AttachProbe{};
  s.uprobe_multi.error = "this kernel has no multi-uprobe links with PID filtering (Linux 6.10+)";
  auto r = by_check(evaluate_checks(s));
  EXPECT_FALSE(r["kernel"].ok());
  EXPECT_TRUE(contains(r["kernel"].fix, "5.15"));
  EXPECT_FALSE(r["memlock"].ok());  // 8 MiB, and no memcg accounting before 5.11
  EXPECT_TRUE(contains(r["memlock"].fix, "ulimit -l unlimited"));
  EXPECT_FALSE(r["bpf.uprobe_multi"].ok());
  EXPECT_FALSE(r["bpf.uprobe_multi"].required);
  EXPECT_EQ(r["bpf.uprobe_multi"].fix, "Linux 6.10 or later");
  EXPECT_TRUE(contains(r["bpf.uprobe_multi"].detail, "perf-event link per uprobe"));
  s.memlock = MemlockLimit{false, 8u << 20, true};  // libbpf may raise it
  EXPECT_TRUE(by_check(evaluate_checks(s))["memlock"].ok());
}

TEST(CheckEvaluate, RanksWithoutACollectiveAndProcessesThatAreNotRanks) {
  CheckSnapshot s = privileged();
  RankProbes not_rank;
  not_rank.pid = 77;
  not_rank.rank = make_error("pid 77 (sleep 30) is not a rank of a training job: none of ... is in its environment");
  s.ranks = std::vector<RankProbes>{mpi_rank(4242, 0, true), mpi_rank(4243, 1, false), not_rank};
  auto r = by_check(evaluate_checks(s));
  EXPECT_TRUE(r["probes.pid4242"].ok());
  // Point-to-point only: traced, but no straggler can be named.
  EXPECT_FALSE(r["probes.pid4243"].ok());
  EXPECT_TRUE(contains(r["probes.pid4243"].detail, "MPI_Allreduce not in libmpi.so.40"));
  EXPECT_TRUE(contains(r["probes.pid4243"].detail, "no straggler can be named"));
  EXPECT_TRUE(contains(r["probes.pid4243"].fix, "slowburn catalog --pid 4243"));
  EXPECT_FALSE(r["probes.pid77"].ok());
  EXPECT_TRUE(contains(r["probes.pid77"].fix, "mpirun"));
  // A library-less process: nothing resolves.
  RankProbes bare = mpi_rank(5000, 2, false);
  bare.libraries.clear();
  for (ProbeReading& p : *bare.probes) p.resolved = p.library_loaded = false;
  s.ranks = std::vector<RankProbes>{bare};
  auto none = by_check(evaluate_checks(s));
  EXPECT_FALSE(none["probes.pid5000"].ok());
  EXPECT_TRUE(contains(none["probes.pid5000"].detail, "loads no communication library"));
}

TEST(CheckEvaluate, NvidiaXidPathDriverTracepointElseTheKernelLog) {
  CheckSnapshot s = privileged();
  s.nvidia = NvidiaReading{true, true, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15"};
  auto old_driver = by_check(evaluate_checks(s));
  EXPECT_TRUE(old_driver["nvidia.driver"].ok());
  EXPECT_TRUE(contains(old_driver["nvidia.driver"].detail, "550.54.15"));
  EXPECT_TRUE(old_driver["nvidia.xid"].ok());
  EXPECT_TRUE(contains(old_driver["nvidia.xid"].detail, "printk:console"));
  s.tracepoints["nvidia:nvidia_dev_xid"] = true;
  auto new_driver = by_check(evaluate_checks(s));
  EXPECT_TRUE(contains(new_driver["nvidia.xid"].detail, "nvidia:nvidia_dev_xid"));
  EXPECT_TRUE(new_driver["tracepoint.nvidia:nvidia_dev_xid"].ok());
}

TEST(CheckEvaluate, AnUnsynchronisedClockIsHealthsVerdictWithAFix) {
  CheckSnapshot s = privileged();
  s.clock = ClockReading{STA_UNSYNC, 16000000, 16000000, 5};
  auto r = by_check(evaluate_checks(s));
  EXPECT_FALSE(r["clock.sync"].ok());
  EXPECT_TRUE(contains(r["clock.sync"].detail, "not synchronised"));
  EXPECT_TRUE(contains(r["clock.sync"].fix, "chrony"));
}

TEST(CheckEvaluate, JsonLineCarriesExactlyTheContract) {
  CheckRow row = check_row("btf", false, true, "no /sys/kernel/btf/vmlinux", "boot a kernel with BTF");
  nlohmann::json line = check_row_json(row);
  EXPECT_EQ(line, (nlohmann::json{{"kind", "check"},
                                  {"check", "btf"},
                                  {"ok", false},
                                  {"required", true},
                                  {"detail", "no /sys/kernel/btf/vmlinux"},
                                  {"fix", "boot a kernel with BTF"}}));
  EXPECT_TRUE(contains(check_summary({row}), "1 checks: 0 ok, 1 not ok (1 required)"));
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(CheckSnapshotReader, ACapturedTreeIsReadAndNothingIsLoaded) {
  testing::TempDir dir;
  fs::path sys = dir / "sys", proc = dir / "proc";
  write(sys / "kernel/btf/vmlinux", "");
  write(sys / "kernel/security/lockdown", "none [integrity] confidentiality\n");
  write(sys / "kernel/tracing/events/sched/sched_switch/format", "name: sched_switch\n");
  write(sys / "kernel/tracing/events/printk/console/format", "name: console\n");
  write(sys / "class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  write(proc / "sys/kernel/osrelease", "6.8.0-45-generic\n");
  write(proc / "self/status", "Name:\tslowburn\nCapEff:\t00000000a80425fb\n");
  write(proc / "sys/kernel/perf_event_paranoid", "4\n");
  write(proc / "sys/kernel/unprivileged_bpf_disabled", "2\n");
  write(proc / "driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  575.51.02\nGCC version\n");
  CheckSources sources;
  sources.sysfs_root = sys;
  sources.proc_root = proc;
  CheckSnapshot s = read_check_snapshot(sources);
  EXPECT_EQ(*s.kernel_release, "6.8.0-45-generic");
  EXPECT_TRUE(s.btf);
  EXPECT_EQ(*s.cap_effective, 0xa80425fbull);  // docker's default set: no CAP_BPF, no CAP_SYS_ADMIN
  EXPECT_EQ(*s.lockdown, "integrity");
  EXPECT_EQ(*s.perf_event_paranoid, 4);
  EXPECT_EQ(*s.unprivileged_bpf_disabled, 2);
  ASSERT_TRUE(s.tracefs.events.ok());
  EXPECT_TRUE(s.tracepoints.at("sched:sched_switch"));
  EXPECT_TRUE(s.tracepoints.at("printk:console"));
  EXPECT_FALSE(s.tracepoints.at("ras:aer_event"));
  EXPECT_EQ(s.tracepoints.size(), tracepoint_uses().size());
  EXPECT_EQ(s.rdma_devices, std::vector<std::string>{"mlx5_0"});
  EXPECT_TRUE(s.nvidia.proc_driver);
  EXPECT_EQ(s.nvidia.version, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  575.51.02");
  EXPECT_TRUE(s.kprobes_missing.has_value());
  EXPECT_FALSE(s.ranks.ok());  // no process in the tree
  // Nothing live is read or loaded from a captured tree, and each says why.
  for (const AttachProbe* p : {&s.uprobe, &s.uprobe_multi, &s.tracepoint}) {
    EXPECT_FALSE(p->ran);
    EXPECT_TRUE(contains(p->error, "captured tree"));
  }
  EXPECT_FALSE(s.memlock.ok());
  EXPECT_FALSE(s.clock.ok());

  auto r = by_check(evaluate_checks(s));
  EXPECT_FALSE(r["capabilities"].ok());  // docker's default capabilities cannot load BPF
  EXPECT_TRUE(contains(r["capabilities"].detail, "missing CAP_BPF, CAP_PERFMON"));
  EXPECT_FALSE(r["bpf.uprobe"].ok());
  EXPECT_EQ(r["bpf.uprobe"].fix, "run slowburn check on the node itself");
  EXPECT_TRUE(r["nvidia.xid"].ok());  // a driver, and printk:console for its log
  EXPECT_TRUE(r["rdma"].ok());
}

// Every tracepoint a skeleton names in a SEC() is in the check's list;
// every kprobe is covered by the kprobes row.
TEST(CheckTracepoints, TheListCoversEverySkeletonSection) {
  std::set<std::string> listed, events;
  for (const TracepointUse& use : tracepoint_uses()) {
    listed.insert(use.name());
    events.insert(use.event);
    EXPECT_FALSE(use.used_by.empty() || use.missing.empty() || use.without.empty() || use.fix.empty()) << use.name();
  }
  std::vector<std::string> sections;
  auto collect = [&](bpf_object* obj) {
    ASSERT_NE(obj, nullptr);
    bpf_program* prog;
    bpf_object__for_each_program(prog, obj) sections.push_back(bpf_program__section_name(prog));
  };
  sched_bpf* sched = sched_bpf::open();
  gpuirq_bpf* gpuirq = gpuirq_bpf::open();
  kmsg_xid_bpf* kmsg = kmsg_xid_bpf::open();
  tprecord_bpf* tprecord = tprecord_bpf::open();
  ASSERT_TRUE(sched && gpuirq && kmsg && tprecord);
  collect(sched->obj);
  collect(gpuirq->obj);
  collect(kmsg->obj);
  collect(tprecord->obj);
  sched_bpf::destroy(sched);
  gpuirq_bpf::destroy(gpuirq);
  kmsg_xid_bpf::destroy(kmsg);
  tprecord_bpf::destroy(tprecord);
  size_t named = 0;
  for (const std::string& section : sections) {
    SCOPED_TRACE(section);
    if (section.rfind("tracepoint/", 0) == 0) {
      std::string rest = section.substr(11);
      EXPECT_TRUE(listed.contains(rest.replace(rest.find('/'), 1, ":")));
      ++named;
    } else if (section.rfind("raw_tp/", 0) == 0) {
      EXPECT_TRUE(events.contains(section.substr(7)));
      ++named;
    } else {
      // tprecord's bare "tracepoint" takes the hardware sources, below; kprobes have their own row.
      EXPECT_TRUE(section == "tracepoint" || section.rfind("kprobe/", 0) == 0 || section.rfind("kretprobe/", 0) == 0);
    }
  }
  EXPECT_EQ(named, 6u);  // sched x3, irq x2, printk:console
  for (const KernelSource& source : all_kernel_sources(true, true, true))
    EXPECT_TRUE(listed.contains(std::string(source.system) + ":" + source.event)) << source.name;
}

}  // namespace
}  // namespace slowburn::check_test
