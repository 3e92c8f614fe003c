// Reads a process's host signals from procfs and its cgroups (v1 or v2,
// wherever its controllers are mounted under cgroup_root): the files
// host/host_parsers.h parses. A source the node lacks is left empty; a file
// that is there but malformed becomes a note naming it, once.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "host/host_signals.h"
#include "net/socket_inode_cache.h"
#include "net/tcp_diag.h"

namespace slowburn {

struct HostReaderOptions {
  std::filesystem::path proc_root = "/proc";
  std::filesystem::path cgroup_root = "/sys/fs/cgroup";
  // The TCP sockets of a network namespace (net/tcp_diag.h: a namespace
  // file, or empty for slowburn's own); none: not read.
  std::function<Result<std::vector<TcpSocket>>(const std::filesystem::path&)> tcp_sockets = read_tcp_sockets;
};

class HostReader {
 public:
  explicit HostReader(HostReaderOptions options) : o_(std::move(options)) {}

  // Everything but the sched sums (the kernel's, read elsewhere).
  HostReading read(int32_t pid, uint64_t now_ns);
  // Where CPU throttling is read from for pid: "cgroup v1 (/sys/fs/cgroup/cpu/...)" or why it is not.
  std::string cpu_source(int32_t pid);
  std::vector<std::string> take_notes();
  // Where pid's TCP sockets are read from ("sock_diag in its own network
  // namespace: 12 TCP sockets, 4 of them its"), or why they are not.
  Result<std::string> tcp_source(int32_t pid);
  // A rank that ended or left: what is kept of it between readings goes.
  void forget(int32_t pid) { socket_fds_.forget(pid); }

 private:
  std::optional<CgroupReading> read_cgroup(int32_t pid, const CgroupMembership& m);
  void note(const std::filesystem::path& path, const std::string& problem);
  std::optional<TcpReading> read_tcp(int32_t pid, uint64_t now_ns);
  // pid's network namespace: its inode, and the file to enter it by (empty
  // where it is slowburn's own: read without entering).
  struct Netns {
    uint64_t inode = 0;
    std::filesystem::path enter;
  };
  Result<Netns> netns_of(int32_t pid) const;

  HostReaderOptions o_;
  // One dump per network namespace serves every rank in it read at the
  // same now_ns: its sockets by inode.
  std::optional<uint64_t> tcp_read_ns_;
  std::map<uint64_t, std::optional<std::map<uint64_t, TcpSocket>>> tcp_by_netns_;  // unset: unreadable
  SocketInodeCache socket_fds_;  // each rank's socket fds, between readings
  std::set<std::string> noted_;
  std::vector<std::string> notes_;
};

// CPU -> NUMA node, from sysfs_root/devices/system/node/nodeN/cpulist;
// empty where the kernel has no NUMA directory.
std::map<int, int> read_cpu_nodes(const std::filesystem::path& sysfs_root);

// The directory of a cgroup v1 controller's hierarchy under root ("cpu" is
// mounted as cpu, cpu,cpuacct or cpuacct,cpu); empty when absent.
std::filesystem::path v1_hierarchy(const std::filesystem::path& root, const std::string& controller);
// The cgroup v2 hierarchy under root: root itself (unified) or root/unified (hybrid); empty when absent.
std::filesystem::path v2_hierarchy(const std::filesystem::path& root);

}  // namespace slowburn
