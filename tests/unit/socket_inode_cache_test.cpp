// A rank's socket fds read again each second, a readlink only where an fd
// is new, a TCP socket closed, or every kFullScanEvery-th reading
// (net/socket_inode_cache.h). A /proc tree of links stands in for a rank.
#include "net/socket_inode_cache.h"

#include <gtest/gtest.h>

#include <set>

#include "support/temp_dir.h"

namespace slowburn::socket_inode_cache_test {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr int32_t kPid = 4242;

void link_fd(const fs::path& fds, const std::string& fd, const std::string& target) {
  fs::remove(fds / fd);
  fs::create_symlink(target, fds / fd);
}

TEST(SocketInodeCache, ReadsALinkOnlyWhereItMayHaveChanged) {
  TempDir dir;
  fs::path fds = dir.path() / std::to_string(kPid) / "fd";
  fs::create_directories(fds);
  link_fd(fds, "3", "socket:[100]");
  link_fd(fds, "4", "/dev/null");
  link_fd(fds, "5", "socket:[200]");
  std::set<uint64_t> open{100, 200};  // the TCP sockets of this reading's dump
  auto tcp_open = [&open](uint64_t inode) { return open.contains(inode); };
  SocketInodeCache cache;

  EXPECT_EQ(cache.read(dir.path(), kPid, tcp_open), (std::set<uint64_t>{100, 200}));
  EXPECT_EQ(cache.links_read(), 3u) << "the first reading reads every link";
  EXPECT_EQ(cache.read(dir.path(), kPid, tcp_open), (std::set<uint64_t>{100, 200}));
  EXPECT_EQ(cache.links_read(), 0u);
  EXPECT_EQ(cache.links_kept(), 3u);

  // fd 5 closed and reopened as another socket: its old one left the dump.
  link_fd(fds, "5", "socket:[300]");
  open = {100, 300};
  EXPECT_EQ(cache.read(dir.path(), kPid, tcp_open), (std::set<uint64_t>{100, 300}));
  EXPECT_EQ(cache.links_read(), 1u);
  // A new fd is read at once; a closed one is gone.
  link_fd(fds, "6", "socket:[500]");
  fs::remove(fds / "3");
  open = {300, 500};
  EXPECT_EQ(cache.read(dir.path(), kPid, tcp_open), (std::set<uint64_t>{300, 500}));
  EXPECT_EQ(cache.links_read(), 1u);

  // fd 4 (a file) reopened as a socket under the same number: nothing says
  // so but the full scan, at most kFullScanEvery readings later.
  link_fd(fds, "4", "socket:[400]");
  open = {300, 400, 500};
  unsigned late = 0;
  while (!cache.read(dir.path(), kPid, tcp_open)->contains(400)) {
    ++late;
    ASSERT_LT(late, SocketInodeCache::kFullScanEvery) << "fd 4's new socket was never read";
  }
  EXPECT_EQ(cache.links_read(), 3u) << "the full scan reads every link (fds 4, 5, 6)";

  fs::remove_all(dir.path() / std::to_string(kPid));
  EXPECT_FALSE(cache.read(dir.path(), kPid, tcp_open)) << "a process gone";
}

}  // namespace
}  // namespace slowburn::socket_inode_cache_test
