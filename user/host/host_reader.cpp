#include "host/host_reader.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include "core/cpu_list.h"
#include "core/files.h"
#include "core/strings.h"
#include "host/host_parsers.h"

namespace slowburn {

namespace fs = std::filesystem;

namespace {

// A cgroup path ("/a/b") under a hierarchy directory.
fs::path under(const fs::path& hierarchy, const std::string& path) {
  return hierarchy / fs::path(path).relative_path();
}

}  // namespace

fs::path v1_hierarchy(const fs::path& root, const std::string& controller) {
  std::error_code ec;
  for (const std::string& name : {controller, controller + ",cpuacct", "cpuacct," + controller}) {
    fs::path dir = root / name;
    if (fs::exists(dir / "tasks", ec)) return dir;
  }
  return {};
}

fs::path v2_hierarchy(const fs::path& root) {
  std::error_code ec;
  if (fs::exists(root / "cgroup.controllers", ec)) return root;
  if (fs::exists(root / "unified" / "cgroup.controllers", ec)) return root / "unified";
  return {};
}

void HostReader::note(const fs::path& path, const std::string& problem) {
  if (noted_.insert(path.string()).second) notes_.push_back(fmt::format("{}: {}", path.string(), problem));
}

std::vector<std::string> HostReader::take_notes() { return std::exchange(notes_, {}); }

HostReading HostReader::read(int32_t pid, uint64_t now_ns) {
  HostReading reading;
  reading.ts_ns = now_ns;
  fs::path proc = o_.proc_root / std::to_string(pid);
  // A process that exits between two files leaves what was read: the
  // caller sees it gone on its next liveness check.
  if (auto text = read_file(proc / "stat")) {
    if (auto stat = parse_proc_stat(*text))
      reading.stat = std::move(*stat);
    else
      note(proc / "stat", stat.error().message);
  }
  if (auto text = read_file(proc / "status")) {
    if (auto status = parse_proc_status(*text))
      reading.status = std::move(*status);
    else
      note(proc / "status", status.error().message);
  }
  if (auto text = read_file(proc / "cgroup")) {
    if (auto m = parse_proc_cgroup(*text))
      reading.cgroup = read_cgroup(pid, *m);
    else
      note(proc / "cgroup", m.error().message);
  }
  reading.tcp = read_tcp(pid, now_ns);
  return reading;
}

Result<HostReader::Netns> HostReader::netns_of(int32_t pid) const {
  fs::path file = o_.proc_root / std::to_string(pid) / "ns/net";
  struct stat theirs {
  }, ours{};
  if (stat(file.c_str(), &theirs) != 0) return make_sys_error(errno, "cannot read " + file.string());
  bool own = stat((o_.proc_root / "self/ns/net").c_str(), &ours) == 0 && ours.st_ino == theirs.st_ino;
  return Netns{theirs.st_ino, own ? fs::path() : file};
}

Result<std::string> HostReader::tcp_source(int32_t pid) {
  if (!o_.tcp_sockets) return make_error("turned off");
  auto netns = netns_of(pid);
  if (!netns) return netns.error();
  auto sockets = o_.tcp_sockets(netns->enter);
  if (!sockets) return sockets.error();
  auto mine = socket_inodes(o_.proc_root, pid);
  if (!mine) return make_error("cannot read {}", (o_.proc_root / std::to_string(pid) / "fd").string());
  size_t its = 0;
  for (const TcpSocket& s : *sockets) its += mine->contains(s.inode);
  return fmt::format("sock_diag in {} network namespace: {} TCP sockets, {} of them its",
                     netns->enter.empty() ? "slowburn's" : "its own", sockets->size(), its);
}

std::optional<TcpReading> HostReader::read_tcp(int32_t pid, uint64_t now_ns) {
  if (!o_.tcp_sockets) return std::nullopt;
  if (tcp_read_ns_ != now_ns) {
    tcp_read_ns_ = now_ns;
    tcp_by_netns_.clear();
  }
  auto netns = netns_of(pid);
  if (!netns) return std::nullopt;  // gone, or no namespaces here
  auto known = tcp_by_netns_.find(netns->inode);
  if (known == tcp_by_netns_.end()) {
    auto sockets = o_.tcp_sockets(netns->enter);
    std::optional<std::map<uint64_t, TcpSocket>>& by_inode = tcp_by_netns_[netns->inode];
    if (!sockets) {
      note("TCP sockets", sockets.error().message);  // unread: no reading, not "none"
    } else {
      by_inode.emplace();
      for (TcpSocket& s : *sockets) by_inode->emplace(s.inode, std::move(s));
    }
    known = tcp_by_netns_.find(netns->inode);
  }
  const auto& dump = known->second;
  auto inodes = socket_fds_.read(o_.proc_root, pid, [&dump](uint64_t inode) { return dump && dump->contains(inode); });
  if (!dump || !inodes) return std::nullopt;
  TcpReading r;
  r.netns = netns->inode;
  for (uint64_t inode : *inodes) {
    auto it = dump->find(inode);
    if (it == dump->end()) continue;  // a UNIX or UDP socket
    const TcpSocket& k = it->second;
    r.by_inode[inode] = TcpCounts{k.total_retrans, k.bytes_sent, k.bytes_retrans, k.bytes_acked,
                                  k.rtt_us,        k.local,      k.remote,        k.state == kTcpEstablished};
    r.max_rtt_us = std::max(r.max_rtt_us, it->second.rtt_us);
  }
  return r;
}

std::optional<CgroupReading> HostReader::read_cgroup(int32_t, const CgroupMembership& m) {
  CgroupReading c;
  auto parse_into = [&](const fs::path& file, auto parse, auto& into) {
    auto text = read_file(file);
    if (!text) return false;  // absent here: that source is not on this node
    auto value = parse(*text);
    if (!value) {
      note(file, value.error().message);
      return false;
    }
    into = std::move(*value);
    return true;
  };
  fs::path v1_cpu = m.v1.contains("cpu") ? v1_hierarchy(o_.cgroup_root, "cpu") : fs::path();
  fs::path v2 = m.unified ? v2_hierarchy(o_.cgroup_root) : fs::path();
  if (!v1_cpu.empty()) {
    c.version = CgroupVersion::v1;
    c.cpu_path = m.v1.at("cpu");
    fs::path dir = under(v1_cpu, c.cpu_path);
    parse_into(dir / "cpu.stat", parse_cpu_stat, c.cpu_stat);
    auto quota = read_file(dir / "cpu.cfs_quota_us");
    auto period = read_file(dir / "cpu.cfs_period_us");
    if (quota && period) {
      if (auto q = parse_cfs_quota(*quota, *period))
        c.quota = *q;
      else
        note(dir / "cpu.cfs_quota_us", q.error().message);
    }
  } else if (!v2.empty()) {
    c.version = CgroupVersion::v2;
    c.cpu_path = *m.unified;
    fs::path dir = under(v2, c.cpu_path);
    parse_into(dir / "cpu.stat", parse_cpu_stat, c.cpu_stat);
    parse_into(dir / "cpu.max", parse_cpu_max, c.quota);
  } else {
    return std::nullopt;
  }
  // Memory and pressure: v2 where the process is in the unified hierarchy, else v1's memory controller.
  if (!v2.empty()) {
    fs::path dir = under(v2, *m.unified);
    parse_into(dir / "memory.events", parse_flat_keyed, c.memory_events);
    parse_into(dir / "cpu.pressure", parse_pressure, c.cpu_pressure);
    parse_into(dir / "memory.pressure", parse_pressure, c.memory_pressure);
    parse_into(dir / "io.pressure", parse_pressure, c.io_pressure);
  }
  if (c.memory_events.empty() && m.v1.contains("memory")) {
    if (fs::path mem = v1_hierarchy(o_.cgroup_root, "memory"); !mem.empty()) {
      fs::path dir = under(mem, m.v1.at("memory"));
      std::map<std::string, uint64_t> oom;
      if (parse_into(dir / "memory.oom_control", parse_flat_keyed, oom) && oom.contains("oom_kill"))
        c.memory_events["oom_kill"] = oom["oom_kill"];
      if (auto text = read_file(dir / "memory.failcnt"))
        if (auto n = parse_number<uint64_t>(trim_right(*text))) c.memory_events["failcnt"] = *n;
    }
  }
  return c;
}

std::string HostReader::cpu_source(int32_t pid) {
  auto text = read_file(o_.proc_root / std::to_string(pid) / "cgroup");
  if (!text) return text.error().message;
  auto m = parse_proc_cgroup(*text);
  if (!m) return m.error().message;
  if (m->v1.contains("cpu")) {
    fs::path h = v1_hierarchy(o_.cgroup_root, "cpu");
    if (!h.empty()) return fmt::format("cgroup v1 ({})", under(h, m->v1.at("cpu")).string());
  }
  if (m->unified) {
    fs::path h = v2_hierarchy(o_.cgroup_root);
    if (!h.empty()) return fmt::format("cgroup v2 ({})", under(h, *m->unified).string());
  }
  return fmt::format("no CPU cgroup hierarchy mounted under {}", o_.cgroup_root.string());
}

std::map<int, int> read_cpu_nodes(const std::filesystem::path& sysfs_root) {
  std::map<int, int> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(sysfs_root / "devices/system/node", ec)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with("node")) continue;
    auto node = parse_number<int>(std::string_view(name).substr(4));
    auto text = read_file(entry.path() / "cpulist");
    if (!node || !text) continue;
    if (auto cpus = parse_cpu_list(trim_right(*text)))
      for (int cpu : *cpus) out[cpu] = *node;
  }
  return out;
}

}  // namespace slowburn
