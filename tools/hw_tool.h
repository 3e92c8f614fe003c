// What the hardware tools (xid, aer, pcie) share: the options every one
// takes, building the topology, and running a HwMonitor into a sink until
// the duration ends or Ctrl-C.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "sinks/sink.h"
#include "sources/hw_monitor.h"

namespace slowburn::cli {

struct HwToolArgs {
  bool json = false;
  double duration_s = 0;  // 0: until Ctrl-C
  double interval_s = 1.0;
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::vector<std::string> expect;  // pcie: SELECTOR=xW@S rules

  // This machine's own trees (not a captured copy): kernel sources can run.
  bool live() const { return sysfs_root == "/sys" && proc_root == "/proc"; }
};

void add_hw_options(CLI::App* sub, HwToolArgs& args, const std::string& kinds);

// The topology with the node's ranks mapped onto it.
std::shared_ptr<Topology> read_topology(const HwToolArgs& args);

// Starts the monitor for the chosen sources; live kernel sources only when
// options.kernel_sources is set and the trees are the real /sys and /proc.
Result<std::unique_ptr<HwMonitor>> start_monitor(const HwToolArgs& args, HwMonitorOptions options,
                                                 std::shared_ptr<Topology> topology);

// Streams events into the sink until the duration ends or a stop signal.
// Returns the number of events.
Result<uint64_t> run_monitor(HwMonitor& monitor, const HwToolArgs& args, Sink& sink);

}  // namespace slowburn::cli
