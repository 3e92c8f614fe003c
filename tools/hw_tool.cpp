#include "tools/hw_tool.h"

#include <unistd.h>

#include <filesystem>

#include "cli/command.h"
#include "cli/options.h"
#include "procfs/ranks.h"
#include "trace/trace_session.h"

namespace slowburn::cli {

void add_hw_options(CLI::App* sub, HwToolArgs& args, const std::string& kinds) {
  add_json(sub, args.json, kinds);
  add_duration(sub, args.duration_s, "watch");
  add_interval(sub, args.interval_s, "sysfs polls", "", 0.05);
  sub->add_option("--sysfs-root", args.sysfs_root, "sysfs to read (a captured tree; kernel sources are off then)")
      ->capture_default_str()
      ->check(root_directory());
  sub->add_option("--procfs-root", args.proc_root, "procfs to read ranks and /proc/driver/nvidia from")
      ->capture_default_str()
      ->check(root_directory());
}

std::shared_ptr<Topology> read_topology(const HwToolArgs& args) {
  auto topology = std::make_shared<Topology>(Topology::read(args.sysfs_root, args.proc_root));
  topology->assign_ranks(discover_ranks(args.proc_root, getpid()));
  return topology;
}

Result<std::unique_ptr<HwMonitor>> start_monitor(const HwToolArgs& args, HwMonitorOptions options,
                                                 std::shared_ptr<Topology> topology) {
  options.sysfs_root = args.sysfs_root;
  options.proc_root = args.proc_root;
  options.poll_interval_s = args.interval_s;
  // Live kernel sources only for this machine's own trees (and when the caller wants them).
  options.kernel_sources = options.kernel_sources && args.live();
  for (const std::string& rule : args.expect) {
    auto parsed = parse_expectation_rule(rule);
    if (!parsed) return parsed.error();
    options.expectations.push_back(*parsed);
  }
  return HwMonitor::start(options, std::move(topology));
}

Result<uint64_t> run_monitor(HwMonitor& monitor, const HwToolArgs& args, Sink& sink) {
  const auto& stop = install_stop_handlers();
  uint64_t start = monotonic_ns();
  uint64_t end = args.duration_s > 0 ? start + static_cast<uint64_t>(args.duration_s * 1e9) : 0;
  uint64_t events = 0;
  for (;;) {
    uint64_t now = monotonic_ns();
    auto batch = monitor.poll(stop.load() || (end && now >= end) ? 0 : 100, now);
    if (!batch) return batch.error();
    for (const DeviceEvent& e : *batch) sink.device_event(e);
    events += batch->size();
    if (stop.load() || (end && monotonic_ns() >= end)) break;
  }
  return events;
}

}  // namespace slowburn::cli
