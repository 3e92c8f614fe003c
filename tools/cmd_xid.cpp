// slowburn xid: NVIDIA Xid / NVSwitch SXid errors as they happen, decoded,
// with the GPU, its ranks, and what to do. Replaces `dmesg -w | grep Xid`:
// the filtering happens in the kernel (printk:console), or the driver's
// nvidia:nvidia_dev_xid tracepoint is used where it exists (575+).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "loader/privileges.h"
#include "tools/hw_tool.h"

namespace slowburn::cli {

Command add_xid_command(CLI::App& app) {
  auto args = std::make_shared<HwToolArgs>();
  CLI::App* sub = app.add_subcommand(
      "xid",
      "Watch NVIDIA Xid and NVSwitch SXid errors: code, GPU, process, meaning, severity, action and the ranks "
      "behind the GPU. Replaces `dmesg -w | grep Xid`; other kernel messages are dropped in the kernel.\n\n"
      "Examples:\n  slowburn xid\n  slowburn xid -d 600 --json | jq 'select(.severity==\"reset-gpu\")'\n\n"
      "Exit status: 0 the watch ended, 1 an error, 2 nothing to watch (no NVIDIA driver loaded and no Xid seen).");
  add_hw_options(sub, *args, "event, status");
  return {sub, [args] {
            if (auto ok = check_tracing_privileges(); !ok) return fail(ok.error());
            auto sink = make_stdout_sink(args->json);
            HwMonitorOptions options;
            options.aer = false;
            options.link = false;
            auto monitor = start_monitor(*args, options, read_topology(*args));
            if (!monitor) return fail(monitor.error());
            for (const ProbeStatus& s : (*monitor)->statuses()) sink->probe_status(s);
            bool live = std::any_of((*monitor)->statuses().begin(), (*monitor)->statuses().end(),
                                    [](const ProbeStatus& s) { return s.state == ProbeState::attached; });
            sink->probes_done(live ? 1 : 0, 0);
            if (!live) return fail(make_error("no Xid source could be attached (see above)"));
            // Xid lines come from the NVIDIA driver: without it loaded, "0 events" is not an all-clear.
            std::error_code ec;
            bool driver = std::filesystem::exists(std::filesystem::path(args->proc_root) / "driver/nvidia", ec);
            if (!driver)
              sink->note(
                  fmt::format("no NVIDIA driver is loaded ({}/driver/nvidia is absent): no Xid can come; "
                              "watching the kernel log anyway",
                              args->proc_root));
            auto events = run_monitor(**monitor, *args, *sink);
            if (!events) return fail(events.error());
            HwCounters c = (*monitor)->counters();
            sink->note(
                fmt::format("{} Xid/SXid events; {} kernel log lines seen, {} passed the in-kernel filter, {} "
                            "could not be parsed, {} lost (ring buffer full)",
                            *events, c.kmsg_lines_seen, c.kmsg_lines_matched, c.unparsed, c.kmsg_drops + c.tp_drops));
            // Without a driver a quiet watch answered nothing: the exit status says so (docs/cli.md).
            return driver || *events > 0 ? 0 : kExitNothingToWatch;
          }};
}

}  // namespace slowburn::cli
