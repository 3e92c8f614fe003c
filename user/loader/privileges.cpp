#include "loader/privileges.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/strings.h"

namespace slowburn {

namespace {
bool has_capability(uint64_t effective, int cap) { return (effective >> cap) & 1u; }
}  // namespace

std::vector<std::string> missing_load_capabilities(uint64_t effective) {
  if (has_capability(effective, kCapSysAdmin)) return {};
  std::vector<std::string> missing;
  if (!has_capability(effective, kCapBpf)) missing.push_back("CAP_BPF");
  if (!has_capability(effective, kCapPerfmon)) missing.push_back("CAP_PERFMON");
  return missing;
}

std::vector<std::string> missing_ptrace_capabilities(uint64_t effective) {
  if (has_capability(effective, kCapSysPtrace)) return {};
  return {"CAP_SYS_PTRACE"};
}

const char* tracing_privileges_hint() { return "run as root, or grant CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE"; }

Result<void> check_tracing_privileges() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return make_sys_error(errno, "capget failed");
  uint64_t effective = (static_cast<uint64_t>(data[1].effective) << 32) | data[0].effective;
  std::vector<std::string> missing = missing_load_capabilities(effective);
  for (const std::string& cap : missing_ptrace_capabilities(effective)) missing.push_back(cap);
  if (missing.empty()) return {};
  return make_error("tracing needs privileges: missing {} ({})", join(missing), tracing_privileges_hint());
}

}  // namespace slowburn
