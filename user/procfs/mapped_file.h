// The file a process has mapped, opened as exactly that file. A path that
// the process names (/proc/PID/root/<path in maps>) is resolved by the
// kernel with the opener's root for absolute symlinks: a process in its own
// mount namespace can shadow its library's directory after loading it and
// make slowburn (root) read, or attach to, a host file of its choosing. So
// the file is reached through /proc/PID/map_files/<range> (the kernel's own
// reference to the mapped file), or where that is unavailable by resolving
// the path inside the process's root (openat2 RESOLVE_IN_ROOT, no magic
// links), and checked against the mapping's (device, inode) either way.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "procfs/maps.h"

namespace slowburn {

// An open descriptor, closed with its last owner.
class OwnedFd {
 public:
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd();
  int get() const { return fd_; }

 private:
  int fd_;
};

struct MappedFile {
  // What to read and to attach a uprobe through: the kernel resolves it to
  // the mapped inode. /proc/PID/map_files/START-END, or /proc/self/fd/N of
  // `fd` when the file was opened inside the process's root.
  std::filesystem::path path;
  std::shared_ptr<const OwnedFd> fd;  // keeps `path` valid as long as a copy lives
  dev_t device = 0;
  ino_t inode = 0;
};

// Opens the file of `mapping` (a line of proc_root/PID/maps). Fails, with
// what to do, when the process has exited, the range was unmapped, or the
// file found is not the one mapped (a different inode: the process's path
// no longer leads to what it loaded).
Result<MappedFile> open_mapped_file(const std::filesystem::path& proc_root, int32_t pid, const MapEntry& mapping);

}  // namespace slowburn
