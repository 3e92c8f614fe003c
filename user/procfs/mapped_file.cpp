#include "procfs/mapped_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>

namespace slowburn {

namespace {

// O_NONBLOCK: a FIFO put where a library was must not hang the tracer
// (the type is checked right after).
constexpr int kOpenFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;

// The mapping's path resolved with the process's root as "/": absolute
// symlinks and ".." stay inside it, and no /proc magic link is followed.
Result<int> open_in_root(const std::filesystem::path& proc, const MapEntry& mapping) {
  int root = ::open((proc / "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return make_sys_error(errno, "cannot open " + (proc / "root").string());
  open_how how{};
  how.flags = kOpenFlags;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  std::string inside = std::filesystem::path(mapping.path).relative_path().string();
  long fd = ::syscall(SYS_openat2, root, inside.c_str(), &how, sizeof how);
  int saved = errno;
  ::close(root);
  if (fd < 0)
    return make_sys_error(saved, fmt::format("cannot open {} inside the root of {}{}", mapping.path, proc.string(),
                                             saved == ENOSYS ? " (openat2 needs Linux 5.6)" : ""));
  return static_cast<int>(fd);
}

}  // namespace

OwnedFd::~OwnedFd() {
  if (fd_ >= 0) ::close(fd_);
}

Result<MappedFile> open_mapped_file(const std::filesystem::path& proc_root, int32_t pid, const MapEntry& mapping) {
  std::filesystem::path proc = proc_root / std::to_string(pid);
  std::filesystem::path link = proc / "map_files" / fmt::format("{:x}-{:x}", mapping.start, mapping.end);
  int fd = ::open(link.c_str(), kOpenFlags);
  bool through_map_files = fd >= 0;
  if (!through_map_files) {
    int map_errno = errno;
    if (::access(proc.c_str(), F_OK) != 0)
      return make_error("pid {} has exited (its {} cannot be opened)", pid, mapping.path);
    // Without map_files (a kernel or procfs without it, a fixture tree) the
    // path is still resolved only inside the process's root; a file it
    // replaced since mapping is reachable only through map_files.
    if (mapping.deleted)
      return make_sys_error(map_errno, fmt::format("{} of pid {} was replaced or deleted since it was mapped, and {} "
                                                   "cannot be opened (run as root)",
                                                   mapping.path, pid, link.string()));
    auto opened = open_in_root(proc, mapping);
    if (!opened) return opened.error();
    fd = *opened;
  }
  auto owned = std::make_shared<const OwnedFd>(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return make_sys_error(errno, "cannot stat " + link.string());
  if (!S_ISREG(st.st_mode)) return make_error("{} of pid {} is not a regular file: not traced", mapping.path, pid);
  // map_files is the kernel's reference to the mapping itself, so only its
  // inode is compared: btrfs reports a subvolume's device to stat and the
  // superblock's in maps. A path resolved in the root must match in both.
  bool same_device = major(st.st_dev) == mapping.dev_major && minor(st.st_dev) == mapping.dev_minor;
  if (st.st_ino != mapping.inode || (!through_map_files && !same_device))
    return make_error(
        "{} of pid {} is not the file it mapped (device {:x}:{:x} inode {} in its maps, {:x}:{:x} inode {} found): "
        "the process changed its mappings or shadowed the path since it loaded the library; not traced (run again "
        "if it reloaded the library)",
        mapping.path, pid, mapping.dev_major, mapping.dev_minor, mapping.inode, major(st.st_dev), minor(st.st_dev),
        static_cast<uint64_t>(st.st_ino));
  MappedFile file;
  file.path = through_map_files ? link : std::filesystem::path(fmt::format("/proc/self/fd/{}", fd));
  file.fd = std::move(owned);
  file.device = st.st_dev;
  file.inode = st.st_ino;
  return file;
}

}  // namespace slowburn
