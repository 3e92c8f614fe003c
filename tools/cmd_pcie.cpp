// slowburn pcie: the PCIe link table (current vs max vs expected width and
// speed, with each device's role and the ranks behind it), then a live
// downtrain watch. Replaces `lspci -vv | grep -E 'LnkCap|LnkSta'`.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/options.h"
#include "core/format.h"
#include "loader/privileges.h"
#include "tools/hw_tool.h"

namespace slowburn::cli {

namespace {

std::string ranks_text(const std::vector<int>& ranks) { return ranks.empty() ? "-" : format_rank_list(ranks); }

void print_table(const std::vector<LinkRow>& rows, bool json, const std::string& host) {
  if (!json)
    std::cout << fmt::format("{:<13} {:<12} {:<28} {:<12} {:<12} {:<12} {:<12} {}\n", "DEVICE", "ROLE", "NAME",
                             "CURRENT", "MAX", "EXPECTED", "STATUS", "RANKS");
  for (const LinkRow& r : rows) {
    const LinkReading& l = r.reading;
    if (json) {
      auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
      std::cout << nlohmann::json{{"kind", "status"},
                                  {"event", "link"},
                                  {"host", host},
                                  {"device", r.device->pci.bdf},
                                  {"role", device_role_name(r.device->role)},
                                  {"label", r.device->label},
                                  {"current_width", opt(l.current_width)},
                                  {"current_speed_gts", opt(l.current_speed_gts)},
                                  {"max_width", opt(l.max_width)},
                                  {"max_speed_gts", opt(l.max_speed_gts)},
                                  {"expected_width", opt(r.expected.width)},
                                  {"expected_speed_gts", opt(r.expected.speed_gts)},
                                  {"status", link_status_name(r.status)},
                                  {"ranks", r.ranks},
                                  {"notes", r.device->pci.notes}}
                       .dump()
                << '\n';
      continue;
    }
    std::cout << fmt::format(
        "{:<13} {:<12} {:<28} {:<12} {:<12} {:<12} {:<12} {}\n", r.device->pci.bdf, device_role_name(r.device->role),
        r.device->label.substr(0, 28), format_link(l.current_width, l.current_speed_gts),
        format_link(l.max_width, l.max_speed_gts), format_link(r.expected.width, r.expected.speed_gts),
        link_status_name(r.status), ranks_text(r.ranks));
    for (const std::string& note : r.device->pci.notes) std::cout << "    note: " << note << '\n';
  }
}

}  // namespace

Command add_pcie_command(CLI::App& app) {
  auto args = std::make_shared<HwToolArgs>();
  auto watch = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "pcie",
      "PCIe link table: every device with link attributes, its role (gpu, nic, switch or root port), the ranks "
      "behind it, current vs max vs expected width and speed. --watch then reports link.downtrained, "
      "link.recovered and link.down as they happen; a degraded switch or root port names every rank below it.\n\n"
      "Examples:\n  slowburn pcie\n  slowburn pcie --expect '10de:*=x16@32' --watch\n"
      "  slowburn pcie --sysfs-root /captured/sys --procfs-root /captured/proc --json\n\n"
      "Exit status: 0 the table or the watch ended, 1 an error, 2 nothing to watch (no device with link "
      "attributes).");
  add_hw_options(sub, *args, "event, status");
  sub->add_option("--expect", args->expect,
                  "Expected link, SELECTOR=xWIDTH@SPEED; SELECTOR a BDF, vendor:device or vendor:* (repeatable; "
                  "default: max_link_*, else the first reading)");
  sub->add_flag("--watch", *watch, "Keep polling and report link changes (with -d: for that long)");
  return {sub, [args, watch] {
            if (auto ok = check_sysfs_tree(args->sysfs_root); !ok) return fail(ok.error());
            auto topology = read_topology(*args);
            HwMonitorOptions options;
            options.xid = false;
            options.aer = false;
            bool live = args->live();
            if (*watch && live) {
              if (auto ok = check_tracing_privileges(); !ok) return fail(ok.error());
            }
            options.kernel_sources = *watch;  // the table alone needs sysfs only (and no root)
            auto monitor = start_monitor(*args, options, topology);
            if (!monitor) return fail(monitor.error());
            auto sink = make_stdout_sink(args->json);
            auto initial = (*monitor)->poll(0, 0);  // the first reading: degraded links show up here
            if (!initial) return fail(initial.error());
            auto rows = (*monitor)->link_table();
            char host[256] = {};
            gethostname(host, sizeof(host) - 1);
            if (rows.empty()) {
              sink->note("no PCIe device with link attributes under " + args->sysfs_root +
                         "/bus/pci/devices (virtual machine, or no PCIe links)");
            } else {
              print_table(rows, args->json, host);
            }
            for (const std::string& note : topology->notes()) sink->note(note);
            for (const DeviceEvent& e : *initial) sink->device_event(e);
            if (rows.empty()) return kExitNothingToWatch;  // said in the note above
            if (!*watch) return 0;
            for (const ProbeStatus& s : (*monitor)->statuses()) sink->probe_status(s);
            sink->probes_done(rows.size(), 0);
            auto events = run_monitor(**monitor, *args, *sink);
            if (!events) return fail(events.error());
            return 0;
          }};
}

}  // namespace slowburn::cli
