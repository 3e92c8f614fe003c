// Probe resolution: where (file, offset) each probe attaches for a process
// or a library file, or precisely why it cannot.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "probes/catalog.h"
#include "procfs/mapped_file.h"
#include "procfs/maps.h"
#include "symbols/elf_symbols.h"

namespace slowburn {

struct AttachSite {
  std::string symbol;     // the name it resolved through
  std::string demangled;  // for C++ symbols, else empty
  uint64_t address = 0;
  uint64_t file_offset = 0;
};

struct ProbeResolution {
  const ProbeSpec* spec = nullptr;
  bool resolved = false;
  std::string library;  // the file as the process (or user) names it
  // The file we attach to: for a process, the very file it mapped
  // (/proc/PID/map_files/RANGE, or /proc/self/fd/N of `file`).
  std::string attach_path;
  std::vector<AttachSite> sites;
  std::string reason;                   // why not, when !resolved
  std::shared_ptr<const OwnedFd> file;  // keeps attach_path open where it names our descriptor
};

// Parsed symbol tables shared across processes that map the same file.
class SymbolCache {
 public:
  // Keyed by (device, inode, build id): two containers' different files of
  // one path are two entries, one file mapped by many ranks is one.
  Result<std::shared_ptr<const ElfSymbols>> get(const std::filesystem::path& path, const DebugInfoSearch& search = {});
  size_t size() const { return by_file_.size(); }

 private:
  std::map<std::tuple<dev_t, ino_t, std::string>, std::shared_ptr<const ElfSymbols>> by_file_;
};

// In a library or executable file the user named (slowburn catalog --lib,
// funclat). Targets whose soname matches the file's name come first; if none
// matches, the probe's symbols are still looked for in the file, so a
// renamed copy or a stand-in library works.
ProbeResolution resolve_in_file(const ProbeSpec& spec, const std::filesystem::path& file, SymbolCache& cache);

// In a running process: the first target library the process has mapped
// that holds the probe's symbols. `proc_root` is "/proc" outside tests.
ProbeResolution resolve_in_process(const ProbeSpec& spec, const std::filesystem::path& proc_root, int32_t pid,
                                   const std::vector<MapEntry>& maps, SymbolCache& cache);

// "mpi", "libmpi", "libmpi.so.40" -> the soname stem a mapping is matched by.
std::string soname_stem(const std::string& name);

// A library named without a path ("mpi", "libibverbs", "libnccl.so.2"):
// the first file of that soname stem in LD_LIBRARY_PATH, then the
// directories the dynamic loader and CUDA installs use.
Result<std::string> find_library_file(const std::string& name);

// Reads proc_root/PID/maps.
Result<std::vector<MapEntry>> read_process_maps(const std::filesystem::path& proc_root, int32_t pid);

}  // namespace slowburn
