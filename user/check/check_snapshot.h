// What `slowburn check` reads, at one moment: files under the sysfs and
// procfs roots (this machine's, or a captured tree), this process's
// rlimit, the kernel's clock state, the ranks' libraries and where the
// probes resolve in them, and, live only, the outcome of loading and
// attaching real slowburn programs (check/attach_probe.h). A source that
// cannot be read is kept as the reason why (Result's error), never fatal:
// the evaluator (check/checks.h) turns every reading into a row.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "check/attach_probe.h"
#include "core/error.h"
#include "core/rank_identity.h"
#include "health/health_snapshot.h"

namespace slowburn {

struct CheckSources {
  std::filesystem::path sysfs_root = "/sys";
  std::filesystem::path proc_root = "/proc";
  std::vector<int32_t> pids;  // the processes whose probes to check; empty: every rank found
  // This machine's own trees: the BPF programs are loaded, the clock and
  // the rlimit read, tracefs mounted when it is not and we may.
  bool live() const { return sysfs_root == "/sys" && proc_root == "/proc"; }
};

struct MemlockLimit {
  bool unlimited = false;  // the soft limit
  uint64_t bytes = 0;      // the soft limit, when not unlimited
  bool hard_unlimited = false;
};

struct TracefsReading {
  std::optional<std::string> mount_point;  // where the mount table has tracefs
  // Its events directory when it can be listed; else why not (not mounted,
  // not root, lockdown).
  Result<std::filesystem::path> events = make_error("not read");
};

// One catalog probe in one process: where it resolves, or why not.
struct ProbeReading {
  std::string probe;            // "mpi.allreduce"
  bool synchronizing = false;   // a collective that releases every rank together (what names a straggler)
  bool library_loaded = false;  // the process maps one of its target libraries
  bool resolved = false;
  std::string library;  // where it resolved
  std::string reason;   // why not, when !resolved
};

struct RankProbes {
  int32_t pid = 0;
  Result<RankIdentity> rank = make_error("not read");
  std::vector<std::string> libraries;  // the communication libraries it maps (session/discover.h)
  Result<std::vector<ProbeReading>> probes = make_error("not read");
};

struct NvidiaReading {
  bool proc_driver = false;  // /proc/driver/nvidia
  bool module = false;       // /sys/module/nvidia
  std::string version;       // the first line of /proc/driver/nvidia/version
};

struct CheckSnapshot {
  CheckSources sources;

  Result<std::string> kernel_release = make_error("not read");  // procfs sys/kernel/osrelease
  bool btf = false;                                             // sysfs kernel/btf/vmlinux
  Result<uint64_t> cap_effective = make_error("not read");      // procfs self/status CapEff
  Result<std::string> lockdown = make_error("not read");        // the active mode
  Result<int> perf_event_paranoid = make_error("not read");
  Result<int> unprivileged_bpf_disabled = make_error("not read");
  Result<MemlockLimit> memlock = make_error("not read");  // RLIMIT_MEMLOCK, live only

  TracefsReading tracefs_found;  // as found, before anything was loaded
  TracefsReading tracefs;        // after the BPF checks, which mount it when they may
  // Every tracepoint_uses() entry, by "system:event": listed in tracefs.
  // Empty when tracefs cannot be listed.
  std::map<std::string, bool> tracepoints;
  std::optional<std::string> kprobes_missing;  // loader/features.h: nullopt when kprobes work

  AttachProbe uprobe;        // perf-event links with bpf_cookie
  AttachProbe uprobe_multi;  // one multi-uprobe link
  AttachProbe tracepoint;    // a tracepoint link with bpf_cookie

  // The ranks found (or the --pid processes); an error when there is none.
  Result<std::vector<RankProbes>> ranks = make_error("not read");
  NvidiaReading nvidia;
  std::vector<std::string> rdma_devices;  // sysfs class/infiniband

  Result<ClockReading> clock = make_error("not read");  // adjtimex(2), live only
};

// Reads everything; never fails (every reading keeps its own error).
// Live, it loads and attaches the programs of check/attach_probe.h.
CheckSnapshot read_check_snapshot(const CheckSources& sources);

}  // namespace slowburn
