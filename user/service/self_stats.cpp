#include "service/self_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <system_error>

namespace slowburn {

SelfStats read_self_stats(const std::filesystem::path& proc_root) {
  SelfStats s;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0)
    s.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  std::ifstream statm(proc_root / "self/statm");
  uint64_t size_pages = 0, resident_pages = 0;
  if (statm >> size_pages >> resident_pages)
    s.resident_bytes = resident_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(proc_root / "self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++s.open_fds;
  if (s.open_fds) --s.open_fds;  // the directory iterator's own descriptor
  return s;
}

}  // namespace slowburn
