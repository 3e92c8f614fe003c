#include "sources/host_monitor.h"

#include <fmt/format.h>

#include <algorithm>

#include "host/numa_placement.h"
#include "loader/sched_program.h"
#include "sysfs/topology.h"

namespace slowburn {

namespace {

uint64_t minus(uint64_t now, uint64_t then) { return now > then ? now - then : 0; }

std::optional<double> pressure_share(const std::optional<Pressure>& from, const std::optional<Pressure>& to,
                                     uint64_t span_ns) {
  if (!from || !to || span_ns == 0) return std::nullopt;
  return static_cast<double>(minus(to->some_total_us, from->some_total_us)) * 1000 / static_cast<double>(span_ns);
}

}  // namespace

HostInterval host_interval(const RankIdentity& rank, const HostReading& from, const HostReading& to,
                           const std::vector<CpuShare>& shares) {
  HostInterval r;
  r.rank = rank;
  r.span_ns = minus(to.ts_ns, from.ts_ns);
  r.end_ns = to.ts_ns;
  if (to.sched) r.sched = to.sched->minus(from.sched.value_or(SchedSums{}));
  r.shares = shares;
  if (from.stat && to.stat) r.major_faults = minus(to.stat->majflt, from.stat->majflt);
  if (to.status && to.status->vm_swap_kb) {
    r.swap_kb = to.status->vm_swap_kb;
    if (from.status && from.status->vm_swap_kb)
      r.swapped_out_kb = minus(*to.status->vm_swap_kb, *from.status->vm_swap_kb);
  }
  if (to.cgroup) {
    const CgroupReading& b = *to.cgroup;
    r.cgroup = b.cpu_path;
    r.quota = b.quota;
    // Moved to another cgroup meanwhile: its counters are another group's.
    const CgroupReading* a = from.cgroup && from.cgroup->cpu_path == b.cpu_path ? &*from.cgroup : nullptr;
    if (a && a->cpu_stat && b.cpu_stat)
      r.throttling = CpuStat{minus(b.cpu_stat->nr_periods, a->cpu_stat->nr_periods),
                             minus(b.cpu_stat->nr_throttled, a->cpu_stat->nr_throttled),
                             minus(b.cpu_stat->throttled_ns, a->cpu_stat->throttled_ns)};
    if (a) {
      for (const auto& [key, n] : b.memory_events) {
        auto it = a->memory_events.find(key);
        if (uint64_t d = minus(n, it == a->memory_events.end() ? 0 : it->second)) r.memory_events[key] = d;
      }
      r.cpu_pressure = pressure_share(a->cpu_pressure, b.cpu_pressure, r.span_ns);
      r.memory_pressure = pressure_share(a->memory_pressure, b.memory_pressure, r.span_ns);
      r.io_pressure = pressure_share(a->io_pressure, b.io_pressure, r.span_ns);
    }
  }
  if (from.tcp && to.tcp) {
    // Per socket: one that opened since counts all of its own (a reading
    // that could not read them starts no span: its sockets' whole lives
    // would count).
    uint64_t retrans = 0;
    for (const auto& [inode, n] : to.tcp->by_inode) {
      auto was = from.tcp->by_inode.find(inode);
      TcpCounts before = was == from.tcp->by_inode.end() ? TcpCounts{} : was->second;
      retrans += minus(n.retrans, before.retrans);  // a reset socket (tcp_disconnect) counts 0
      r.tcp_bytes_sent += minus(n.bytes_sent, before.bytes_sent);
      r.tcp_bytes_retrans += minus(n.bytes_retrans, before.bytes_retrans);
    }
    r.tcp_retrans = retrans;
    for (const auto& [inode, n] : to.tcp->by_inode) {
      if (!n.established) continue;
      auto was = from.tcp->by_inode.find(inode);
      const TcpCounts before = was == from.tcp->by_inode.end() ? TcpCounts{} : was->second;
      // Data acknowledged over the span: its RTT was sampled in it (Linux
      // 4.1+ counts it; before, no end is fresh and no path is judged).
      bool fresh = n.bytes_acked > before.bytes_acked;
      r.tcp_ends.push_back({n.local, n.remote, to.tcp->netns, n.rtt_us, fresh});
    }
    r.tcp_sockets = to.tcp->by_inode.size();
    r.tcp_max_rtt_us = to.tcp->max_rtt_us;
  }
  return r;
}

DeviceEvent host_event(const HostCause& cause, uint64_t ts_ns, bool whole_session) {
  DeviceEvent e;
  e.type = cause.type;
  e.ts_ns = ts_ns;
  e.role = "host";
  e.label = cause.label;
  e.ranks = {cause.rank};
  e.summary = cause.summary;
  e.pid = cause.pid;
  e.fields = {{"pid", cause.pid},
              {"value", cause.value},
              {"peers_value", cause.peers_value ? nlohmann::json(*cause.peers_value) : nlohmann::json(nullptr)},
              {"span_ns", cause.span_ns},
              // An exited rank's whole session ended at its last reading.
              {"span_ended_before_ns", cause.end_ns && ts_ns > cause.end_ns ? ts_ns - cause.end_ns : 0},
              {"whole_session", whole_session}};
  if (cause.other_pid) {
    e.fields["other_pid"] = *cause.other_pid;
    e.fields["other_comm"] = cause.other_comm;
  }
  return e;
}

HostMonitor::HostMonitor(const HostMonitorOptions& options)
    : o_(options), reader_(options.files), cpu_nodes_(read_cpu_nodes(options.sysfs_root)) {
  ProbeStatus sched{"host.sched", std::nullopt, 0, ProbeState::unavailable, "", {}, ""};
  if (!o_.sched) {
    sched.detail = "turned off";
  } else if (auto program = SchedProgram::load_and_attach()) {
    sched_ = std::move(*program);
    sched.state = ProbeState::attached;
    sched.detail = "raw_tp sched_switch, sched_wakeup, sched_wakeup_new";
  } else {
    sched.state = ProbeState::failed;
    sched.detail = program.error().message;
  }
  statuses_.push_back(std::move(sched));
}

HostMonitor::~HostMonitor() = default;

void HostMonitor::add_rank(const RankIdentity& rank) {
  if (ranks_.contains(rank.pid)) return;
  if (sched_)
    if (auto ok = sched_->follow(rank.pid); !ok) statuses_.front().detail += "; " + ok.error().message;
  if (ranks_.empty()) {
    std::string source = reader_.cpu_source(rank.pid);
    bool found = source.starts_with("cgroup v");
    statuses_.push_back({"host.cgroup",
                         std::nullopt,
                         0,
                         found ? ProbeState::attached : ProbeState::unavailable,
                         "",
                         {},
                         found ? source + " of " + rank_label(rank) : source});
    auto tcp = reader_.tcp_source(rank.pid);
    statuses_.push_back({"host.tcp",
                         std::nullopt,
                         0,
                         tcp ? ProbeState::attached : ProbeState::unavailable,
                         "",
                         {},
                         tcp ? *tcp + " (" + rank_label(rank) + ")" : tcp.error().message});
  }
  Rank r;
  r.identity = rank;
  ranks_.emplace(rank.pid, std::move(r));
  next_read_ns_ = 0;  // its first reading now
}

void HostMonitor::rank_exited(int32_t pid) {
  auto it = ranks_.find(pid);
  if (it == ranks_.end() || it->second.exited) return;
  // Its files are gone: its last reading (a second old at most) ends its session.
  it->second.exited = true;
  if (sched_) sched_->forget(pid);
  reader_.forget(pid);
}

void HostMonitor::remove_rank(int32_t pid) {
  ranks_.erase(pid);
  if (sched_) sched_->forget(pid);
  reader_.forget(pid);
  std::erase_if(said_, [&](const auto& entry) { return entry.first.first == pid; });
}

void HostMonitor::read_all(uint64_t now_ns) {
  std::map<int32_t, SchedSums> sums;
  std::map<int32_t, std::vector<CpuShare>> shares;
  if (sched_) {
    sums = sched_->sums();
    for (CpuShare& s : sched_->shares()) shares[s.pid].push_back(std::move(s));
  }
  const uint64_t keep_ns = static_cast<uint64_t>((o_.window_s + o_.read_period_s) * 1e9);
  for (auto& [pid, rank] : ranks_) {
    if (rank.exited) continue;
    Sample s;
    s.reading = reader_.read(pid, now_ns);
    if (sched_) {
      auto it = sums.find(pid);
      s.reading.sched = it == sums.end() ? SchedSums{} : std::move(it->second);
    }
    for (CpuShare& c : shares[pid]) s.shares[{c.other_pid, c.cpu}] = std::move(c);
    bool first = rank.recent.empty();
    rank.recent.push_back(s);
    if (first) rank.first = std::move(s);
    while (rank.recent.size() > 2 && now_ns - rank.recent[1].reading.ts_ns >= keep_ns) rank.recent.pop_front();
  }
}

std::vector<DeviceEvent> HostMonitor::judge(uint64_t now_ns, bool whole_session) {
  const uint64_t window_ns = static_cast<uint64_t>(o_.window_s * 1e9);
  std::map<std::string, std::vector<HostInterval>> by_job;
  for (const auto& [pid, rank] : ranks_) {
    if (rank.recent.size() < 2 || (rank.exited && !whole_session)) continue;
    const Sample& to = rank.recent.back();
    const Sample& from = whole_session ? rank.first : rank.recent.front();
    if (!whole_session && to.reading.ts_ns - from.reading.ts_ns + window_ns / 10 < window_ns)
      continue;  // too short yet
    std::vector<CpuShare> shares;
    for (const auto& [key, c] : to.shares) {
      auto was = from.shares.find(key);
      CpuShare d = c;
      d.ns = minus(c.ns, was == from.shares.end() ? 0 : was->second.ns);
      if (d.ns) shares.push_back(std::move(d));
    }
    by_job[rank.identity.job].push_back(host_interval(rank.identity, from.reading, to.reading, shares));
  }
  std::vector<DeviceEvent> events;
  std::set<std::pair<int32_t, std::string>> holding;
  const uint64_t refresh_ns = static_cast<uint64_t>(o_.refresh_s * 1e9);
  for (const auto& [job, intervals] : by_job) {
    std::vector<HostCause> causes = judge_host(intervals, o_.thresholds);
    // Over the whole session a connection with data at its start counts
    // as fresh with an RTT of its end: its round trips are judged live only.
    if (whole_session) std::erase_if(causes, [](const HostCause& c) { return c.type == "host.tcp_rtt"; });
    if (!whole_session)
      for (HostCause& c : recent_tcp(job, causes)) causes.push_back(std::move(c));
    drop_round_trips_beside_loss(causes);  // a loss the last 2 s said too
    for (const HostInterval& interval : intervals)
      for (HostCause& c : placement(ranks_.at(interval.rank.pid))) causes.push_back(std::move(c));
    for (const HostCause& c : causes) {
      std::pair<int32_t, std::string> key{c.pid, c.type};
      holding.insert(key);
      auto said = said_.find(key);
      if (whole_session ? said != said_.end() : said != said_.end() && now_ns - said->second < refresh_ns) continue;
      said_[key] = now_ns;
      events.push_back(host_event(c, now_ns, whole_session));
    }
  }
  // A cause that stopped holding is said again when it comes back.
  if (!whole_session) std::erase_if(said_, [&](const auto& entry) { return !holding.contains(entry.first); });
  return events;
}

// The job's ranks' TCP retransmissions over the last tcp_window_s, for the
// ranks whose window did not say them already.
std::vector<HostCause> HostMonitor::recent_tcp(const std::string& job, const std::vector<HostCause>& said) const {
  const uint64_t tcp_ns = static_cast<uint64_t>(o_.tcp_window_s * 1e9);
  std::vector<HostInterval> intervals;
  for (const auto& [pid, rank] : ranks_) {
    if (rank.identity.job != job || rank.exited || rank.recent.size() < 2) continue;
    const Sample& to = rank.recent.back();
    // The latest reading at least tcp_window_s before the last.
    auto from = std::find_if(rank.recent.rbegin(), rank.recent.rend(),
                             [&](const Sample& s) { return to.reading.ts_ns - s.reading.ts_ns >= tcp_ns; });
    if (from == rank.recent.rend()) continue;  // too short yet: no peer either
    intervals.push_back(host_interval(rank.identity, from->reading, to.reading, {}));
  }
  std::vector<HostCause> out;
  for (HostCause& c : judge_host(intervals, o_.thresholds)) {
    bool already =
        std::any_of(said.begin(), said.end(), [&](const HostCause& s) { return s.pid == c.pid && s.type == c.type; });
    if (c.type == "host.tcp_retrans" && !already) out.push_back(std::move(c));
  }
  return out;
}

// Its CPUs against its GPU's and NIC's NUMA node.
std::vector<HostCause> HostMonitor::placement(const Rank& rank) const {
  if (!o_.topology || cpu_nodes_.empty() || rank.recent.empty() || !rank.recent.back().reading.status) return {};
  std::vector<PlacedDevice> devices;
  for (const TopologyDevice& d : o_.topology->devices()) {
    if (!d.pci.numa_node || (d.role != DeviceRole::gpu && d.role != DeviceRole::nic)) continue;
    if (std::find(d.pids.begin(), d.pids.end(), rank.identity.pid) == d.pids.end()) continue;
    devices.push_back({d.role == DeviceRole::gpu ? "GPU" : "NIC", d.label, d.pci.bdf, *d.pci.numa_node});
  }
  return judge_numa_placement(rank.identity, rank.recent.back().reading.status->cpus_allowed, cpu_nodes_, devices);
}

std::vector<DeviceEvent> HostMonitor::poll(uint64_t now_ns) {
  if (now_ns < next_read_ns_ || ranks_.empty()) return {};
  next_read_ns_ = now_ns + static_cast<uint64_t>(o_.read_period_s * 1e9);
  read_all(now_ns);
  return judge(now_ns, false);
}

std::vector<DeviceEvent> HostMonitor::finish(uint64_t now_ns) {
  if (ranks_.empty()) return {};
  read_all(now_ns);
  return judge(now_ns, true);
}

}  // namespace slowburn
