// slowburn aer: PCIe AER errors with their status bits decoded, from the
// ras:aer_event tracepoint (it fires before the kernel's AER log rate limit)
// and the sysfs aer_dev_* counters (where the tracepoint is absent).
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/options.h"
#include "core/strings.h"
#include "loader/privileges.h"
#include "tools/hw_tool.h"

namespace slowburn::cli {

namespace {
// The counters as they stand: what `lspci -vv` would show, per device;
// with --json, a `summary` line closes the table (so a machine without AER
// counters still answers).
// Returns how many devices have AER counters.
size_t print_counter_table(const HwToolArgs& args, const Topology& topology, std::ostream& out) {
  size_t devices = 0;
  for (const TopologyDevice& dev : topology.devices()) {
    auto counters = read_aer_counters(args.sysfs_root, dev.pci.bdf);
    if (counters.empty()) continue;
    ++devices;
    if (args.json) {
      nlohmann::json by_severity = nlohmann::json::object();
      std::vector<std::string> malformed;
      for (const auto& [severity, c] : counters) {
        by_severity[std::string(aer_severity_name(severity))] = c.by_name;
        malformed.insert(malformed.end(), c.malformed_lines.begin(), c.malformed_lines.end());
      }
      out << nlohmann::json{{"kind", "status"},        {"event", "aer_counters"},
                            {"device", dev.pci.bdf},   {"role", device_role_name(dev.role)},
                            {"label", dev.label},      {"ranks", topology.ranks_behind(dev.pci.bdf)},
                            {"counters", by_severity}, {"malformed_lines", malformed}}
                 .dump()
          << '\n';
      continue;
    }
    std::vector<std::string> nonzero;
    for (const auto& [severity, c] : counters) {
      for (const auto& [name, value] : c.by_name)
        if (value) nonzero.push_back(fmt::format("{} {}={}", aer_severity_name(severity), name, value));
      for (const std::string& bad : c.malformed_lines) nonzero.push_back(fmt::format("unreadable line '{}'", bad));
    }
    out << fmt::format("{} {:<12} {:<28} {}\n", dev.pci.bdf, device_role_name(dev.role), dev.label,
                       nonzero.empty() ? "no errors counted" : join(nonzero, ", "));
  }
  std::string none = fmt::format("No device has AER counters in {}/bus/pci/devices.", args.sysfs_root);
  if (args.json) {
    nlohmann::json summary{{"kind", "summary"}, {"event", "aer_counters"}, {"devices", devices}};
    if (!devices) summary["note"] = none;
    out << summary.dump() << '\n';
  } else if (!devices) {
    out << none << '\n';
  }
  return devices;
}
}  // namespace

Command add_aer_command(CLI::App& app) {
  auto args = std::make_shared<HwToolArgs>();
  auto once = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "aer",
      "Watch PCIe AER errors (correctable, non-fatal, fatal) with decoded status bits, the device, its role and the "
      "ranks behind it. Starts with the counters as they stand.\n\nExamples:\n  slowburn aer\n"
      "  slowburn aer --once                     # just the counter table\n"
      "  slowburn aer --sysfs-root /captured/sys --once\n\n"
      "Exit status: 0 the table or the watch ended, 1 an error, 2 nothing to watch (no device with AER counters, "
      "no AER source).");
  add_hw_options(sub, *args, "event, status, summary");
  sub->add_flag("--once", *once, "Print the counter table and exit");
  return {sub, [args, once] {
            if (auto ok = check_sysfs_tree(args->sysfs_root); !ok) return fail(ok.error());
            bool live = args->live();
            // Before any output: a table followed by "needs privileges" reads as a result.
            if (live && !*once) {
              if (auto ok = check_tracing_privileges(); !ok) return fail(ok.error());
            }
            auto topology = read_topology(*args);
            auto sink = make_stdout_sink(args->json);
            size_t devices = print_counter_table(*args, *topology, std::cout);
            if (*once) return devices ? 0 : kExitNothingToWatch;
            HwMonitorOptions options;
            options.xid = false;
            options.link = false;
            auto monitor = start_monitor(*args, options, topology);
            if (!monitor) return fail(monitor.error());
            size_t attached = 0;
            for (const ProbeStatus& s : (*monitor)->statuses()) {
              sink->probe_status(s);
              attached += s.state == ProbeState::attached;
            }
            sink->probes_done(attached, 0);
            if (attached == 0)
              return fail(
                  nothing_to_watch("nothing to watch: no AER source: neither the ras:aer_event tracepoint nor sysfs "
                                   "counters are available on this machine (see above)"));
            auto events = run_monitor(**monitor, *args, *sink);
            if (!events) return fail(events.error());
            HwCounters c = (*monitor)->counters();
            sink->note(fmt::format("{} AER events; {} records undecodable, {} lost", *events, c.unparsed, c.tp_drops));
            return 0;
          }};
}

}  // namespace slowburn::cli
