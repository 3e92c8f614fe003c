// slowburn fabric: RDMA NIC counter rates per NIC, port and priority (PFC
// pause, ECN/CNP, retransmissions, link errors) and the events they raise,
// every interval. Replaces watching `ethtool -S | grep pause` and
// `cat /sys/class/infiniband/*/ports/*/hw_counters/*` by hand.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/command.h"
#include "core/format.h"
#include "tools/hw_tool.h"
#include "trace/trace_session.h"

namespace slowburn::cli {

namespace {

struct FabricArgs {
  HwToolArgs hw;
  std::vector<std::string> nics, netdevs;
  std::string ethtool_dir;
  FabricThresholds thresholds;
};

// "p3 30%/0%": the priorities that paused this interval, rx/tx share.
std::string pause_text(const NicRates& r) {
  std::vector<std::string> parts;
  for (const auto& [prio, p] : r.pause)
    if (p.rx_share > 0 || p.tx_share > 0 || p.rx_frames_per_s > 0 || p.tx_frames_per_s > 0)
      parts.push_back(
          fmt::format("{}{} {:.0f}%/{:.0f}%", prio == "global" ? "" : "p", prio, p.rx_share * 100, p.tx_share * 100));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, " "));
}

void print_rates(const std::vector<NicRates>& rates, bool json, const std::string& host) {
  if (rates.empty()) return;
  if (json) {
    for (const NicRates& r : rates) {
      nlohmann::json pause = nlohmann::json::object();
      for (const auto& [prio, p] : r.pause)
        pause[prio] = {{"rx_share", p.rx_share},
                       {"tx_share", p.tx_share},
                       {"rx_frames_per_s", p.rx_frames_per_s},
                       {"tx_frames_per_s", p.tx_frames_per_s}};
      auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
      std::cout << nlohmann::json{{"kind", "rates"},
                                  {"host", host},
                                  {"nic", r.nic},
                                  {"port", r.port},
                                  {"netdev", r.netdev.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.netdev)},
                                  {"device", r.device.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.device)},
                                  {"interval_s", r.interval_s},
                                  {"tx_bytes_per_s", opt(r.tx_bytes_per_s)},
                                  {"rx_bytes_per_s", opt(r.rx_bytes_per_s)},
                                  {"pause", pause},
                                  {"cnp_sent_per_s", r.cnp_sent_per_s},
                                  {"cnp_handled_per_s", r.cnp_handled_per_s},
                                  {"ecn_marked_per_s", r.ecn_marked_per_s},
                                  {"retrans_per_s", r.retrans_per_s},
                                  {"link_errors", r.link_errors},
                                  {"link_downs", r.link_downs}}
                       .dump()
                << '\n';
    }
    std::cout.flush();
    return;
  }
  // LINK-ERR: the link's error counters summed over the interval (symbol, receive, recovery,
  // integrity); DOWNS: link_downed.
  std::cout << fmt::format("{:<10} {:>4} {:<9} {:>10} {:>10} {:<22} {:>13} {:>9} {:>8} {:>5}\n", "NIC", "PORT",
                           "NETDEV", "TX", "RX", "PAUSE rx/tx", "CNP sent/hdl", "RETRANS/s", "LINK-ERR", "DOWNS");
  for (const NicRates& r : rates) {
    auto rate = [](const std::optional<double>& v) { return v ? format_bytes_per_s(*v) : std::string("-"); };
    std::cout << fmt::format("{:<10} {:>4} {:<9} {:>10} {:>10} {:<22} {:>13} {:>9.1f} {:>8} {:>5}\n", r.nic, r.port,
                             r.netdev.empty() ? "-" : r.netdev, rate(r.tx_bytes_per_s), rate(r.rx_bytes_per_s),
                             pause_text(r), fmt::format("{:.0f}/{:.0f}", r.cnp_sent_per_s, r.cnp_handled_per_s),
                             r.retrans_per_s, r.link_errors, r.link_downs);
  }
  std::cout.flush();
}

}  // namespace

Command add_fabric_command(CLI::App& app) {
  auto args = std::make_shared<FabricArgs>();
  CLI::App* sub = app.add_subcommand(
      "fabric",
      "RDMA fabric counters per NIC, port and priority, every interval: throughput, PFC pause (share of the "
      "interval paused, per priority and direction), CNPs sent and handled, retransmissions, link errors and flaps; "
      "with events pfc.pause_storm, ecn.cnp_surge, rdma.retrans, link.flap, link.errors, nic.gone naming the ranks "
      "behind the NIC. Reads /sys/class/infiniband/*/ports/*/{counters,hw_counters} and the NICs' ethtool "
      "statistics (SIOCETHTOOL). Counter wraps, resets and saturated counters are accounted for.\n\n"
      "Examples:\n  slowburn fabric\n  slowburn fabric --nic mlx5_0 -i 5 --json\n"
      "  slowburn fabric --netdev eth0 --pause-share 0.05\n"
      "  slowburn fabric --sysfs-root /captured/sys --ethtool-dir /captured/ethtool -d 10\n\n"
      "Exit status: 0 the watch ended, 1 an error, 2 nothing to watch (no RDMA device or netdev to read).");
  add_hw_options(sub, args->hw, "rates, event, status");
  sub->add_option("--nic", args->nics, "Only this RDMA device or its netdev (repeatable)");
  sub->add_option("--netdev", args->netdevs, "Also watch this interface's ethtool statistics (repeatable)");
  sub->add_option("--ethtool-dir", args->ethtool_dir,
                  "Replay: read `ethtool -S IFACE` captures from DIR/IFACE instead of asking the NIC");
  sub->add_option("--pause-share", args->thresholds.pause_share, "pfc.pause_storm: share of the interval paused")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  sub->add_option("--cnp-rate", args->thresholds.cnp_per_s, "ecn.cnp_surge: CNPs per second sent or handled")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--retrans-rate", args->thresholds.retrans_per_s, "rdma.retrans: retransmissions per second")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--link-errors", args->thresholds.link_errors, "link.errors: physical errors per interval")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return {sub, [args] {
            HwMonitorOptions options;
            options.xid = false;
            options.aer = false;
            options.link = false;
            options.fabric = true;
            options.fabric_thresholds = args->thresholds;
            options.fabric_nics = args->nics;
            options.fabric_netdevs = args->netdevs;
            options.ethtool_dir = args->ethtool_dir;
            // No BPF here: sysfs and the ethtool ioctl need no special privilege.
            options.kernel_sources = false;
            auto monitor = start_monitor(args->hw, options, read_topology(args->hw));
            if (!monitor) return fail(monitor.error());
            auto sink = make_stdout_sink(args->hw.json);
            for (const ProbeStatus& s : (*monitor)->statuses()) sink->probe_status(s);
            bool live = std::any_of((*monitor)->statuses().begin(), (*monitor)->statuses().end(),
                                    [](const ProbeStatus& s) { return s.state == ProbeState::attached; });
            if (!live)
              return fail(nothing_to_watch("nothing to watch: {}", (*monitor)->statuses().empty()
                                                                       ? std::string("no fabric source")
                                                                       : (*monitor)->statuses().front().detail));
            sink->probes_done(0, 0);
            if (!args->hw.json)
              std::cout << fmt::format("Reading NIC counters every {:g} s{}... Hit Ctrl-C to end.\n",
                                       args->hw.interval_s,
                                       args->hw.duration_s > 0 ? fmt::format(" for {:g} s", args->hw.duration_s) : "");
            char host[256] = {};
            gethostname(host, sizeof(host) - 1);
            const auto& stop = install_stop_handlers();
            uint64_t start = monotonic_ns();
            uint64_t end = args->hw.duration_s > 0 ? start + static_cast<uint64_t>(args->hw.duration_s * 1e9) : 0;
            for (const std::string& note : (*monitor)->take_notes()) sink->note(note);
            uint64_t next = start + static_cast<uint64_t>(args->hw.interval_s * 1e9);
            for (;;) {
              // Sleep in short steps so Ctrl-C is prompt, then read every counter at once.
              uint64_t now = monotonic_ns();
              while (!stop.load() && now < next && !(end && now >= end)) {
                std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<uint64_t>(next - now, 100'000'000)));
                now = monotonic_ns();
              }
              if (now < next) break;  // stopped, or the duration ended between two readings
              auto batch = (*monitor)->poll(0, next);
              if (!batch) return fail(batch.error());
              next += static_cast<uint64_t>(args->hw.interval_s * 1e9);
              for (const DeviceEvent& e : *batch) sink->device_event(e);
              for (const std::string& note : (*monitor)->take_notes()) sink->note(note);
              print_rates((*monitor)->fabric_rates(), args->hw.json, host);
              if (stop.load() || (end && monotonic_ns() >= end)) break;
            }
            return 0;
          }};
}

}  // namespace slowburn::cli
