// A process's socket inodes, read again each second without a readlink per
// fd: the directory listing is one call, a readlink one call per fd (~7 us
// here: a rank with thousands of fds, a data loader's, cost tens of ms a
// reading; bench/RESULTS.md 29). An fd seen before keeps its target unless
// it was a TCP socket that is no longer open (the caller's dump says so),
// or until every kFullScanEvery-th reading, which reads every link again:
// an fd closed and reopened under the same number between two readings is
// seen at most that many readings late.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace slowburn {

class SocketInodeCache {
 public:
  static constexpr unsigned kFullScanEvery = 10;

  // The socket inodes among proc_root/PID/fd's links, as socket_inodes
  // (net/tcp_diag.h) returns them; tcp_open(inode) says whether a TCP
  // socket is still open (in this reading's dump). nullopt where the
  // directory cannot be read (the process's entry is then forgotten).
  std::optional<std::set<uint64_t>> read(const std::filesystem::path& proc_root, int32_t pid,
                                         const std::function<bool(uint64_t)>& tcp_open);
  // A process that ended: its fds are not kept (nor found by a process
  // that reuses its pid).
  void forget(int32_t pid) { processes_.erase(pid); }
  // What the last read cost: links read, and fds whose target was kept.
  unsigned links_read() const { return links_read_; }
  unsigned links_kept() const { return links_kept_; }

 private:
  struct Fd {
    uint64_t socket_inode = 0;  // 0: not a socket
    bool tcp = false;           // was in a TCP dump: watched for closing
  };
  struct Process {
    std::map<std::string, Fd> fds;
    unsigned readings = 0;
  };
  std::map<int32_t, Process> processes_;
  unsigned links_read_ = 0;
  unsigned links_kept_ = 0;
};

}  // namespace slowburn
