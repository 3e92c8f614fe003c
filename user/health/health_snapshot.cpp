#include "health/health_snapshot.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/timex.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "core/clock.h"
#include "core/files.h"
#include "core/strings.h"
#include "sysfs/pci_devices.h"
#include "sysfs/rdma_ports.h"
#include "tracefs/tracefs.h"

namespace slowburn {

namespace fs = std::filesystem;

namespace {

bool is_dir(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool path_exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// Entries of a directory whose names start with `prefix` followed by a
// number ("mc0", "cpu12"), sorted by that number.
std::vector<std::pair<int, fs::path>> numbered_entries(const fs::path& dir, std::string_view prefix) {
  std::vector<std::pair<int, fs::path>> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    if (auto n = parse_number<int>(std::string_view(name).substr(prefix.size()))) out.emplace_back(*n, it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A file's text, trimmed; nullopt when absent. `notes` gets a line when it
// exists but cannot be read.
std::optional<std::string> read_text(const fs::path& path, std::vector<std::string>* notes = nullptr) {
  if (!path_exists(path)) return std::nullopt;
  auto text = read_file(path);
  if (!text) {
    if (notes) notes->push_back(text.error().message);
    return std::nullopt;
  }
  return std::string(trim_right(*text));
}

// A counter file; a malformed one is a note naming it.
std::optional<uint64_t> read_counter(const fs::path& path, std::vector<std::string>& notes) {
  auto text = read_text(path, &notes);
  if (!text) return std::nullopt;
  auto value = parse_counter(*text);
  if (!value) notes.push_back(fmt::format("{} is not a counter: '{}'", path.string(), text->substr(0, 40)));
  return value;
}

EdacDimm read_edac_dimm(const fs::path& dir, bool csrow, std::vector<std::string>& notes) {
  EdacDimm dimm;
  dimm.name = dir.filename().string();
  if (!csrow) {
    dimm.ce = read_counter(dir / "dimm_ce_count", notes);
    dimm.ue = read_counter(dir / "dimm_ue_count", notes);
    dimm.label = read_text(dir / "dimm_label").value_or("");
    return dimm;
  }
  // Legacy csrow layout: ce_count/ue_count, one ch<N>_dimm_label per channel.
  dimm.ce = read_counter(dir / "ce_count", notes);
  dimm.ue = read_counter(dir / "ue_count", notes);
  std::vector<std::string> labels;
  for (const std::string& name : sorted_dir_entries(dir))
    if (name.rfind("ch", 0) == 0 && name.size() > 11 && name.substr(name.size() - 11) == "_dimm_label")
      if (auto label = read_text(dir / name); label && !label->empty()) labels.push_back(*label);
  dimm.label = join(labels, ", ");
  return dimm;
}

Result<std::vector<EdacController>> read_edac(const fs::path& sysfs_root) {
  fs::path edac = sysfs_root / "devices/system/edac";
  if (!is_dir(edac))
    return make_error("no EDAC driver loaded (no {}): host memory errors are not counted by the kernel", edac.string());
  auto controllers = numbered_entries(edac / "mc", "mc");
  if (controllers.empty())
    return make_error("EDAC core present but no memory-controller driver loaded ({} has no mc*)",
                      (edac / "mc").string());
  std::vector<EdacController> out;
  for (const auto& [n, dir] : controllers) {
    EdacController mc;
    mc.name = dir.filename().string();
    mc.mc_name = read_text(dir / "mc_name").value_or("");
    mc.ce = read_counter(dir / "ce_count", mc.notes);
    mc.ue = read_counter(dir / "ue_count", mc.notes);
    for (const char* prefix : {"dimm", "rank", "csrow"})
      for (const auto& [i, sub] : numbered_entries(dir, prefix))
        if (is_dir(sub)) mc.dimms.push_back(read_edac_dimm(sub, std::string_view(prefix) == "csrow", mc.notes));
    if (!mc.ce && !mc.ue && mc.notes.empty())
      mc.notes.push_back(fmt::format("{}: no ce_count or ue_count", dir.string()));
    out.push_back(std::move(mc));
  }
  return out;
}

struct CpuReadings {
  std::vector<CpuThrottle> throttle;
  std::vector<CpuFrequency> frequency;
};

CpuReadings read_cpus(const fs::path& cpu_root) {
  CpuReadings out;
  std::vector<std::string> ignored;
  for (const auto& [cpu, dir] : numbered_entries(cpu_root, "cpu")) {
    if (is_dir(dir / "thermal_throttle")) {
      CpuThrottle t;
      t.cpu = cpu;
      t.core_count = read_counter(dir / "thermal_throttle/core_throttle_count", ignored);
      t.package_count = read_counter(dir / "thermal_throttle/package_throttle_count", ignored);
      if (auto pkg = read_text(dir / "topology/physical_package_id")) t.package = parse_number<int>(*pkg);
      out.throttle.push_back(t);
    }
    if (is_dir(dir / "cpufreq")) {
      CpuFrequency f;
      f.cpu = cpu;
      f.governor = read_text(dir / "cpufreq/scaling_governor").value_or("");
      f.cur_khz = read_counter(dir / "cpufreq/scaling_cur_freq", ignored);
      f.max_khz = read_counter(dir / "cpufreq/cpuinfo_max_freq", ignored);
      out.frequency.push_back(f);
    }
  }
  return out;
}

Result<CpuLists> read_cpu_lists(const fs::path& cpu_root) {
  CpuLists lists;
  const std::pair<const char*, std::vector<int>*> files[] = {{"online", &lists.online},
                                                             {"offline", &lists.offline},
                                                             {"present", &lists.present},
                                                             {"possible", &lists.possible}};
  for (const auto& [name, target] : files) {
    fs::path path = cpu_root / name;
    auto text = read_file(path);
    if (!text) return text.error();
    auto cpus = parse_cpu_list(*text);
    if (!cpus)
      return make_error("{} is not a CPU list: '{}'", path.string(), std::string(trim_right(*text)).substr(0, 60));
    *target = std::move(*cpus);
  }
  return lists;
}

Result<SmtState> read_smt(const fs::path& cpu_root) {
  fs::path control = cpu_root / "smt/control";
  auto text = read_file(control);
  if (!text) return make_error("{} (a kernel without CONFIG_HOTPLUG_SMT)", text.error().message);
  SmtState smt;
  smt.control = std::string(trim_right(*text));
  if (auto active = read_text(cpu_root / "smt/active")) {
    if (*active == "1") smt.active = true;
    if (*active == "0") smt.active = false;
  }
  return smt;
}

// The PCI device a class device's `device` link leads to: the nearest BDF
// on its resolved path (virtio-net's is the virtio device's parent).
std::string pci_owner(const fs::path& device_link) {
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(device_link, ec);
  if (ec) return {};
  for (fs::path p = resolved; !p.empty() && p != p.root_path(); p = p.parent_path())
    if (is_bdf(p.filename().string())) return p.filename().string();
  return {};
}

std::vector<NetdevState> read_netdevs(const fs::path& sysfs_root, const std::set<std::string>& roce) {
  std::vector<NetdevState> out;
  fs::path class_net = sysfs_root / "class/net";
  for (const std::string& name : sorted_dir_entries(class_net)) {
    fs::path dir = class_net / name;
    if (!path_exists(dir / "device")) continue;  // virtual: lo, bridges, bonds, veth, ifb
    NetdevState n;
    n.name = name;
    n.device = pci_owner(dir / "device");
    n.roce = roce.contains(name);
    if (auto state = read_text(dir / "operstate", &n.notes))
      n.operstate = *state;
    else
      n.notes.push_back(fmt::format("{}: no operstate", (dir / "operstate").string()));
    // speed reads EINVAL on a link that is down on many drivers: no speed then.
    if (auto speed = read_file(dir / "speed"); speed) n.speed_mbps = parse_number<int64_t>(trim_right(*speed));
    for (const std::string& stat : sorted_dir_entries(dir / "statistics"))
      if (stat.size() > 7 && stat.substr(stat.size() - 7) == "_errors")
        if (auto value = read_counter(dir / "statistics" / stat, n.notes)) n.errors[stat] = *value;
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<RdmaPortState> read_rdma(const fs::path& sysfs_root) {
  std::vector<RdmaPortState> out;
  for (NicSample& sample : read_rdma_ports(sysfs_root)) {
    RdmaPortState port;
    fs::path dir = sysfs_root / "class/infiniband" / sample.nic / "ports" / std::to_string(sample.port);
    port.state = parse_ib_state_name(read_text(dir / "state").value_or(""));
    port.phys_state = parse_ib_state_name(read_text(dir / "phys_state").value_or(""));
    port.link_layer = read_text(dir / "link_layer").value_or("");
    port.rate_text = read_text(dir / "rate").value_or("");
    port.rate_gbps = parse_ib_rate_gbps(port.rate_text);
    port.counters = std::move(sample);
    out.push_back(std::move(port));
  }
  return out;
}

Result<fs::path> tracefs_events(const HealthSources& sources) {
  if (!sources.live()) {
    for (const char* sub : {"kernel/tracing/events", "kernel/debug/tracing/events"})
      if (is_dir(sources.sysfs_root / sub)) return sources.sysfs_root / sub;
    return make_error(
        "the captured tree has no tracefs ({}; copy /sys/kernel/tracing/events/mce and /ras into it to replay "
        "them)",
        (sources.sysfs_root / "kernel/tracing/events").string());
  }
  auto tracefs = ensure_tracefs();
  if (!tracefs) return tracefs.error();
  return *tracefs / "events";
}

Result<std::set<std::string>> read_tracepoints(const Result<fs::path>& events) {
  if (!events) return events.error();
  std::set<std::string> found;
  for (const char* name : {kMceTracepoint, kMcEventTracepoint}) {
    std::string_view full(name);
    size_t colon = full.find(':');
    if (path_exists(*events / std::string(full.substr(0, colon)) / std::string(full.substr(colon + 1)) / "format"))
      found.insert(name);
  }
  return found;
}

Result<uint64_t> read_tainted(const fs::path& proc_root) {
  fs::path path = proc_root / "sys/kernel/tainted";
  auto text = read_file(path);
  if (!text) return text.error();
  auto value = parse_counter(*text);
  if (!value)
    return make_error("{} is not a number: '{}'", path.string(), std::string(trim_right(*text)).substr(0, 40));
  return *value;
}

Result<double> read_uptime(const fs::path& proc_root) {
  fs::path path = proc_root / "uptime";
  auto text = read_file(path);
  if (!text) return text.error();
  char* end = nullptr;
  double seconds = std::strtod(text->c_str(), &end);
  if (end == text->c_str() || !(seconds >= 0)) return make_error("{} does not start with seconds", path.string());
  return seconds;
}

Result<std::vector<TimeDaemon>> read_time_daemons(const fs::path& proc_root) {
  std::vector<TimeDaemon> out;
  std::error_code ec;
  fs::directory_iterator it(proc_root, ec);
  if (ec) return make_sys_error(ec.value(), "cannot list " + proc_root.string());
  for (fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) break;
    auto pid = parse_number<int32_t>(it->path().filename().string());
    if (!pid) continue;
    std::optional<std::string> comm = read_text(it->path() / "comm");
    if (!comm)
      if (auto stat = read_text(it->path() / "stat")) comm = comm_from_stat(*stat);
    if (!comm) continue;
    if (auto daemon = time_daemon_name(*comm)) out.push_back({*daemon, *pid});
  }
  std::sort(out.begin(), out.end(), [](const TimeDaemon& a, const TimeDaemon& b) { return a.pid < b.pid; });
  return out;
}

Result<std::vector<KernelLogLine>> read_kernel_log_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return make_sys_error(errno, "cannot read the kernel log " + path.string());
  std::vector<KernelLogLine> lines;
  for (std::string line; std::getline(in, line);)
    if (auto parsed = parse_kernel_log_line(line)) lines.push_back(std::move(*parsed));
  return lines;
}

Result<std::vector<KernelLogLine>> read_dev_kmsg() {
  int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string why = err == EPERM || err == EACCES
                          ? " (not root: with kernel.dmesg_restrict=1 only CAP_SYSLOG may read the kernel log)"
                          : "";
    return make_sys_error(err, "cannot read /dev/kmsg" + why);
  }
  lseek(fd, 0, SEEK_DATA);  // from the last `dmesg -c`, what dmesg shows
  std::vector<KernelLogLine> lines;
  std::string record(8192, '\0');  // a record is at most CONSOLE_EXT_LOG_MAX (8 KiB)
  for (;;) {
    ssize_t n = read(fd, record.data(), record.size());
    if (n > 0) {
      std::string_view text(record.data(), static_cast<size_t>(n));
      if (auto parsed = parse_kernel_log_line(text.substr(0, text.find('\n')))) lines.push_back(std::move(*parsed));
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == EINTR)) continue;  // EPIPE: records overwritten while reading
    if (n < 0 && errno != EAGAIN) {
      int err = errno;
      close(fd);
      return make_sys_error(err, "reading /dev/kmsg failed");
    }
    break;
  }
  close(fd);
  return lines;
}

}  // namespace

Result<std::vector<KernelLogLine>> read_kernel_log(const std::optional<fs::path>& file) {
  return file ? read_kernel_log_file(*file) : read_dev_kmsg();
}

Result<ClockReading> read_clock_state() {
  timex tx{};
  int state = adjtimex(&tx);
  if (state < 0) return make_sys_error(errno, "adjtimex(2) failed");
  ClockReading r;
  r.status = tx.status;
  r.esterror_us = tx.esterror;
  r.maxerror_us = tx.maxerror;
  r.clock_state = state;
  return r;
}

Result<HealthSnapshot> collect_health(const HealthSources& sources) {
  if (!is_dir(sources.sysfs_root)) return make_error("--sysfs-root {}: no such directory", sources.sysfs_root.string());
  if (!is_dir(sources.proc_root)) return make_error("--procfs-root {}: no such directory", sources.proc_root.string());
  if (sources.kmsg_file && !std::ifstream(*sources.kmsg_file))
    return make_sys_error(errno, "--kmsg " + sources.kmsg_file->string() + ": cannot read it");
  HealthSnapshot s;
  s.sources = sources;
  s.ts_ns = monotonic_ns();
  s.edac = read_edac(sources.sysfs_root);

  fs::path cpu_root = sources.sysfs_root / "devices/system/cpu";
  if (!is_dir(cpu_root)) {
    Error missing = make_error("no {}", cpu_root.string());
    s.throttle = missing;
    s.frequency = missing;
    s.cpu_lists = missing;
    s.smt = missing;
  } else {
    CpuReadings cpus = read_cpus(cpu_root);
    if (cpus.throttle.empty())
      s.throttle = make_error(
          "no thermal_throttle directory under {}/cpu*/ (Intel's therm_throt driver provides it: absent on other "
          "CPUs and in most virtual machines)",
          cpu_root.string());
    else
      s.throttle = std::move(cpus.throttle);
    if (cpus.frequency.empty())
      s.frequency = make_error(
          "no cpufreq under {}/cpu*/ (no frequency-scaling driver: a virtual machine, or the firmware controls "
          "frequency)",
          cpu_root.string());
    else
      s.frequency = std::move(cpus.frequency);
    s.cpu_lists = read_cpu_lists(cpu_root);
    s.smt = read_smt(cpu_root);
  }

  for (const PciDevice& dev : read_pci_devices(sources.sysfs_root)) {
    const LinkReading& l = dev.link;
    if (!dev.virtual_function && (l.current_speed_gts || l.current_width || l.max_speed_gts || l.max_width))
      s.links[dev.bdf] = l;
    if (auto aer = read_aer_counters(sources.sysfs_root, dev.bdf); !aer.empty()) s.aer[dev.bdf] = std::move(aer);
  }

  s.rdma_ports = read_rdma(sources.sysfs_root);
  std::set<std::string> roce;
  for (const RdmaPortState& p : s.rdma_ports)
    if (p.link_layer == "Ethernet" && !p.counters.netdev.empty()) roce.insert(p.counters.netdev);
  s.netdevs = read_netdevs(sources.sysfs_root, roce);
  if (sources.live())
    for (const std::string& netdev : roce) s.pfc.emplace(netdev, read_pfc_config(netdev));

  s.tainted = read_tainted(sources.proc_root);
  s.uptime_s = read_uptime(sources.proc_root);
  if (!sources.kernel_log)
    s.kernel_log = make_error("the kernel log was not read for this reading");
  else if (sources.kmsg_file || sources.live())
    s.kernel_log = read_kernel_log(sources.kmsg_file);
  else
    s.kernel_log = make_error(
        "no kernel log: a captured tree holds none (pass --kmsg FILE: a copy of /dev/kmsg or `dmesg` output)");
  auto events = tracefs_events(sources);
  if (events) s.tracefs_events = events->string();
  s.tracepoints = read_tracepoints(events);

  if (sources.live())
    s.clock = read_clock_state();
  else
    s.clock = make_error("a captured tree holds no clock state (adjtimex(2) reads the running kernel's)");
  s.time_daemons = read_time_daemons(sources.proc_root);
  return s;
}

}  // namespace slowburn
