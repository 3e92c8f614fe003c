// The kernel, the privileges and what loading real programs showed:
// kernel, btf, capabilities, capabilities.ptrace, lockdown,
// perf_event_paranoid, unprivileged_bpf_disabled, memlock, tracefs,
// bpf.ringbuf, bpf.uprobe, bpf.uprobe_multi, bpf.tracepoint.
#include "check/checks.h"

#include <fmt/format.h>

#include "check/check_parsers.h"
#include "core/strings.h"
#include "loader/privileges.h"

namespace slowburn {

namespace {

constexpr KernelVersion kMinimumKernel{5, 15};  // ring buffers (5.8), bpf_cookie on uprobes (5.15)
constexpr KernelVersion kMemcgAccounting{5, 11};
constexpr KernelVersion kUprobeMulti{6, 10};

constexpr const char* kCapabilityFix =
    "run as root (sudo slowburn ...), or grant the capabilities: sudo setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep "
    "$(command -v slowburn); in a container: --cap-add BPF --cap-add PERFMON --cap-add SYS_PTRACE";
constexpr const char* kBtfFix =
    "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian, Ubuntu, RHEL and Fedora kernels are): slowburn's "
    "programs are CO-RE and relocate against /sys/kernel/btf/vmlinux";
constexpr const char* kLockdownFix =
    "boot with lockdown=integrity (or none) on the kernel command line; under Secure Boot the kernel raises "
    "lockdown itself (mokutil --disable-validation, or a kernel that does not)";
constexpr const char* kCapturedFix = "run slowburn check on the node itself";

CheckRow row(std::string check, bool ok, bool required, std::string detail, std::string fix = "") {
  return check_row(std::move(check), ok, required, std::move(detail), std::move(fix));
}

bool has_capability(uint64_t effective, int cap) { return (effective >> cap) & 1u; }

bool may_load(const CheckSnapshot& s) { return s.cap_effective && missing_load_capabilities(*s.cap_effective).empty(); }

bool confidentiality(const CheckSnapshot& s) { return s.lockdown && *s.lockdown == "confidentiality"; }

std::optional<KernelVersion> kernel_version(const CheckSnapshot& s) {
  return s.kernel_release ? parse_kernel_release(*s.kernel_release) : std::nullopt;
}

CheckRow kernel_row(const CheckSnapshot& s) {
  if (!s.kernel_release) return row("kernel", false, false, s.kernel_release.error().message, kCapturedFix);
  auto version = parse_kernel_release(*s.kernel_release);
  if (!version)
    return row("kernel", false, false, fmt::format("release '{}' is not MAJOR.MINOR...", *s.kernel_release),
               "check the kernel release (uname -r)");
  bool ok = *version >= kMinimumKernel;
  std::string detail = fmt::format(
      "Linux {}: {} 5.15, which slowburn needs (BPF ring buffers, bpf_cookie on uprobes); multi-uprobe links "
      "(6.10+): {}",
      *s.kernel_release, ok ? "at least" : "older than", *version >= kUprobeMulti ? "yes" : "no");
  return row("kernel", ok, false, detail, "upgrade to Linux 5.15 or later (6.10+ for multi-uprobe links)");
}

CheckRow btf_row(const CheckSnapshot& s) {
  std::string path = (s.sources.sysfs_root / "kernel/btf/vmlinux").string();
  if (s.btf) return row("btf", true, true, fmt::format("{} present: CO-RE programs relocate against it", path));
  return row("btf", false, true, fmt::format("no {}: slowburn's CO-RE programs cannot load on this kernel", path),
             kBtfFix);
}

CheckRow capabilities_row(const CheckSnapshot& s) {
  if (!s.cap_effective)
    return row("capabilities", false, true, s.cap_effective.error().message,
               s.sources.live() ? kCapabilityFix : kCapturedFix);
  uint64_t caps = *s.cap_effective;
  std::vector<std::string> held;
  for (auto [cap, name] : {std::pair{kCapBpf, "CAP_BPF"}, std::pair{kCapPerfmon, "CAP_PERFMON"},
                           std::pair{kCapSysPtrace, "CAP_SYS_PTRACE"}, std::pair{kCapSysAdmin, "CAP_SYS_ADMIN"}})
    if (has_capability(caps, cap)) held.push_back(name);
  std::string have = fmt::format("CapEff {:016x}: {}", caps, held.empty() ? "none of them" : join(held));
  std::vector<std::string> missing = missing_load_capabilities(caps);
  if (missing.empty())
    return row("capabilities", true, true,
               fmt::format("{}; enough to load and attach (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)", have));
  return row("capabilities", false, true,
             fmt::format("{}; missing {}: programs cannot be loaded or attached (CAP_BPF and CAP_PERFMON, or "
                         "CAP_SYS_ADMIN, are needed)",
                         have, join(missing)),
             kCapabilityFix);
}

CheckRow ptrace_row(const CheckSnapshot& s) {
  if (!s.cap_effective)
    return row("capabilities.ptrace", false, false, s.cap_effective.error().message,
               s.sources.live() ? kCapabilityFix : kCapturedFix);
  if (missing_ptrace_capabilities(*s.cap_effective).empty())
    return row("capabilities.ptrace", true, false,
               "CAP_SYS_PTRACE: every process's environment (its rank) and maps (its libraries) can be read");
  return row("capabilities.ptrace", false, false,
             "no CAP_SYS_PTRACE: other users' rank processes are invisible (their environment names the rank, "
             "their maps the libraries to probe); this user's own are still found",
             "run as root, or grant CAP_SYS_PTRACE (setcap cap_sys_ptrace+ep, --cap-add SYS_PTRACE)");
}

CheckRow lockdown_row(const CheckSnapshot& s) {
  if (!s.lockdown) {
    // Confidentiality refuses bpf_probe_read_kernel: a tracepoint program that calls it loaded, so it is not.
    if (s.tracepoint.loaded)
      return row("lockdown", true, false,
                 fmt::format("{}; not in confidentiality mode: the tracepoint program, which calls "
                             "bpf_probe_read_kernel, loaded",
                             s.lockdown.error().message));
    return row("lockdown", false, false,
               fmt::format("cannot tell: {}; in confidentiality mode the kernel refuses bpf_probe_read_kernel, "
                           "tracefs and kprobes",
                           s.lockdown.error().message),
               "mount -t securityfs securityfs /sys/kernel/security, then run slowburn check again");
  }
  const std::string& mode = *s.lockdown;
  if (mode == "none") return row("lockdown", true, false, "none: the kernel refuses nothing to BPF");
  if (mode == "integrity")
    return row("lockdown", true, false,
               "integrity: bpf_probe_write_user and debugfs are refused; slowburn uses neither (tracefs is "
               "/sys/kernel/tracing)");
  if (mode == "confidentiality")
    return row("lockdown", false, false,
               "confidentiality: the kernel refuses bpf_probe_read_kernel, tracefs and kprobes: the scheduler "
               "program (host.sched), the kernel-log Xid filter, GPU interrupt timing and the hardware tracepoints "
               "cannot load; the collective uprobes (bpf_probe_read_user) still work",
               kLockdownFix);
  return row("lockdown", false, false, fmt::format("unknown lockdown mode '{}'", mode), kLockdownFix);
}

CheckRow paranoid_row(const CheckSnapshot& s) {
  const char* name = "perf_event_paranoid";
  if (!s.perf_event_paranoid) return row(name, false, false, s.perf_event_paranoid.error().message, kCapturedFix);
  int value = *s.perf_event_paranoid;
  if (s.cap_effective &&
      (has_capability(*s.cap_effective, kCapPerfmon) || has_capability(*s.cap_effective, kCapSysAdmin)))
    return row(name, true, false,
               fmt::format("kernel.perf_event_paranoid = {}: does not apply, this process has CAP_PERFMON (or "
                           "CAP_SYS_ADMIN)",
                           value));
  return row(name, false, false,
             fmt::format("kernel.perf_event_paranoid = {} and no CAP_PERFMON: the uprobe and tracepoint perf events "
                         "slowburn attaches through cannot be opened (the uprobe PMU needs CAP_PERFMON whatever "
                         "this setting says)",
                         value),
             "grant CAP_PERFMON (see capabilities); lowering kernel.perf_event_paranoid alone does not let uprobes "
             "attach");
}

CheckRow unprivileged_bpf_row(const CheckSnapshot& s) {
  const char* name = "unprivileged_bpf_disabled";
  if (!s.unprivileged_bpf_disabled)
    return row(name, true, false,
               fmt::format("{}; it does not matter: slowburn's tracing programs need CAP_BPF and CAP_PERFMON "
                           "whatever it says",
                           s.unprivileged_bpf_disabled.error().message));
  int value = *s.unprivileged_bpf_disabled;
  const char* meaning = value == 0   ? "unprivileged BPF allowed"
                        : value == 1 ? "unprivileged BPF disabled until reboot"
                        : value == 2 ? "unprivileged BPF disabled, an admin may re-enable it"
                                     : "a value this check does not know";
  return row(name, true, false,
             fmt::format("kernel.unprivileged_bpf_disabled = {}: {}; no effect on slowburn, whose tracing programs "
                         "need CAP_BPF and CAP_PERFMON in any case",
                         value, meaning));
}

std::string bytes_text(uint64_t bytes) {
  if (bytes >= (1u << 20)) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} KiB", bytes >> 10);
}

CheckRow memlock_row(const CheckSnapshot& s) {
  if (!s.memlock) return row("memlock", false, false, s.memlock.error().message, kCapturedFix);
  const MemlockLimit& m = *s.memlock;
  std::string limit = m.unlimited ? "unlimited" : bytes_text(m.bytes);
  auto version = kernel_version(s);
  if (version && *version >= kMemcgAccounting)
    return row("memlock", true, false,
               fmt::format("RLIMIT_MEMLOCK {}: not used for BPF on Linux 5.11+, which charges BPF memory to the "
                           "memory cgroup (libbpf 1.x sees that and leaves the limit alone)",
                           limit));
  if (m.unlimited || m.hard_unlimited)
    return row("memlock", true, false,
               fmt::format("RLIMIT_MEMLOCK {} (hard {}): BPF maps count against it before Linux 5.11; libbpf 1.x "
                           "raises the soft limit to infinity",
                           limit, m.hard_unlimited ? "unlimited" : "limited"));
  return row("memlock", false, false,
             fmt::format("RLIMIT_MEMLOCK {} (hard limit too): before Linux 5.11 BPF maps count against it, and the "
                         "8 MiB ring buffer of one program already needs more",
                         limit),
             "ulimit -l unlimited before starting slowburn, or LimitMEMLOCK=infinity in its systemd unit");
}

CheckRow tracefs_row(const CheckSnapshot& s) {
  const char* uses =
      "tracepoint programs (the kernel-log Xid filter, GPU interrupts, the hardware tracepoints) attach through "
      "it; the collective uprobes do not";
  if (s.tracefs.events) {
    std::string detail = fmt::format("{} can be listed", s.tracefs.events->string());
    if (!s.tracefs_found.events)
      detail += " (it was not mounted: slowburn mounted it, as it does whenever it runs with CAP_SYS_ADMIN)";
    return row("tracefs", true, true, detail);
  }
  std::string detail = s.tracefs.events.error().message;
  if (s.tracefs.mount_point) detail += fmt::format(" (the mount table has tracefs at {})", *s.tracefs.mount_point);
  if (confidentiality(s)) detail += "; lockdown=confidentiality refuses tracefs";
  return row("tracefs", false, true, fmt::format("{}: {}", detail, uses), tracefs_fix(s));
}

// The stage an attach test reached, in words, for a row's detail.
std::string probe_failure(const AttachProbe& p) {
  if (!p.ran) return p.error;
  if (!p.loaded) return "did not load: " + p.error;
  if (!p.attached) return "loaded, did not attach: " + p.error;
  return p.error;
}

std::string probe_success(const AttachProbe& p) {
  return fmt::format("{}: fired {}x, {} record(s) back through the ring buffer carrying the cookie", p.how, p.fired,
                     p.matched);
}

std::string attach_fix(const CheckSnapshot& s, const AttachProbe& p) {
  if (!p.ran && p.error.find("stripped") != std::string::npos)
    return "install slowburn unstripped: this check attaches to its own slowburn_check_probe_target";
  if (!p.ran || !p.loaded) return load_fix(s);
  if (!p.attached)
    return may_load(s) ? "a kernel with CONFIG_UPROBE_EVENTS=y, Linux 5.15+ (bpf_cookie)" : kCapabilityFix;
  return "run slowburn -v check and report the output: the program attached but its records did not come back";
}

CheckRow ringbuf_row(const CheckSnapshot& s) {
  for (const AttachProbe* p : {&s.uprobe, &s.uprobe_multi, &s.tracepoint})
    if (p->loaded && p->matched > 0)
      return row("bpf.ringbuf", true, true,
                 fmt::format("BPF_MAP_TYPE_RINGBUF: {} record(s) read back from {}", p->matched, p->how));
  const AttachProbe& p = s.uprobe;
  std::string detail =
      p.loaded ? fmt::format("a program with a ring buffer loaded, but no record came back: {}", probe_failure(p))
               : fmt::format("no program with a ring buffer could be loaded: {}", probe_failure(p));
  return row("bpf.ringbuf", false, true, detail, attach_fix(s, p));
}

CheckRow uprobe_row(const CheckSnapshot& s) {
  if (s.uprobe.worked()) return row("bpf.uprobe", true, true, probe_success(s.uprobe));
  return row("bpf.uprobe", false, true,
             fmt::format("{}: the collective probes (uprobes with a bpf_cookie each) cannot be traced",
                         probe_failure(s.uprobe)),
             attach_fix(s, s.uprobe));
}

CheckRow uprobe_multi_row(const CheckSnapshot& s) {
  const AttachProbe& p = s.uprobe_multi;
  if (p.worked()) return row("bpf.uprobe_multi", true, false, probe_success(p));
  std::string without =
      "slowburn attaches one perf-event link per uprobe instead: slower to attach, and detaching waits one RCU "
      "grace period per uprobe (64 probes: about 6 s at Ctrl-C)";
  bool kernel_lacks = !p.ran && p.error.find("Linux 6.10") != std::string::npos;
  // The kernel is probed by loading a program: without the privileges to load, that says nothing.
  if (kernel_lacks && !may_load(s))
    return row("bpf.uprobe_multi", false, false,
               "cannot tell: probing for multi-uprobe links loads a program, which needs CAP_BPF and CAP_PERFMON",
               kCapabilityFix);
  return row("bpf.uprobe_multi", false, false, fmt::format("{}: {}", probe_failure(p), without),
             kernel_lacks ? "Linux 6.10 or later" : attach_fix(s, p));
}

CheckRow tracepoint_probe_row(const CheckSnapshot& s) {
  const AttachProbe& p = s.tracepoint;
  if (p.worked()) return row("bpf.tracepoint", true, false, probe_success(p));
  std::string fix = !p.ran && !s.tracefs.events ? tracefs_fix(s) : attach_fix(s, p);
  return row("bpf.tracepoint", false, false,
             fmt::format("{}: the hardware tracepoints (AER, the driver's Xid) and the kernel-log Xid filter "
                         "cannot be attached",
                         probe_failure(p)),
             fix);
}

}  // namespace

std::string load_fix(const CheckSnapshot& s) {
  if (!s.sources.live()) return kCapturedFix;
  if (!may_load(s)) return kCapabilityFix;
  if (!s.btf) return kBtfFix;
  if (confidentiality(s)) return kLockdownFix;
  return "run slowburn -v check to see libbpf's log and the verifier's; slowburn needs Linux 5.15+ (BPF ring "
         "buffers, bpf_cookie)";
}

std::string tracefs_fix(const CheckSnapshot& s) {
  if (!s.sources.live()) return "copy /sys/kernel/tracing/events into the captured tree's kernel/tracing/events";
  if (confidentiality(s)) return kLockdownFix;
  if (s.tracefs.mount_point || !s.cap_effective || !has_capability(*s.cap_effective, kCapSysAdmin))
    return "run as root: tracefs is root's (slowburn mounts it itself when it may: mount -t tracefs nodev "
           "/sys/kernel/tracing)";
  return "mount -t tracefs nodev /sys/kernel/tracing";
}

void evaluate_kernel_checks(const CheckSnapshot& s, std::vector<CheckRow>& rows) {
  rows.push_back(kernel_row(s));
  rows.push_back(btf_row(s));
  rows.push_back(capabilities_row(s));
  rows.push_back(ptrace_row(s));
  rows.push_back(lockdown_row(s));
  rows.push_back(paranoid_row(s));
  rows.push_back(unprivileged_bpf_row(s));
  rows.push_back(memlock_row(s));
  rows.push_back(tracefs_row(s));
  rows.push_back(ringbuf_row(s));
  rows.push_back(uprobe_row(s));
  rows.push_back(uprobe_multi_row(s));
  rows.push_back(tracepoint_probe_row(s));
}

std::vector<CheckRow> evaluate_checks(const CheckSnapshot& snapshot) {
  std::vector<CheckRow> rows;
  evaluate_kernel_checks(snapshot, rows);
  evaluate_source_checks(snapshot, rows);
  return rows;
}

}  // namespace slowburn
