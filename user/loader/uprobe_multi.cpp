#include "loader/uprobe_multi.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace slowburn {

namespace {

constexpr uint32_t kUprobeMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN

// The link_create member of union bpf_attr for uprobe_multi (uapi v6.6+).
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;
  uint32_t pid;
};

int link_create(const LinkCreateUprobeMulti& attr) {
  // The kernel checks that bytes past what it knows are zero: pass a
  // zeroed union bpf_attr-sized buffer.
  union bpf_attr raw;
  std::memset(&raw, 0, sizeof(raw));
  static_assert(sizeof(LinkCreateUprobeMulti) <= sizeof(raw));
  std::memcpy(&raw, &attr, sizeof(attr));
  return static_cast<int>(syscall(__NR_bpf, BPF_LINK_CREATE, &raw, sizeof(raw)));
}

bool probe() {
  struct bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},  // r0 = 0
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},                   // exit
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
  int prog_fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, nullptr, "GPL", insns, 2, &opts);
  if (prog_fd < 0) return false;
  uint64_t offset = 0;
  const char* root = "/";
  LinkCreateUprobeMulti attr{};
  attr.prog_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = kBpfTraceUprobeMulti;
  attr.path = reinterpret_cast<uint64_t>(root);
  attr.offsets = reinterpret_cast<uint64_t>(&offset);
  attr.cnt = 1;
  // Supported: "/" is not a regular file, -EBADF.
  int fd = link_create(attr);
  int err = errno;
  bool supported = fd < 0 && err == EBADF;
  if (fd >= 0) close(fd);
  if (supported) {
    // PID filtering fixed (process, not thread): pid -1 is rejected with
    // -EINVAL before the path is looked at.
    attr.pid = static_cast<uint32_t>(-1);
    fd = link_create(attr);
    err = errno;
    supported = fd < 0 && err == EINVAL;
    if (fd >= 0) close(fd);
  }
  close(prog_fd);
  return supported;
}

}  // namespace

bool kernel_has_uprobe_multi() {
  static const bool supported = probe();
  return supported;
}

Result<int> create_uprobe_multi_link(int prog_fd, const std::string& path, std::span<const uint64_t> offsets,
                                     std::span<const uint64_t> cookies, int32_t pid, bool is_return) {
  LinkCreateUprobeMulti attr{};
  attr.prog_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = kBpfTraceUprobeMulti;
  attr.path = reinterpret_cast<uint64_t>(path.c_str());
  attr.offsets = reinterpret_cast<uint64_t>(offsets.data());
  attr.cookies = reinterpret_cast<uint64_t>(cookies.data());
  attr.cnt = static_cast<uint32_t>(offsets.size());
  attr.multi_flags = is_return ? kUprobeMultiReturn : 0;
  attr.pid = pid > 0 ? static_cast<uint32_t>(pid) : 0;
  int fd = link_create(attr);
  if (fd < 0) return make_sys_error(errno, "cannot create a multi-uprobe link in " + path);
  return fd;
}

}  // namespace slowburn
