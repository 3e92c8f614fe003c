#include "loader/privileges.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

namespace slowburn {

namespace {
// CAP_BPF and CAP_PERFMON arrived in Linux 5.8; older headers lack them.
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

bool has_capability(const __user_cap_data_struct data[2], int cap) {
  return data[cap / 32].effective & (1u << (cap % 32));
}
}  // namespace

const char* tracing_privileges_hint() { return "run as root, or grant CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE"; }

Result<void> check_tracing_privileges() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return make_sys_error(errno, "capget failed");
  std::string missing;
  const std::pair<int, const char*> needed[] = {
      {kCapBpf, "CAP_BPF"}, {kCapPerfmon, "CAP_PERFMON"}, {CAP_SYS_PTRACE, "CAP_SYS_PTRACE"}};
  bool admin = has_capability(data, CAP_SYS_ADMIN);
  for (auto [cap, name] : needed) {
    // CAP_SYS_ADMIN implies the BPF and perf capabilities on every kernel.
    if (admin && cap != CAP_SYS_PTRACE) continue;
    if (!has_capability(data, cap)) missing += (missing.empty() ? "" : ", ") + std::string(name);
  }
  if (missing.empty()) return {};
  return make_error("tracing needs privileges: missing {} ({})", missing, tracing_privileges_hint());
}

}  // namespace slowburn
