#include "sources/hw_monitor.h"

#include <fmt/format.h>

#include <set>
#include <thread>

#include "core/clock.h"
#include "core/strings.h"
#include "events/decoder.h"
#include "loader/kmsg_program.h"
#include "loader/ring_buffer.h"
#include "loader/tp_record_program.h"
#include "nvidia/xid_record.h"
#include "slowburn/hwevents.h"
#include "sources/kernel_sources.h"
#include "tracefs/tracefs.h"

namespace slowburn {

namespace {}  // namespace

HwMonitor::HwMonitor(const HwMonitorOptions& options, std::shared_ptr<const Topology> topology)
    : options_(options),
      topology_(std::move(topology)),
      builder_(topology_.get()),
      decoder_(std::make_unique<EventDecoder>()),
      links_(options.expectations),
      fabric_(options.fabric_thresholds) {}

HwMonitor::~HwMonitor() = default;

void HwMonitor::status(const std::string& source, ProbeState state, const std::string& detail) {
  ProbeStatus s;
  s.probe = source;
  s.state = state;
  if (state == ProbeState::attached)
    s.library = detail;
  else
    s.detail = detail;
  statuses_.push_back(std::move(s));
}

Result<std::unique_ptr<HwMonitor>> HwMonitor::start(const HwMonitorOptions& options,
                                                    std::shared_ptr<const Topology> topology) {
  std::unique_ptr<HwMonitor> hw(new HwMonitor(options, std::move(topology)));
  if (options.kernel_sources) {
    if (auto ok = hw->start_kernel_sources(); !ok) return ok.error();
  } else {
    for (const KernelSource& source : all_kernel_sources(options.aer, options.link, options.xid))
      hw->status(source.name, ProbeState::unavailable, "replaying a captured tree");
  }
  hw->start_sysfs_pollers();
  if (options.fabric) hw->start_fabric_poller();
  return hw;
}

Result<void> HwMonitor::add_reader(int fd, std::function<void(std::span<const std::byte>)> handler) {
  if (!reader_) {
    auto reader = RingBufferReader::open(fd, std::move(handler));
    if (!reader) return reader.error();
    reader_ = std::move(*reader);
    return {};
  }
  return reader_->add(fd, std::move(handler));
}

Result<void> HwMonitor::start_kernel_sources() {
  const KernelFeatures& kernel = KernelFeatures::host();
  if (!kernel.tracefs) {
    for (const KernelSource& source : all_kernel_sources(options_.aer, options_.link, options_.xid))
      status(source.name, ProbeState::unavailable, kernel.tracefs_missing);
    return {};
  }
  std::string driver_xid_failure;
  for (const KernelSourcePlan& plan : plan_kernel_sources(kernel, options_.aer, options_.link, options_.xid)) {
    const KernelSource& source = plan.source;
    bool driver_xid = source.id == SB_TP_NVIDIA_DEV_XID;
    auto fail = [&](ProbeState state, const std::string& why) {
      // The driver's Xid tracepoint falls back to the kernel log below: one status for nvidia.xid.
      if (driver_xid)
        driver_xid_failure = why;
      else
        status(source.name, state, why);
    };
    if (!plan.available) {
      if (!driver_xid) fail(ProbeState::unavailable, plan.reason);
      continue;
    }
    auto format = read_tracepoint_format(*kernel.tracefs, source.system, source.event);
    if (!format) {
      fail(ProbeState::failed, format.error().message);
      continue;
    }
    if (!tp_) {
      // One failure here (an old kernel's verifier, say) costs the raw-record
      // sources, not the kernel-log and sysfs ones.
      auto tp = TpRecordProgram::load();
      if (!tp) {
        fail(ProbeState::failed, tp.error().message);
        continue;
      }
      tp_ = std::move(*tp);
      auto ok = add_reader(tp_->events_fd(), [this](std::span<const std::byte> bytes) {
        if (auto record = decoder_->decode_tp_record(bytes)) on_tp_record(*record);
      });
      if (!ok) return ok.error();
    }
    if (auto attached = tp_->attach(source.system, source.event, source.id); !attached) {
      fail(ProbeState::failed, attached.error().message);
      continue;
    }
    formats_[source.id] = std::move(*format);
    status(source.name, ProbeState::attached, fmt::format("tracepoint {}:{}", source.system, source.event));
  }
  // Drivers before 575 report Xids only in the kernel log.
  if (options_.xid && !formats_.contains(SB_TP_NVIDIA_DEV_XID)) {
    auto kmsg = KmsgXidProgram::load_and_attach();
    if (!kmsg) {
      status("nvidia.xid", ProbeState::unavailable, kmsg.error().message);
      return {};
    }
    kmsg_ = std::move(*kmsg);
    auto ok = add_reader(kmsg_->events_fd(), [this](std::span<const std::byte> bytes) {
      auto line = decoder_->decode_kmsg(bytes);
      if (!line) return;
      auto xid = parse_xid_line(line->text);
      if (!xid) {
        ++unparsed_;
        return;
      }
      pending_.push_back(builder_.xid(*xid, line->ts_ns, "kmsg"));
    });
    if (!ok) return ok.error();
    status("nvidia.xid", ProbeState::attached,
           "kernel log (printk:console), Xid/SXid lines filtered in the kernel" +
               (driver_xid_failure.empty() ? std::string() : " (driver tracepoint: " + driver_xid_failure + ")"));
  }
  return {};
}

void HwMonitor::start_sysfs_pollers() {
  std::set<std::string> polled;
  for (const TopologyDevice& dev : topology_->devices()) {
    const LinkReading& l = dev.pci.link;
    bool link_notes = std::any_of(dev.pci.notes.begin(), dev.pci.notes.end(),
                                  [](const std::string& n) { return n.find("_link_") != std::string::npos; });
    if (l.current_speed_gts || l.current_width || l.max_speed_gts || l.max_width || link_notes) {
      link_devices_.push_back(dev.pci.bdf);
      polled.insert(dev.pci.bdf);
    }
    if (!read_aer_counters(options_.sysfs_root, dev.pci.bdf).empty()) aer_devices_.push_back(dev.pci.bdf);
  }
  // Both ends of a link report it: events come from the lower end (the
  // device below a root or downstream port), unless only the port is read.
  for (const std::string& bdf : link_devices_) {
    const TopologyDevice* dev = topology_->find(bdf);
    auto partners = topology_->link_partners(bdf);
    bool port_above_its_link = dev && (dev->role == DeviceRole::root_port || dev->role == DeviceRole::switch_port) &&
                               !partners.empty() && dev->pci.parent_bdf != partners.front()->pci.bdf &&
                               std::all_of(partners.begin(), partners.end(),
                                           [&](const TopologyDevice* p) { return polled.contains(p->pci.bdf); });
    if (port_above_its_link) silent_link_ends_.insert(bdf);
  }
  // A source the caller turned off is not polled (its devices were still
  // looked at: a port's silence depends on its partners).
  if (!options_.link) link_devices_.clear();
  if (!options_.aer) aer_devices_.clear();
  if (options_.link) {
    if (link_devices_.empty())
      status("pcie.link", ProbeState::unavailable,
             "no PCIe link attributes (current_link_speed/width) under " + options_.sysfs_root.string() +
                 "/bus/pci/devices (virtual machine, or no PCIe)");
    else
      status("pcie.link", ProbeState::attached,
             fmt::format("sysfs poller, {} devices, every {:g} s", link_devices_.size(), options_.poll_interval_s));
  }
  if (options_.aer) {
    if (formats_.contains(SB_TP_AER_EVENT)) {
      // The tracepoint sees every error (before the log rate limit); the
      // counters would report each one a second time.
      aer_devices_.clear();
      status("pcie.aer.sysfs", ProbeState::unavailable, "not needed: the ras:aer_event tracepoint is attached");
    } else if (aer_devices_.empty()) {
      status("pcie.aer.sysfs", ProbeState::unavailable,
             "no aer_dev_* counter files under " + options_.sysfs_root.string() +
                 "/bus/pci/devices (no AER-capable device, or CONFIG_PCIEAER off)");
    } else {
      status("pcie.aer.sysfs", ProbeState::attached,
             fmt::format("sysfs poller, {} devices, every {:g} s", aer_devices_.size(), options_.poll_interval_s));
    }
  }
}

void HwMonitor::on_tp_record(const TpRecord& record) {
  auto format = formats_.find(record.source);
  if (format == formats_.end()) {
    ++unparsed_;
    return;
  }
  // A decoded record becomes an event; one that does not decode is counted.
  auto push = [&](auto decoded, auto build) {
    if (decoded)
      pending_.push_back(build(*decoded));
    else
      ++unparsed_;
  };
  uint64_t ts = record.ts_ns;
  switch (record.source) {
    case SB_TP_AER_EVENT:
      push(decode_aer_record(format->second, record.data), [&](const AerEvent& e) { return builder_.aer(e, ts); });
      break;
    case SB_TP_PCIE_LINK_EVENT:
      push(decode_pcie_link_record(format->second, record.data),
           [&](const PcieLinkTrace& t) { return builder_.pcie_link_trace(t, ts); });
      break;
    case SB_TP_PCI_HP_EVENT:
      push(decode_pci_hp_record(format->second, record.data),
           [&](const PciHotplugTrace& t) { return builder_.hotplug(t, ts); });
      break;
    case SB_TP_NVIDIA_DEV_XID:
      push(decode_xid_record(format->second, record.data),
           [&](const XidEvent& x) { return builder_.xid(x, ts, "tracepoint"); });
      break;
    default:
      ++unparsed_;
  }
}

void HwMonitor::start_fabric_poller() {
  FabricSamplerOptions sampler;
  sampler.sysfs_root = options_.sysfs_root;
  sampler.nics = options_.fabric_nics;
  sampler.netdevs = options_.fabric_netdevs;
  sampler.ethtool_dir = options_.ethtool_dir;
  // The ioctl asks this host's interfaces: only when reading this host's
  // sysfs (a replayed tree comes with captures, or without ethtool).
  sampler.ethtool = !options_.ethtool_dir.empty() || options_.sysfs_root == "/sys";
  FabricSnapshot first = sample_fabric(sampler, monotonic_ns());
  if (first.nics.empty()) {
    status("rdma.fabric", ProbeState::unavailable,
           options_.fabric_nics.empty() && options_.fabric_netdevs.empty()
               ? "no RDMA devices under " + (options_.sysfs_root / "class/infiniband").string()
               : "none of the NICs asked for exists (" +
                     join(options_.fabric_nics.empty() ? options_.fabric_netdevs : options_.fabric_nics) + ")");
    return;
  }
  std::set<std::string> nics;
  bool netdevs = false;
  for (const NicSample& s : first.nics) {
    nics.insert(s.nic);
    netdevs = netdevs || !s.netdev.empty();
  }
  status("rdma.fabric", ProbeState::attached,
         fmt::format("counter poller, {} NIC port(s) on {} ({}), every {:g} s", first.nics.size(),
                     join({nics.begin(), nics.end()}), sampler.ethtool && netdevs ? "sysfs + ethtool" : "sysfs",
                     options_.poll_interval_s));
  fabric_.update(first);  // the baseline
  fabric_sampler_ = sampler;
}

void HwMonitor::poll_sysfs() {
  uint64_t now = monotonic_ns();
  if (fabric_sampler_)
    for (const FabricEvent& e : fabric_.update(sample_fabric(*fabric_sampler_, now)))
      pending_.push_back(builder_.fabric(e));
  for (const std::string& bdf : link_devices_) {
    const TopologyDevice* dev = topology_->find(bdf);
    LinkReading reading = read_link_reading(options_.sysfs_root, bdf);
    last_readings_[bdf] = reading;
    std::optional<LinkExpectation> partner = topology_->link_partner_capability(bdf);
    auto partners = topology_->link_partners(bdf);
    for (LinkEvent& e : links_.observe(bdf, dev ? dev->pci.vendor : 0, dev ? dev->pci.device : 0, reading, partner)) {
      if (silent_link_ends_.contains(bdf)) continue;
      if (partners.size() == 1) e.partner = partners.front()->pci.bdf;
      pending_.push_back(builder_.link(e, now));
    }
  }
  for (const std::string& bdf : aer_devices_)
    for (const AerEvent& e : aer_counters_.observe(bdf, read_aer_counters(options_.sysfs_root, bdf)))
      pending_.push_back(builder_.aer(e, now));
}

Result<std::vector<DeviceEvent>> HwMonitor::poll(int timeout_ms, uint64_t now_ns) {
  if (reader_) {
    if (auto polled = reader_->poll(timeout_ms); !polled) return polled.error();
  } else if (timeout_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  }
  if (now_ns >= next_sysfs_poll_ns_) {
    poll_sysfs();
    next_sysfs_poll_ns_ = now_ns + static_cast<uint64_t>(options_.poll_interval_s * 1e9);
  }
  std::vector<DeviceEvent> events;
  events.swap(pending_);
  return events;
}

HwCounters HwMonitor::counters() const {
  HwCounters c;
  if (kmsg_) {
    KmsgCounters k = kmsg_->counters();
    c.kmsg_lines_seen = k.lines_seen;
    c.kmsg_lines_matched = k.lines_matched;
    c.kmsg_drops = k.ringbuf_drops;
  }
  if (tp_) {
    TpRecordCounters t = tp_->counters();
    c.tp_records = t.records;
    c.tp_drops = t.ringbuf_drops;
  }
  c.unparsed = unparsed_ + decoder_->stats().rejected();
  return c;
}

std::vector<LinkRow> HwMonitor::link_table() const {
  std::vector<LinkRow> rows;
  for (const std::string& bdf : link_devices_) {
    const TopologyDevice* dev = topology_->find(bdf);
    if (!dev) continue;
    auto last = last_readings_.find(bdf);
    rows.push_back({dev, last != last_readings_.end() ? last->second : dev->pci.link, links_.status(bdf),
                    links_.expectation(bdf), topology_->ranks_behind(bdf)});
  }
  return rows;
}

}  // namespace slowburn
