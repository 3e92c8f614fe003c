#include "loader/features.h"

#include <sys/utsname.h>

#include <fstream>
#include <sstream>

#include "loader/uprobe_multi.h"
#include "tracefs/tracefs.h"

namespace slowburn {

std::optional<std::string> kprobes_unavailable_reason(const std::filesystem::path& sysfs_root) {
  std::error_code ec;
  // libbpf attaches kprobes through the kprobe PMU, or the legacy
  // kprobe_events file; a kernel without CONFIG_KPROBE_EVENTS has neither.
  if (std::filesystem::exists(sysfs_root / "bus/event_source/devices/kprobe", ec)) return std::nullopt;
  for (const char* legacy : {"kernel/tracing/kprobe_events", "kernel/debug/tracing/kprobe_events"})
    if (std::filesystem::exists(sysfs_root / legacy, ec)) return std::nullopt;
  return "kernel lacks kprobes (no CONFIG_KPROBE_EVENTS: no kprobe PMU, no kprobe_events)";
}

bool kallsyms_has(const std::string& symbol, const std::filesystem::path& proc_root) {
  std::ifstream in(proc_root / "kallsyms");
  std::string line;
  while (std::getline(in, line)) {
    // "ffffffffc0a01230 t nvidia_isr\t[nvidia]"
    size_t second = line.find(' ', line.find(' ') + 1);
    if (second == std::string::npos) continue;
    size_t end = line.find_first_of("\t ", second + 1);
    if (line.compare(second + 1, end == std::string::npos ? std::string::npos : end - second - 1, symbol) == 0)
      return true;
  }
  return false;
}

namespace {

KernelFeatures probe_host() {
  KernelFeatures f;
  utsname name{};
  if (uname(&name) == 0) f.release = name.release;
  std::error_code ec;
  f.btf = std::filesystem::exists("/sys/kernel/btf/vmlinux", ec);
  f.uprobe_multi = kernel_has_uprobe_multi();
  f.kprobes_missing = kprobes_unavailable_reason();
  if (auto tracefs = ensure_tracefs()) {
    f.tracefs = *tracefs;
    f.tracepoint = [root = *tracefs](const std::string& system, const std::string& event) {
      return tracepoint_exists(root, system, event);
    };
  } else {
    f.tracefs_missing = tracefs.error().message;
  }
  return f;
}

}  // namespace

const KernelFeatures& KernelFeatures::host() {
  static const KernelFeatures features = probe_host();
  return features;
}

}  // namespace slowburn
