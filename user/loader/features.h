// What this kernel can attach to, as one object: probed once on the real
// machine (KernelFeatures::host()), written by hand in unit tests, so every
// attach decision ("multi-uprobe links or perf links", "kprobes or not",
// "which tracepoints") is tested without root or the kernel it is about.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace slowburn {

struct KernelFeatures {
  std::string release;  // uname -r
  bool btf = false;     // /sys/kernel/btf/vmlinux: CO-RE programs need it
  // Multi-uprobe links with process (not thread) PID filtering: Linux 6.10+.
  bool uprobe_multi = false;
  // nullopt when kprobes work; else why not.
  std::optional<std::string> kprobes_missing;
  // The tracefs mount, or why there is none.
  std::optional<std::filesystem::path> tracefs;
  std::string tracefs_missing;
  // Whether a tracepoint exists; the host's reads tracefs.
  std::function<bool(const std::string& system, const std::string& event)> tracepoint;

  bool has_tracepoint(const std::string& system, const std::string& event) const {
    return tracefs && tracepoint && tracepoint(system, event);
  }

  // The running kernel, probed on first use (mounting tracefs if it may).
  static const KernelFeatures& host();
};

// nullopt when kprobes work; else why not.
std::optional<std::string> kprobes_unavailable_reason(const std::filesystem::path& sysfs_root = "/sys");

// Whether /proc/kallsyms lists a function (e.g. a driver's nvidia_isr).
bool kallsyms_has(const std::string& symbol, const std::filesystem::path& proc_root = "/proc");

}  // namespace slowburn
