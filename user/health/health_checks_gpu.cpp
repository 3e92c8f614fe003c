// gpu.xid, gpu.xid_ecc (the kernel log's Xid lines), pcie.link, pcie.aer.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/strings.h"
#include "health/health_checks_internal.h"
#include "nvidia/xid.h"
#include "nvidia/xid_catalog.h"
#include "sysfs/pci_devices.h"

namespace slowburn::health_detail {

namespace {

// Xids that say data was not corrected (or the GPU cannot correct it any more).
bool xid_uncorrected(int code) {
  static const std::set<int> kUncorrected = {48, 64, 95, 140, 171, 172};
  return kUncorrected.contains(code);
}

bool severity_needs_reset(const std::string& severity) { return severity == "reset-gpu" || severity == "reboot-node"; }

struct GpuXids {
  std::map<int, uint64_t> by_code;
  std::map<int, std::string> message;  // the latest message per code (Xid 154 carries its action there)
  std::map<std::string, uint64_t> by_class;
  const KernelLogLine* last = nullptr;
  const KernelLogLine* last_sdc = nullptr;
  bool nvswitch = false;
};

std::string describe_codes(const GpuXids& g, bool sdc_only) {
  std::vector<std::string> parts;
  for (const auto& [code, n] : g.by_code) {
    if (sdc_only && !xid_sdc_relevant(code, g.nvswitch)) continue;
    XidInfo info = g.nvswitch ? sxid_info(code) : xid_info(code, g.message.at(code));
    parts.push_back(fmt::format("{} {} x{} ({}: {}; {})", g.nvswitch ? "SXid" : "Xid", code, n,
                                xid_family(code, g.nvswitch), info.meaning, info.action));
  }
  return join(parts, ", ");
}

}  // namespace

void evaluate_gpu_checks(Evaluation& e) {
  const auto& log = e.after.kernel_log;
  if (!log) {
    e.unavailable("gpu.xid", "", e.node_ranks(), log.error().message);
    e.unavailable("gpu.xid_ecc", "", e.node_ranks(), log.error().message);
    return;
  }
  std::map<std::string, GpuXids> gpus;  // by BDF
  uint64_t unparsed = 0;
  for (const KernelLogLine& line : *log) {
    if (classify_kernel_log_message(line.message) != KernelLogClass::xid) continue;
    auto xid = parse_xid_line(line.message);
    if (!xid) {
      ++unparsed;
      continue;
    }
    GpuXids& g = gpus[normalize_bdf(xid->pci)];
    g.nvswitch = xid->nvswitch;
    g.by_code[xid->code] += 1;
    g.message[xid->code] = xid->message;
    g.by_class[std::string(xid_family(xid->code, xid->nvswitch))] += 1;
    g.last = &line;
    if (xid_sdc_relevant(xid->code, xid->nvswitch)) g.last_sdc = &line;
  }
  std::string unparsed_note = unparsed ? fmt::format("; {} Xid line(s) too damaged to parse", unparsed) : std::string();
  if (gpus.empty()) {
    std::string detail = fmt::format("no Xid in the kernel log ({} lines read){}", log->size(), unparsed_note);
    e.add("gpu.xid", unparsed ? CheckState::warn : CheckState::ok, "", 0, 0, e.node_ranks(), detail);
    e.add("gpu.xid_ecc", CheckState::ok, "", 0, 0, e.node_ranks(), "no ECC or row-remapping Xid in the kernel log");
    return;
  }
  bool any_sdc = false;
  for (const auto& [bdf, g] : gpus) {
    uint64_t total = 0, sdc = 0;
    bool reset = false, uncorrected = false;
    for (const auto& [code, n] : g.by_code) {
      total += n;
      XidInfo info = g.nvswitch ? sxid_info(code) : xid_info(code, g.message.at(code));
      reset = reset || severity_needs_reset(info.severity);
      if (xid_sdc_relevant(code, g.nvswitch)) {
        sdc += n;
        uncorrected = uncorrected || xid_uncorrected(code);
      }
    }
    std::vector<std::string> classes;
    for (const auto& [cls, n] : g.by_class) classes.push_back(fmt::format("{} {}", cls, n));
    std::vector<int> ranks = e.device_ranks(bdf);
    e.add("gpu.xid", reset ? CheckState::fail : CheckState::warn, bdf, total, 0, ranks,
          fmt::format("{} Xid line(s) since boot, by class: {}: {}; last: {}{}", total, join(classes, ", "),
                      describe_codes(g, false), format_kernel_log_line(*g.last), unparsed_note));
    if (!sdc) continue;
    any_sdc = true;
    e.add("gpu.xid_ecc", uncorrected ? CheckState::fail : CheckState::warn, bdf, sdc, 0, ranks,
          fmt::format("{} ECC/row-remapping Xid(s) since boot: {}; last: {}", sdc, describe_codes(g, true),
                      format_kernel_log_line(*g.last_sdc)));
  }
  if (!any_sdc)
    e.add("gpu.xid_ecc", CheckState::ok, "", 0, 0, e.node_ranks(), "no ECC or row-remapping Xid in the kernel log");
}

namespace {

void evaluate_links(Evaluation& e) {
  const Topology* topo = e.context.topology;
  LinkMonitor monitor(e.context.link_rules);
  size_t rows = 0;
  for (const auto& [bdf, reading] : e.after.links) {
    const TopologyDevice* dev = topo ? topo->find(bdf) : nullptr;
    if (!dev || (dev->role != DeviceRole::gpu && dev->role != DeviceRole::nic && dev->role != DeviceRole::nvswitch))
      continue;  // ports: their links are reported by the endpoint below them
    monitor.observe(bdf, dev->pci.vendor, dev->pci.device, reading, topo->link_partner_capability(bdf));
    LinkExpectation expected = monitor.expectation(bdf);
    auto [status, reason] = LinkMonitor::evaluate(reading, expected);
    std::string who = fmt::format("{} ({})", dev->label.empty() ? bdf : dev->label, device_role_name(dev->role));
    ++rows;
    if (status == LinkStatus::unknown) {
      e.unavailable("pcie.link", bdf, e.device_ranks(bdf), who + ": " + reason);
      continue;
    }
    // Down: a GPU or NVSwitch off its link is lost to the node; a NIC only to the ranks that use it.
    std::vector<int> ranks = e.device_ranks(bdf);
    bool down_matters = dev->role != DeviceRole::nic || !ranks.empty();
    CheckState state = status == LinkStatus::ok            ? CheckState::ok
                       : status == LinkStatus::downtrained ? CheckState::warn
                       : down_matters                      ? CheckState::fail
                                                           : CheckState::warn;
    std::string detail = status == LinkStatus::ok ? fmt::format("{}: trained at what it and its partner can do", who)
                                                  : fmt::format("{}: {}", who, reason);
    if (status == LinkStatus::down && dev->role == DeviceRole::nic)
      detail += ranks.empty() ? " (no rank uses it)" : " (ranks use it)";
    e.add("pcie.link", state, bdf, format_link(reading.current_width, reading.current_speed_gts),
          format_link(expected.width, expected.speed_gts), ranks, detail);
  }
  if (rows == 0)
    e.unavailable("pcie.link", "", e.node_ranks(),
                  fmt::format("no GPU, NIC or NVSwitch with PCIe link attributes (current_link_speed/width) under "
                              "{}/bus/pci/devices (a virtual machine, or no PCIe links)",
                              e.after.sources.sysfs_root.string()));
}

uint64_t total_of(const AerCounters& c) {
  if (c.total) return *c.total;
  uint64_t sum = 0;
  for (const auto& [name, n] : c.by_name) sum += n;
  return sum;
}

void evaluate_aer(Evaluation& e) {
  if (e.after.aer.empty()) {
    e.unavailable("pcie.aer", "", e.node_ranks(),
                  fmt::format("no aer_dev_* counter files under {}/bus/pci/devices (no AER-capable device, or a "
                              "kernel without CONFIG_PCIEAER)",
                              e.after.sources.sysfs_root.string()));
    return;
  }
  for (const auto& [bdf, now] : e.after.aer) {
    AerCounterMonitor monitor;
    auto then = e.before.aer.find(bdf);
    (void)monitor.observe(bdf, then == e.before.aer.end() ? now : then->second);
    std::vector<AerEvent> rises = e.has_trend() ? monitor.observe(bdf, now) : std::vector<AerEvent>{};
    uint64_t total = 0, uncorrectable = 0;
    std::vector<std::string> since_boot, malformed;
    for (const auto& [severity, c] : now) {
      uint64_t n = total_of(c);
      total += n;
      if (severity != AerSeverity::correctable) uncorrectable += n;
      std::vector<std::string> names;
      for (const auto& [name, v] : c.by_name)
        if (v) names.push_back(fmt::format("{} {}", name, v));
      since_boot.push_back(
          fmt::format("{} {}{}", aer_severity_name(severity), n, names.empty() ? "" : " (" + join(names, ", ") + ")"));
      for (const std::string& line : c.malformed_lines) malformed.push_back("'" + line + "'");
    }
    // A rise is counted in the totals: the same rule judges it.
    std::vector<std::string> rose;
    for (const AerEvent& r : rises)
      rose.push_back(fmt::format("+{} {} {}", r.count, aer_severity_name(r.severity), join(r.bits, ",")));
    CheckState state = error_count_state(uncorrectable, total - uncorrectable);
    std::string detail = "since boot: " + join(since_boot, ", ");
    detail += rose.empty() ? "; " + e.quiet("rise") : fmt::format("; {} {}", join(rose, ", "), e.over_interval());
    if (!malformed.empty()) detail += "; unreadable lines: " + join(malformed, ", ");
    e.add("pcie.aer", state, bdf, total, 0, e.device_ranks(bdf), detail);
  }
}

}  // namespace

void evaluate_pcie_checks(Evaluation& e) {
  evaluate_links(e);
  evaluate_aer(e);
}

}  // namespace slowburn::health_detail
