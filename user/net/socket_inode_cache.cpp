#include "net/socket_inode_cache.h"

#include <system_error>

#include "net/tcp_diag.h"

namespace slowburn {

std::optional<std::set<uint64_t>> SocketInodeCache::read(const std::filesystem::path& proc_root, int32_t pid,
                                                         const std::function<bool(uint64_t)>& tcp_open) {
  links_read_ = links_kept_ = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(proc_root / std::to_string(pid) / "fd", ec);
  if (ec) {
    processes_.erase(pid);
    return std::nullopt;
  }
  Process& p = processes_[pid];
  bool full = p.readings++ % kFullScanEvery == 0;
  std::map<std::string, Fd> now;
  std::set<uint64_t> inodes;
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    Fd fd;
    auto before = p.fds.find(name);
    if (!full && before != p.fds.end() && (!before->second.tcp || tcp_open(before->second.socket_inode))) {
      fd = before->second;
      ++links_kept_;
    } else {
      std::error_code link_ec;
      std::string target = std::filesystem::read_symlink(it->path(), link_ec).string();
      if (link_ec) continue;  // the fd closed meanwhile
      ++links_read_;
      fd.socket_inode = socket_inode_of(target);
    }
    if (fd.socket_inode) {
      fd.tcp = fd.tcp || tcp_open(fd.socket_inode);
      inodes.insert(fd.socket_inode);
    }
    now.emplace(std::move(name), fd);
  }
  p.fds = std::move(now);
  return inodes;
}

}  // namespace slowburn
