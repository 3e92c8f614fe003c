// libFuzzer target for the procfs and cgroup readers: a process writes its
// own environ, cmdline and comm (stat, status), and a container controls
// its cgroup files and what its mounts say. Every parser gets the whole
// input: /proc/PID/environ and cmdline (and the rank found in the
// environment), maps, stat, status, cgroup, cpu.stat, cpu.max, the v1
// quota pair, flat keyed files, PSI pressure, CapEff, lockdown, the kernel
// release and /proc/mounts. No crash, no hang, no out-of-bounds read (ASan
// and UBSan, `make fuzz`), and what they return holds together.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include "check/check_parsers.h"
#include "host/host_parsers.h"
#include "procfs/environ.h"
#include "procfs/maps.h"
#include "procfs/ranks.h"

using namespace slowburn;

namespace {

void check_environ(std::string_view raw) {
  Environment env = parse_environ(raw);
  for (const auto& [key, value] : env)
    if (key.empty() || key.find('=') != std::string::npos) std::abort();
  if (auto rank = identify_rank(env)) {
    if (rank->rank < 0) std::abort();
    if (rank->local_rank && *rank->local_rank < 0) std::abort();
    if (rank->world_size && *rank->world_size < 0) std::abort();
  }
  if (parse_cmdline(raw).size() > raw.size()) std::abort();
}

void check_maps(std::string_view text) {
  std::istringstream in{std::string(text)};
  auto maps = parse_maps(in);
  for (const MapEntry& entry : maps)
    if (entry.path.size() > text.size()) std::abort();
  if (auto lib = find_library(maps, "libmpi.so"); lib && !library_name_matches(lib->path, "libmpi.so")) std::abort();
  (void)find_library(maps, "libnccl.so");
}

void check_host_files(std::string_view text) {
  (void)parse_proc_stat(text);
  if (auto status = parse_proc_status(text))
    for (int cpu : status->cpus_allowed)
      if (cpu < 0) std::abort();
  (void)parse_proc_cgroup(text);
  (void)parse_cpu_stat(text);
  (void)parse_cpu_max(text);
  size_t newline = text.find('\n');
  (void)parse_cfs_quota(text.substr(0, newline), newline == std::string_view::npos ? "" : text.substr(newline + 1));
  (void)parse_flat_keyed(text);
  (void)parse_pressure(text);
}

void check_check_files(std::string_view text) {
  (void)parse_cap_effective(text);
  if (auto mode = parse_lockdown(text); mode && mode->size() > text.size()) std::abort();
  if (auto version = parse_kernel_release(text); version && (version->major < 0 || version->minor < 0)) std::abort();
  (void)tracefs_mount_point(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_environ(text);
  check_maps(text);
  check_host_files(text);
  check_check_files(text);
  return 0;
}
