// What `slowburn health` reads, at one moment: every source under the
// sysfs and procfs roots (this machine's, or a captured tree), the kernel
// log (/dev/kmsg or a captured file) and, live only, the kernel's clock
// state. A source that cannot be read is kept as the reason why
// (Result's error), never dropped and never fatal: the evaluator turns it
// into an `unavailable` row.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "health/health_parsers.h"
#include "net/dcb.h"
#include "pcie/aer.h"
#include "pcie/link.h"
#include "rdma/fabric_monitor.h"

namespace slowburn {

struct EdacDimm {
  std::string name;   // "dimm3", "rank0", "csrow1"
  std::string label;  // dimm_label ("CPU_SrcID#0_MC#0_Chan#1_DIMM#0"); csrows: their ch*_dimm_label, joined
  std::optional<uint64_t> ce, ue;
};

struct EdacController {
  std::string name;     // "mc0"
  std::string mc_name;  // the driver's name ("skx_edac", "amd64_edac")
  std::optional<uint64_t> ce, ue;
  std::vector<EdacDimm> dimms;
  std::vector<std::string> notes;  // unreadable or malformed files
};

struct CpuThrottle {
  int cpu = 0;
  std::optional<int> package;  // topology/physical_package_id: package counts repeat on every CPU of a package
  std::optional<uint64_t> core_count, package_count;
};

struct CpuFrequency {
  int cpu = 0;
  std::string governor;  // scaling_governor
  std::optional<uint64_t> cur_khz, max_khz;
};

struct CpuLists {
  std::vector<int> online, offline, present, possible;
};

struct SmtState {
  std::string control;  // on, off, forceoff, notsupported, notimplemented
  std::optional<bool> active;
};

struct NetdevState {
  std::string name;
  std::string device;  // PCI address ("" when not PCI)
  std::string operstate;
  std::optional<int64_t> speed_mbps;       // -1 (unknown) kept as read
  std::map<std::string, uint64_t> errors;  // statistics/*_errors
  bool roce = false;                       // the netdev of an RDMA port with an Ethernet link layer
  std::vector<std::string> notes;
};

struct RdmaPortState {
  NicSample counters;  // counters/ and hw_counters/ (rdma_ports.h)
  std::string state, phys_state, link_layer;
  std::optional<double> rate_gbps;
  std::string rate_text;
};

struct ClockReading {
  int status = 0;           // timex.status: STA_UNSYNC (0x0040) and friends
  int64_t esterror_us = 0;  // estimated error
  int64_t maxerror_us = 0;  // maximum error
  int clock_state = 0;      // adjtimex's return: TIME_OK 0 ... TIME_ERROR 5
};

struct TimeDaemon {
  std::string name;  // "chronyd"
  int32_t pid = 0;
};

// Where the snapshot is read from.
struct HealthSources {
  std::filesystem::path sysfs_root = "/sys";
  std::filesystem::path proc_root = "/proc";
  std::optional<std::filesystem::path> kmsg_file;  // a captured kernel log; live: /dev/kmsg
  bool kernel_log = true;                          // false: leave the log unread (a first reading only needs counters)
  // This machine's own trees: /dev/kmsg, adjtimex(2) and DCB netlink are read.
  bool live() const { return sysfs_root == "/sys" && proc_root == "/proc"; }
};

struct HealthSnapshot {
  HealthSources sources;  // what it was read from (reasons name its paths)
  uint64_t ts_ns = 0;     // CLOCK_MONOTONIC

  Result<std::vector<EdacController>> edac = make_error("not read");
  Result<std::vector<CpuThrottle>> throttle = make_error("not read");
  Result<std::vector<CpuFrequency>> frequency = make_error("not read");
  Result<CpuLists> cpu_lists = make_error("not read");
  Result<SmtState> smt = make_error("not read");

  std::map<std::string, LinkReading> links;                       // by BDF: devices with link attributes
  std::map<std::string, std::map<AerSeverity, AerCounters>> aer;  // by BDF: devices with aer_dev_* files
  std::vector<NetdevState> netdevs;                               // physical ones (with a device link)
  std::vector<RdmaPortState> rdma_ports;
  std::map<std::string, Result<PfcConfig>> pfc;  // by RoCE netdev

  Result<uint64_t> tainted = make_error("not read");
  Result<double> uptime_s = make_error("not read");  // /proc/uptime: how long since boot, at the reading
  Result<std::vector<KernelLogLine>> kernel_log = make_error("not read");
  // Of mce:mce_record and ras:mc_event, the ones tracefs lists ("mce:mce_record").
  Result<std::set<std::string>> tracepoints = make_error("not read");
  std::string tracefs_events;  // the directory looked in

  Result<ClockReading> clock = make_error("not read");
  Result<std::vector<TimeDaemon>> time_daemons = make_error("not read");
};

// The tracepoints the machine-check rows look for.
constexpr const char* kMceTracepoint = "mce:mce_record";
constexpr const char* kMcEventTracepoint = "ras:mc_event";
// What their absence means (health's rows and `slowburn check` say it).
constexpr const char* kMceTracepointMissing = "a kernel without CONFIG_X86_MCE, or not x86";
constexpr const char* kMcEventTracepointMissing = "a kernel without CONFIG_RAS / EDAC";

// Reads everything. Errors only for what makes the whole reading
// meaningless (a root directory that does not exist); anything else is a
// reason inside the snapshot.
Result<HealthSnapshot> collect_health(const HealthSources& sources);

// The kernel log, parsed: a captured file, or /dev/kmsg from the start of
// its buffer (SEEK_DATA: what `dmesg` shows) until EAGAIN, non-blocking.
Result<std::vector<KernelLogLine>> read_kernel_log(const std::optional<std::filesystem::path>& file);

// adjtimex(2) with no modes: the kernel's NTP state, read-only (no privilege).
Result<ClockReading> read_clock_state();

}  // namespace slowburn
