// What this kernel can attach to, asked before loading, so a program that
// cannot run is switched off with its reason instead of failing the load.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace slowburn {

// nullopt when kprobes work; else why not.
std::optional<std::string> kprobes_unavailable_reason(const std::filesystem::path& sysfs_root = "/sys");

// Whether /proc/kallsyms lists a function (e.g. a driver's nvidia_isr).
bool kallsyms_has(const std::string& symbol, const std::filesystem::path& proc_root = "/proc");

}  // namespace slowburn
