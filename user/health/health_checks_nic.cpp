// nic.link, nic.errors, nic.pfc (netdevs in class/net), rdma.port and
// rdma.errors (ports in class/infiniband, through the fabric monitor).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/strings.h"
#include "health/health_checks_internal.h"

namespace slowburn::health_detail {

namespace {

// The link-error class of the RDMA counters (FACTS.md: standard counters/).
constexpr const char* kRdmaLinkErrorCounters[] = {
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_rcv_remote_physical_errors",
};

std::optional<std::pair<uint16_t, uint16_t>> pci_model(const Topology* topo, const std::string& address) {
  if (!topo || address.empty()) return std::nullopt;
  const TopologyDevice* dev = topo->find(address);
  if (!dev) return std::nullopt;
  return std::make_pair(dev->pci.vendor, dev->pci.device);
}

// What a port is held to: the configured speed, else the fastest port of
// the same PCI model here (named), else nothing to compare with.
struct SpeedExpectation {
  std::optional<double> gbps;
  std::string from;
};

SpeedExpectation expected_speed(const Evaluation& e,
                                const std::vector<std::tuple<std::string, std::string, double>>& ports,
                                const std::string& device) {
  if (e.context.thresholds.nic_speed_gbps) return {e.context.thresholds.nic_speed_gbps, "--nic-speed"};
  auto model = pci_model(e.context.topology, device);
  SpeedExpectation best;
  size_t peers = 0;
  for (const auto& [name, dev, gbps] : ports) {
    if (!model || pci_model(e.context.topology, dev) != model) continue;
    ++peers;
    if (!best.gbps || gbps > *best.gbps) best = {gbps, name};
  }
  if (peers < 2) return {};
  best.from = fmt::format("{:g} Gb/s of {}, the fastest port of this model ({:04x}:{:04x}) here", *best.gbps, best.from,
                          model->first, model->second);
  return best;
}

// A port below what it is held to.
std::pair<CheckState, std::string> speed_verdict(std::optional<double> gbps, const SpeedExpectation& expected) {
  if (!gbps) return {CheckState::ok, "speed not reported"};
  if (!expected.gbps)
    return {CheckState::ok, fmt::format("{:g} Gb/s; no other port of this model here to compare with", *gbps)};
  if (*gbps < *expected.gbps) return {CheckState::warn, fmt::format("{:g} Gb/s < {}", *gbps, expected.from)};
  return {CheckState::ok, fmt::format("{:g} Gb/s ({})", *gbps, expected.from)};
}

std::optional<double> netdev_gbps(const NetdevState& n) {
  if (!n.speed_mbps || *n.speed_mbps <= 0) return std::nullopt;
  return static_cast<double>(*n.speed_mbps) / 1000.0;
}

void evaluate_netdevs(Evaluation& e) {
  if (e.after.netdevs.empty()) {
    e.unavailable("nic.link", "", e.node_ranks(),
                  fmt::format("no physical network interface (with a device link) under {}/class/net",
                              e.after.sources.sysfs_root.string()));
    return;
  }
  std::vector<std::tuple<std::string, std::string, double>> up;
  for (const NetdevState& n : e.after.netdevs)
    if (auto gbps = netdev_gbps(n); gbps && n.operstate == "up") up.emplace_back(n.name, n.name, *gbps);
  for (const NetdevState& n : e.after.netdevs) {
    std::vector<int> ranks = e.device_ranks(n.name);
    std::string notes = n.notes.empty() ? "" : "; " + join(n.notes, "; ");
    // nic.link: operstate, then the speed against its peers.
    if (n.operstate.empty()) {
      e.unavailable("nic.link", n.name, ranks, fmt::format("{}: no operstate{}", n.name, notes));
    } else if (n.operstate == "down" || n.operstate == "lowerlayerdown" || n.operstate == "notpresent") {
      e.add("nic.link", ranks.empty() ? CheckState::warn : CheckState::fail, n.name, nullptr, nullptr, ranks,
            fmt::format("{}: operstate {}{}{}", n.name, n.operstate, ranks.empty() ? "" : " and ranks use it", notes));
    } else {
      SpeedExpectation expected = expected_speed(e, up, n.name);
      auto [state, why] = speed_verdict(netdev_gbps(n), expected);
      if (!netdev_gbps(n) && n.speed_mbps)
        why = fmt::format("speed not reported ({}: a virtual NIC, or no link)", *n.speed_mbps);
      nlohmann::json value = netdev_gbps(n) ? nlohmann::json(*netdev_gbps(n)) : nlohmann::json(nullptr);
      nlohmann::json threshold = expected.gbps ? nlohmann::json(*expected.gbps) : nlohmann::json(nullptr);
      e.add("nic.link", state, n.name, value, threshold, ranks,
            fmt::format("{}: operstate {}, {}{}", n.name, n.operstate, why, notes));
    }
    // nic.errors: statistics/*_errors, and whether they rose.
    if (n.errors.empty()) {
      e.unavailable("nic.errors", n.name, ranks, fmt::format("{}: no statistics/*_errors{}", n.name, notes));
      continue;
    }
    const NetdevState* then = nullptr;
    for (const NetdevState& b : e.before.netdevs)
      if (b.name == n.name) then = &b;
    uint64_t total = 0;
    std::vector<std::string> nonzero, rose;
    for (const auto& [name, value] : n.errors) {
      total += value;
      if (value) nonzero.push_back(fmt::format("{} {}", name, value));
      if (!then || !e.has_trend()) continue;
      auto was = then->errors.find(name);
      if (was != then->errors.end() && value > was->second)
        rose.push_back(fmt::format("{} +{}", name, value - was->second));
    }
    std::string detail = fmt::format("{}: {} errors since boot{}", n.name, total,
                                     nonzero.empty() ? "" : " (" + join(nonzero, ", ") + ")");
    detail += rose.empty() ? "; " + e.quiet("rise") : fmt::format("; {} {}", join(rose, ", "), e.over_interval());
    e.add("nic.errors", rose.empty() ? CheckState::ok : CheckState::warn, n.name, total, 0, ranks, detail);
  }
}

void evaluate_pfc(Evaluation& e) {
  std::vector<std::string> roce, infiniband;
  for (const RdmaPortState& p : e.after.rdma_ports) {
    std::string port = fmt::format("{}/{}", p.counters.nic, p.counters.port);
    if (p.link_layer == "Ethernet" && !p.counters.netdev.empty())
      roce.push_back(p.counters.netdev);
    else
      infiniband.push_back(fmt::format("{} ({})", port, p.link_layer.empty() ? "link layer unknown" : p.link_layer));
  }
  if (roce.empty()) {
    e.unavailable("nic.pfc", "", e.node_ranks(),
                  fmt::format("no RoCE port (an RDMA device with an Ethernet link layer) under {}/class/infiniband{}",
                              e.after.sources.sysfs_root.string(),
                              infiniband.empty() ? "" : "; PFC is Ethernet's: " + join(infiniband, ", ")));
    return;
  }
  for (const std::string& netdev : roce) {
    std::vector<int> ranks = e.device_ranks(netdev);
    auto it = e.after.pfc.find(netdev);
    if (it == e.after.pfc.end()) {
      e.unavailable("nic.pfc", netdev, ranks,
                    netdev +
                        ": PFC configuration lives in the driver, read through DCB netlink on the live machine "
                        "only (a captured tree holds none)");
      continue;
    }
    if (!it->second) {
      e.unavailable("nic.pfc", netdev, ranks, it->second.error().message);
      continue;
    }
    const PfcConfig& pfc = *it->second;
    std::string priorities = pfc_priorities_text(pfc);
    if (pfc.enabled)
      e.add("nic.pfc", CheckState::ok, netdev, priorities, nullptr, ranks,
            fmt::format("{}: PFC on priorities {} (up to {} lossless classes)", netdev, priorities, pfc.capability));
    else
      e.add("nic.pfc", CheckState::warn, netdev, priorities, nullptr, ranks,
            fmt::format("{}: PFC enabled on no priority: RoCE traffic is not lossless (fine only if the fabric "
                        "relies on ECN alone)",
                        netdev));
  }
}

void evaluate_rdma_ports(Evaluation& e) {
  if (e.after.rdma_ports.empty()) {
    e.unavailable("rdma.port", "", e.node_ranks(),
                  fmt::format("no RDMA device under {}/class/infiniband", e.after.sources.sysfs_root.string()));
    return;
  }
  std::vector<std::tuple<std::string, std::string, double>> active;
  for (const RdmaPortState& p : e.after.rdma_ports)
    if (p.rate_gbps && p.state == "ACTIVE")
      active.emplace_back(fmt::format("{}/{}", p.counters.nic, p.counters.port), p.counters.nic, *p.rate_gbps);

  // Error counters between the readings, judged as the fabric monitor judges them.
  std::map<std::pair<std::string, uint32_t>, std::vector<FabricEvent>> events;
  if (e.has_trend()) {
    FabricMonitor monitor;
    FabricSnapshot before{e.before.ts_ns, {}}, after{e.after.ts_ns, {}};
    for (const RdmaPortState& p : e.before.rdma_ports) before.nics.push_back(p.counters);
    for (const RdmaPortState& p : e.after.rdma_ports) after.nics.push_back(p.counters);
    (void)monitor.update(before);
    for (FabricEvent& ev : monitor.update(after)) events[{ev.nic, ev.port}].push_back(std::move(ev));
  }

  for (const RdmaPortState& p : e.after.rdma_ports) {
    std::string port = fmt::format("{}/{}", p.counters.nic, p.counters.port);
    std::vector<int> ranks = e.device_ranks(p.counters.nic);
    std::string states =
        fmt::format("state {}, physical {}, {}", p.state.empty() ? "?" : p.state,
                    p.phys_state.empty() ? "?" : p.phys_state, p.link_layer.empty() ? "link layer ?" : p.link_layer);
    if (p.state.empty()) {
      e.unavailable("rdma.port", port, ranks, port + ": no ports/N/state file");
    } else if (p.state != "ACTIVE") {
      e.add("rdma.port", ranks.empty() ? CheckState::warn : CheckState::fail, port,
            p.rate_gbps ? nlohmann::json(*p.rate_gbps) : nlohmann::json(nullptr), nullptr, ranks,
            fmt::format("{}: {}{}", port, states, ranks.empty() ? "" : "; ranks use it"));
    } else {
      SpeedExpectation expected = expected_speed(e, active, p.counters.nic);
      auto [state, why] = speed_verdict(p.rate_gbps, expected);
      e.add("rdma.port", state, port, p.rate_gbps ? nlohmann::json(*p.rate_gbps) : nlohmann::json(nullptr),
            expected.gbps ? nlohmann::json(*expected.gbps) : nlohmann::json(nullptr), ranks,
            fmt::format("{}: {}; rate '{}': {}", port, states, p.rate_text, why));
    }

    uint64_t link_errors = 0;
    std::vector<std::string> nonzero;
    for (const char* name : kRdmaLinkErrorCounters) {
      auto it = p.counters.counters.find(name);
      if (it == p.counters.counters.end() || !it->second) continue;
      link_errors += it->second;
      nonzero.push_back(fmt::format("{} {}", name, it->second));
    }
    CheckState state = CheckState::ok;
    std::vector<std::string> seen;
    for (const FabricEvent& ev : events[{p.counters.nic, p.counters.port}]) {
      if (ev.severity == "info") continue;
      state = std::max(state, ev.severity == "error" ? CheckState::fail : CheckState::warn);
      seen.push_back(ev.summary);
    }
    std::string detail = fmt::format("{}: {} link errors since boot{}", port, link_errors,
                                     nonzero.empty() ? "" : " (" + join(nonzero, ", ") + ")");
    detail +=
        seen.empty() ? "; " + e.quiet("fabric event") : fmt::format("; {} {}", join(seen, "; "), e.over_interval());
    if (!p.counters.notes.empty()) detail += "; " + join(p.counters.notes, "; ");
    e.add("rdma.errors", state, port, link_errors, 0, ranks, detail);
  }
}

}  // namespace

void evaluate_nic_checks(Evaluation& e) {
  evaluate_netdevs(e);
  evaluate_pfc(e);
  evaluate_rdma_ports(e);
}

}  // namespace slowburn::health_detail
