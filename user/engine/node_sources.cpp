#include "engine/node_sources.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "core/clock.h"
#include "sources/host_monitor.h"
#include "sources/hw_monitor.h"
#include "sources/node_sdc.h"
#include "sources/rdma_sources.h"
#include "sysfs/topology.h"

namespace slowburn {

NodeSources::NodeSources(const NodeSourcesOptions& options) : o_(options) {}

NodeSources::~NodeSources() = default;

Result<std::unique_ptr<NodeSources>> NodeSources::start(const NodeSourcesOptions& options) {
  std::unique_ptr<NodeSources> sources(new NodeSources(options));
  if (auto ok = sources->start_hardware(); !ok) return ok.error();
  return sources;
}

Result<void> NodeSources::start_hardware() {
  if (!o_.hardware) return {};
  topology_ = std::make_shared<Topology>(Topology::read(o_.roots.sysfs_root, o_.roots.proc_root));
  HwMonitorOptions hw;
  hw.fabric = o_.rdma;
  hw.sysfs_root = o_.roots.sysfs_root;
  hw.proc_root = o_.roots.proc_root;
  hw.kernel_sources = o_.kernel;
  auto started = HwMonitor::start(hw, topology_);
  if (!started) return started.error();
  hw_ = std::move(*started);
  for (const ProbeStatus& s : hw_->statuses()) new_statuses_.push_back(s);
  if (!o_.sdc) return {};
  HealthSources sdc;
  sdc.sysfs_root = o_.roots.sysfs_root;
  sdc.proc_root = o_.roots.proc_root;
  if (auto watch = NodeSdcWatch::start(sdc))
    sdc_ = std::make_unique<NodeSdcWatch>(std::move(*watch));
  else
    notes_.push_back("node ECC/EDAC/MCE activity will not be read: " + watch.error().message);
  return {};
}

void NodeSources::start_host(const std::vector<RankIdentity>& ranks) {
  HostMonitorOptions host;
  host.sched = o_.kernel;
  host.files = {o_.roots.proc_root, o_.roots.cgroup_root};
  host.topology = topology_;
  host.sysfs_root = o_.roots.sysfs_root;
  host_ = std::make_unique<HostMonitor>(host);
  // Its states once it follows the ranks: where their cgroups are read is known then.
  for (const RankIdentity& rank : ranks) host_->add_rank(rank);
  for (const ProbeStatus& s : host_->statuses()) new_statuses_.push_back(s);
}

void NodeSources::set_ranks(const std::vector<RankIdentity>& ranks) {
  std::set<int32_t> now, before;
  for (const RankIdentity& r : ranks) now.insert(r.pid);
  for (const RankIdentity& r : ranks_) before.insert(r.pid);
  if (topology_) topology_->assign_ranks(ranks);
  if (o_.host && !host_ && !ranks.empty()) {
    start_host(ranks);
  } else if (host_ && ranks.empty()) {
    host_.reset();
  } else if (host_) {
    for (const RankIdentity& r : ranks)
      if (!before.contains(r.pid)) host_->add_rank(r);
    for (int32_t pid : before)
      if (!now.contains(pid)) host_->remove_rank(pid);
  }
  ranks_ = ranks;
}

void NodeSources::rank_exited(int32_t pid) {
  if (host_) host_->rank_exited(pid);
}

Result<void> NodeSources::attach_rdma(const std::vector<RankIdentity>& ranks, SymbolCache& symbols) {
  if (!o_.rdma) return {};
  auto started = RdmaSources::start(ranks, o_.roots.proc_root, symbols, topology_.get());
  if (!started) return started.error();
  rdma_ = std::move(*started);
  for (const ProbeStatus& s : rdma_->statuses()) new_statuses_.push_back(s);
  return {};
}

Result<void> NodeSources::add_rdma_to(
    const std::function<Result<void>(int fd, RingBufferReader::Handler handler)>& add) {
  return rdma_ ? rdma_->add_to(add) : Result<void>{};
}

size_t NodeSources::rdma_attached() const { return rdma_ ? rdma_->attached() : 0; }

Result<std::vector<DeviceEvent>> NodeSources::poll(int timeout_ms, uint64_t now_ns) {
  std::vector<DeviceEvent> events;
  uint64_t waited_from = timeout_ms > 0 ? monotonic_ns() : 0;
  if (hw_) {
    auto polled = hw_->poll(timeout_ms, now_ns);
    if (!polled) return polled.error();
    events = std::move(*polled);
    for (std::string& note : hw_->take_notes()) notes_.push_back(std::move(note));
  } else if (timeout_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  }
  // The readings below are taken after the wait: their time moves with it.
  if (waited_from) now_ns += monotonic_ns() - waited_from;
  if (host_) {
    for (DeviceEvent& e : host_->poll(now_ns)) events.push_back(std::move(e));
    for (std::string& note : host_->take_notes()) notes_.push_back(std::move(note));
  }
  if (rdma_) {
    for (DeviceEvent& e : rdma_->poll(now_ns)) events.push_back(std::move(e));
    for (ProbeStatus& s : rdma_->take_new_statuses()) new_statuses_.push_back(std::move(s));
  }
  return events;
}

void NodeSources::stop_hardware() { hw_.reset(); }

std::vector<DeviceEvent> NodeSources::finish(uint64_t now_ns) {
  std::vector<DeviceEvent> events;
  if (host_) {
    events = host_->finish(now_ns);
    for (std::string& note : host_->take_notes()) notes_.push_back(std::move(note));
  }
  // The per-connection view as it ended, for the session's last findings.
  if (rdma_)
    for (DeviceEvent& e : rdma_->poll(now_ns, true)) events.push_back(std::move(e));
  if (sdc_) {
    auto activity = sdc_->finish(topology_.get(), ranks_);
    if (!activity)
      notes_.push_back("node ECC/EDAC/MCE activity could not be read: " + activity.error().message);
    else
      sdc_activity_ = *activity;
  }
  return events;
}

std::vector<ProbeStatus> NodeSources::take_statuses() { return std::exchange(new_statuses_, {}); }

std::vector<std::string> NodeSources::take_notes() { return std::exchange(notes_, {}); }

std::vector<ProbeStatus> NodeSources::statuses() const {
  std::vector<ProbeStatus> all;
  if (hw_) all = hw_->statuses();
  if (host_) all.insert(all.end(), host_->statuses().begin(), host_->statuses().end());
  if (rdma_) all.insert(all.end(), rdma_->statuses().begin(), rdma_->statuses().end());
  return all;
}

}  // namespace slowburn
