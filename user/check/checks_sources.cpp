// What slowburn reads besides its uprobes, and where the probes land:
// tracepoint.SYSTEM:EVENT (every tracepoint_uses() entry), kprobes,
// nvidia.driver, nvidia.xid, rdma, clock.sync (health's evaluator), and
// probes.pidN for each rank (or one `probes` row when none is found).
#include <fmt/format.h>

#include <algorithm>

#include "check/checks.h"
#include "check/tracepoint_uses.h"
#include "core/strings.h"
#include "health/health_checks.h"

namespace slowburn {

namespace {

CheckRow row(std::string check, bool ok, std::string detail, std::string fix = "") {
  return check_row(std::move(check), ok, false, std::move(detail), std::move(fix));
}

// "a, b, c and 4 more"
std::string short_list(const std::vector<std::string>& items, size_t most = 5) {
  if (items.size() <= most) return join(items);
  std::vector<std::string> head(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(most));
  return fmt::format("{} and {} more", join(head), items.size() - most);
}

bool listed(const CheckSnapshot& s, const std::string& tracepoint) {
  auto it = s.tracepoints.find(tracepoint);
  return it != s.tracepoints.end() && it->second;
}

void tracepoint_rows(const CheckSnapshot& s, std::vector<CheckRow>& rows) {
  for (const TracepointUse& use : tracepoint_uses()) {
    std::string name = "tracepoint." + use.name();
    auto it = s.tracepoints.find(use.name());
    if (it == s.tracepoints.end()) {
      std::string why = s.tracefs.events ? "not looked for" : s.tracefs.events.error().message;
      rows.push_back(row(name, false, fmt::format("cannot tell: {}; used by {}", why, use.used_by), tracefs_fix(s)));
    } else if (it->second) {
      rows.push_back(row(name, true, fmt::format("present; used by {}", use.used_by)));
    } else {
      rows.push_back(row(name, false, fmt::format("absent: {}; without it, {}", use.missing, use.without), use.fix));
    }
  }
}

CheckRow kprobes_row(const CheckSnapshot& s) {
  if (!s.kprobes_missing) return row("kprobes", true, "available (the kprobe PMU or kprobe_events)");
  return row("kprobes", false,
             fmt::format("{}: slowburn gpuirq cannot time the NVIDIA driver's interrupt handler (kprobe/nvidia_isr); "
                         "the IRQ tracepoints still count interrupts. Nothing else uses kprobes",
                         *s.kprobes_missing),
             "a kernel with CONFIG_KPROBES=y and CONFIG_KPROBE_EVENTS=y");
}

constexpr const char* kNvidiaFix =
    "on a GPU node: load the driver (modprobe nvidia; nvidia-smi says why it does not load); nothing to do on a "
    "node without NVIDIA GPUs";

CheckRow nvidia_driver_row(const CheckSnapshot& s) {
  const NvidiaReading& n = s.nvidia;
  if (n.proc_driver || n.module)
    return row("nvidia.driver", true,
               n.version.empty() ? std::string("loaded (/sys/module/nvidia), no version file")
                                 : fmt::format("loaded: {}", n.version));
  return row(
      "nvidia.driver", false,
      fmt::format("no NVIDIA driver loaded (no {}, no {}): no GPU Xids to see, no GPU interrupts to time",
                  (s.sources.proc_root / "driver/nvidia").string(), (s.sources.sysfs_root / "module/nvidia").string()),
      kNvidiaFix);
}

CheckRow nvidia_xid_row(const CheckSnapshot& s) {
  bool driver = s.nvidia.proc_driver || s.nvidia.module;
  bool driver_tp = listed(s, "nvidia:nvidia_dev_xid");
  bool console = listed(s, "printk:console");
  if (driver && driver_tp)
    return row("nvidia.xid", true, "the driver's tracepoint nvidia:nvidia_dev_xid (driver 575+), attached as it fires");
  if (driver && console)
    return row("nvidia.xid", true,
               "the kernel log: NVRM Xid lines filtered in the kernel on printk:console (this driver has no Xid "
               "tracepoint: before 575)");
  std::string path = s.tracepoints.empty() ? "tracefs cannot be listed to look for its tracepoints"
                     : console             ? "printk:console is there for the kernel-log filter"
                               : "and printk:console is not listed, so the kernel-log filter has nothing to attach to";
  if (!driver)
    return row("nvidia.xid", false, fmt::format("no NVIDIA driver, so no Xid to see ({})", path), kNvidiaFix);
  return row("nvidia.xid", false,
             fmt::format("the driver is loaded but neither nvidia:nvidia_dev_xid nor printk:console can be used: Xids "
                         "are seen only by slowburn health reading /dev/kmsg"),
             s.tracefs.events ? "a kernel with printk tracing (CONFIG_PRINTK, CONFIG_TRACEPOINTS)" : tracefs_fix(s));
}

CheckRow rdma_row(const CheckSnapshot& s) {
  std::string dir = (s.sources.sysfs_root / "class/infiniband").string();
  if (!s.rdma_devices.empty())
    return row("rdma", true,
               fmt::format("{} RDMA device(s) in {}: {}", s.rdma_devices.size(), dir, short_list(s.rdma_devices)));
  return row("rdma", false,
             fmt::format("no RDMA device in {}: slowburn fabric, qp and health's rdma rows have nothing to read (the "
                         "verbs and NCCL IB probes still resolve in ranks that load the libraries)",
                         dir),
             "on an RDMA node: load the NIC's driver (modprobe mlx5_ib) and check ibv_devices; nothing to do on a "
             "node without RDMA");
}

CheckRow clock_row(const CheckSnapshot& s) {
  // The same evaluator and threshold as slowburn health's clock.sync.
  CheckRow clock = evaluate_clock(s.clock, HealthThresholds{});
  bool ok = clock.state == CheckState::ok;
  std::string fix = clock.state == CheckState::unavailable
                        ? "run slowburn check on the node itself"
                        : "start a time daemon: systemctl enable --now chrony (ptp4l and phc2sys on a PTP fabric)";
  return row("clock.sync", ok,
             fmt::format("{}{}", clock.detail,
                         ok ? "" : "; slowburn analyze merges nodes' recordings only as well as their clocks agree"),
             fix);
}

std::string probes_fix(int32_t pid) {
  return fmt::format(
      "slowburn catalog --pid {} says why each probe does not resolve; slowburn catalog lists the supported "
      "libraries and symbols",
      pid);
}

CheckRow rank_probes_row(const RankProbes& r, bool live) {
  std::string name = fmt::format("probes.pid{}", r.pid);
  if (!r.rank) {
    bool not_a_rank = r.rank.error().message.find("is not a rank") != std::string::npos;
    return row(name, false, r.rank.error().message,
               not_a_rank ? "slowburn traces processes whose environment names their rank (OMPI_COMM_WORLD_RANK, "
                            "PMIX_RANK, RANK, SLURM_PROCID): start them with mpirun, torchrun or srun"
                          : "check the pid (slowburn ranks lists the ranks found); other users' processes need root");
  }
  std::string who = rank_label(*r.rank);
  if (!r.probes)
    return row(name, false, fmt::format("{}: {}", who, r.probes.error().message),
               live ? "run as root, or grant CAP_SYS_PTRACE" : "capture /proc/PID/maps with the tree");
  std::vector<std::string> resolved, synchronizing, missed, libraries;
  for (const ProbeReading& p : *r.probes) {
    if (p.resolved) {
      resolved.push_back(p.probe);
      if (p.synchronizing) synchronizing.push_back(p.probe);
      std::string library = p.library.substr(p.library.rfind('/') + 1);
      if (std::find(libraries.begin(), libraries.end(), library) == libraries.end()) libraries.push_back(library);
    } else if (p.library_loaded) {
      missed.push_back(fmt::format("{} ({})", p.probe, p.reason));
    }
  }
  std::string loads =
      r.libraries.empty() ? std::string("loads no communication library") : "loads " + short_list(r.libraries);
  if (resolved.empty())
    return row(name, false,
               fmt::format("{} {}: no probe resolves, nothing would be traced{}", who, loads,
                           missed.empty() ? "" : "; in libraries it loads: " + short_list(missed, 3)),
               probes_fix(r.pid));
  std::string detail =
      fmt::format("{} {}: {} probe(s) resolve in {} ({} synchronizing collective(s){}{})", who, loads, resolved.size(),
                  join(libraries), synchronizing.size(), synchronizing.empty() ? "" : ": ", short_list(synchronizing));
  if (!missed.empty()) detail += "; missed in libraries it loads: " + short_list(missed, 3);
  if (synchronizing.empty())
    return row(name, false,
               detail + "; without a synchronizing collective no straggler can be named (per-call latency only)",
               probes_fix(r.pid));
  return row(name, true, detail);
}

void probes_rows(const CheckSnapshot& s, std::vector<CheckRow>& rows) {
  if (!s.ranks) {
    rows.push_back(row("probes", false, s.ranks.error().message,
                       "start the job, then run slowburn check again (or slowburn check --pid PID)"));
    return;
  }
  for (const RankProbes& r : *s.ranks) rows.push_back(rank_probes_row(r, s.sources.live()));
}

}  // namespace

void evaluate_source_checks(const CheckSnapshot& s, std::vector<CheckRow>& rows) {
  tracepoint_rows(s, rows);
  rows.push_back(kprobes_row(s));
  rows.push_back(nvidia_driver_row(s));
  rows.push_back(nvidia_xid_row(s));
  rows.push_back(rdma_row(s));
  rows.push_back(clock_row(s));
  probes_rows(s, rows);
}

}  // namespace slowburn
