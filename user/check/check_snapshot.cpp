#include "check/check_snapshot.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "check/check_parsers.h"
#include "check/tracepoint_uses.h"
#include "core/files.h"
#include "core/strings.h"
#include "engine/discover.h"
#include "loader/features.h"
#include "probes/catalog.h"
#include "probes/resolver.h"
#include "procfs/maps.h"
#include "procfs/ranks.h"
#include "tracefs/tracefs.h"

namespace slowburn {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCapturedTree =
    "not tried: a captured tree (--sysfs-root/--procfs-root) is not a running kernel; run slowburn check on the "
    "node itself";

bool is_dir(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

Result<std::string> read_trimmed(const fs::path& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return std::string(trim_right(*text));
}

Result<int> read_int(const fs::path& path) {
  auto text = read_trimmed(path);
  if (!text) return text.error();
  if (auto value = parse_number<int>(*text)) return *value;
  return make_error("{} is not a number: '{}'", path.string(), text->substr(0, 40));
}

Result<uint64_t> read_cap_effective(const fs::path& proc_root) {
  fs::path path = proc_root / "self/status";
  auto text = read_file(path);
  if (!text) return text.error();
  auto mask = parse_cap_effective(*text);
  if (!mask) return make_error("{}: {}", path.string(), mask.error().message);
  return *mask;
}

Result<std::string> read_lockdown(const fs::path& sysfs_root) {
  fs::path path = sysfs_root / "kernel/security/lockdown";
  std::error_code ec;
  if (!fs::exists(path, ec))
    return make_error("no {} (securityfs not mounted at {}, or a kernel without the lockdown LSM)", path.string(),
                      (sysfs_root / "kernel/security").string());
  auto text = read_file(path);
  if (!text) return text.error();
  auto mode = parse_lockdown(*text);
  if (!mode) return make_error("{}: {}", path.string(), mode.error().message);
  return *mode;
}

Result<MemlockLimit> read_memlock() {
  rlimit limit{};
  if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0) return make_sys_error(errno, "getrlimit(RLIMIT_MEMLOCK) failed");
  MemlockLimit m;
  m.unlimited = limit.rlim_cur == RLIM_INFINITY;
  m.bytes = m.unlimited ? 0 : static_cast<uint64_t>(limit.rlim_cur);
  m.hard_unlimited = limit.rlim_max == RLIM_INFINITY;
  return m;
}

TracefsReading read_tracefs(const CheckSources& sources) {
  TracefsReading r;
  for (const char* mounts : {"self/mounts", "mounts"})
    if (auto text = read_file(sources.proc_root / mounts)) {
      r.mount_point = tracefs_mount_point(*text);
      break;
    }
  std::string why;
  for (const char* sub : {"kernel/tracing", "kernel/debug/tracing"}) {
    fs::path events = sources.sysfs_root / sub / "events";
    std::error_code ec;
    fs::directory_iterator it(events, ec);
    if (!ec) {
      r.events = events;
      return r;
    }
    // EACCES (tracefs is root's) and EPERM (lockdown) are worth telling; ENOENT is the absent mount.
    if (ec != std::errc::no_such_file_or_directory && why.empty())
      why = fmt::format("{} cannot be listed: {}", events.string(), ec.message());
  }
  if (why.empty())
    why = fmt::format("tracefs is not mounted (no {} or {})", (sources.sysfs_root / "kernel/tracing/events").string(),
                      (sources.sysfs_root / "kernel/debug/tracing/events").string());
  r.events = make_error("{}", why);
  return r;
}

std::map<std::string, bool> read_tracepoints(const TracefsReading& tracefs) {
  std::map<std::string, bool> out;
  if (!tracefs.events) return out;
  for (const TracepointUse& use : tracepoint_uses()) {
    std::error_code ec;
    out[use.name()] = fs::exists(*tracefs.events / use.system / use.event / "format", ec);
  }
  return out;
}

RankProbes read_rank_probes(const fs::path& proc_root, int32_t pid, Result<RankIdentity> rank, SymbolCache& cache) {
  RankProbes r;
  r.pid = pid;
  r.rank = std::move(rank);
  auto maps = read_process_maps(proc_root, pid);
  if (!maps) {
    r.probes = make_error("{} (does pid {} exist? other users' processes need root or CAP_SYS_PTRACE)",
                          maps.error().message, pid);
    return r;
  }
  r.libraries = communication_libraries(proc_root, pid);
  std::vector<ProbeReading> probes;
  for (const ProbeSpec& spec : probe_catalog()) {
    ProbeResolution resolution = resolve_in_process(spec, proc_root, pid, *maps, cache);
    ProbeReading p;
    p.probe = spec.name;
    p.synchronizing = spec.kind == CallKind::synchronizing;
    p.library_loaded = std::any_of(spec.targets.begin(), spec.targets.end(),
                                   [&](const ProbeTarget& t) { return find_library(*maps, t.library).has_value(); });
    p.resolved = resolution.resolved;
    p.library = resolution.library;
    p.reason = resolution.reason;
    probes.push_back(std::move(p));
  }
  r.probes = std::move(probes);
  return r;
}

Result<std::vector<RankProbes>> read_ranks(const CheckSources& sources) {
  SymbolCache cache;
  std::vector<RankProbes> out;
  if (sources.pids.empty()) {
    auto ranks = find_ranks({}, sources.proc_root);
    if (!ranks) return ranks.error();
    for (RankIdentity& rank : *ranks)
      out.push_back(read_rank_probes(sources.proc_root, rank.pid, std::move(rank), cache));
    return out;
  }
  for (int32_t pid : sources.pids)
    out.push_back(read_rank_probes(sources.proc_root, pid, read_rank(sources.proc_root, pid), cache));
  return out;
}

NvidiaReading read_nvidia(const CheckSources& sources) {
  NvidiaReading r;
  r.proc_driver = is_dir(sources.proc_root / "driver/nvidia");
  r.module = is_dir(sources.sysfs_root / "module/nvidia");
  if (auto text = read_file(sources.proc_root / "driver/nvidia/version")) {
    std::string_view all(*text);
    r.version = std::string(trim_right(all.substr(0, all.find('\n'))));
  }
  return r;
}

AttachProbe not_tried(const std::string& why) {
  AttachProbe probe;
  probe.error = why;
  return probe;
}

}  // namespace

CheckSnapshot read_check_snapshot(const CheckSources& sources) {
  CheckSnapshot s;
  s.sources = sources;
  s.kernel_release = read_trimmed(sources.proc_root / "sys/kernel/osrelease");
  std::error_code ec;
  s.btf = fs::exists(sources.sysfs_root / "kernel/btf/vmlinux", ec);
  s.cap_effective = read_cap_effective(sources.proc_root);
  s.lockdown = read_lockdown(sources.sysfs_root);
  s.perf_event_paranoid = read_int(sources.proc_root / "sys/kernel/perf_event_paranoid");
  s.unprivileged_bpf_disabled = read_int(sources.proc_root / "sys/kernel/unprivileged_bpf_disabled");
  s.kprobes_missing = kprobes_unavailable_reason(sources.sysfs_root);
  s.nvidia = read_nvidia(sources);
  s.rdma_devices = sorted_dir_entries(sources.sysfs_root / "class/infiniband");
  s.ranks = read_ranks(sources);

  // Before anything is loaded: loading mounts tracefs when it may.
  s.tracefs_found = read_tracefs(sources);
  if (sources.live()) {
    // trace and probe mount tracefs when they start (as root); so does the check, whatever its attach tests find.
    (void)ensure_tracefs();
    s.memlock = read_memlock();
    s.clock = read_clock_state();
    s.uprobe = probe_uprobe_attach(AttachMode::perf_link);
    s.uprobe_multi = probe_uprobe_attach(AttachMode::multi_link);
    s.tracefs = read_tracefs(sources);
    s.tracepoint =
        s.tracefs.events ? probe_tracepoint_attach() : not_tried("not tried: " + s.tracefs.events.error().message);
  } else {
    s.memlock = make_error("not read: a captured tree holds no rlimit of the process that will run slowburn");
    s.clock = make_error("a captured tree holds no clock state (adjtimex(2) reads the running kernel's)");
    s.uprobe = s.uprobe_multi = s.tracepoint = not_tried(kCapturedTree);
    s.tracefs = s.tracefs_found;
  }
  s.tracepoints = read_tracepoints(s.tracefs);
  return s;
}

}  // namespace slowburn
