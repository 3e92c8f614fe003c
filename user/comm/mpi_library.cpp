#include "comm/mpi_library.h"

#include "probes/resolver.h"
#include "procfs/mapped_file.h"
#include "symbols/elf_symbols.h"

namespace slowburn {

namespace {

// ompi_mpi_comm_world in one mapped file: its load bias (where offset 0 is
// mapped, less its link-time address: non-zero for a non-PIE executable)
// plus the symbol's value.
std::optional<uint64_t> world_in(const std::filesystem::path& proc_root, int32_t pid, const std::vector<MapEntry>& maps,
                                 const std::string& path) {
  const MapEntry* first = nullptr;
  for (const MapEntry& m : maps)
    if (m.path == path && m.offset == 0 && !m.deleted) {
      first = &m;
      break;
    }
  if (!first) return std::nullopt;
  // The file it mapped, not what its path leads to now (procfs/mapped_file.h).
  auto file = open_mapped_file(proc_root, pid, *first);
  if (!file) return std::nullopt;
  auto symbols = ElfSymbols::open(file->path);
  if (!symbols) return std::nullopt;
  return symbols->object_address("ompi_mpi_comm_world", first->start);
}

// The MPI library a rank mapped, its family told by its symbols; for Open
// MPI, where MPI_COMM_WORLD lives: a C program's copy relocation puts it in
// the executable (its handle is that copy), otherwise it is libmpi's own;
// for MPICH, the library's writable mappings and the anonymous one right
// after them (the rest of its .bss).
}  // namespace

MpiLibrary locate_mpi(const std::filesystem::path& proc_root, int32_t pid) {
  MpiLibrary found;
  auto maps = read_process_maps(proc_root, pid);
  if (!maps) return found;
  std::optional<MapEntry> lib;
  for (const std::string& stem : mpi_library_stems())
    if ((lib = find_library(*maps, stem))) break;
  if (!lib) return found;
  auto file = open_mapped_file(proc_root, pid, *lib);
  if (!file) return found;
  auto symbols = ElfSymbols::open(file->path);
  if (!symbols) return found;
  found.family = mpi_family(*symbols);
  if (found.family == MpiFamily::open_mpi) {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink(proc_root / std::to_string(pid) / "exe", ec);
    if (!ec)
      if (auto world = world_in(proc_root, pid, *maps, exe.string())) found.ompi_worlds.push_back(*world);
    if (auto world = world_in(proc_root, pid, *maps, lib->path)) found.ompi_worlds.push_back(*world);
  } else if (found.family == MpiFamily::mpich) {
    uint64_t last_end = 0;
    for (const MapEntry& m : *maps) {
      bool writable = m.perms.size() > 1 && m.perms[1] == 'w';
      if (writable && (m.path == lib->path || (m.path.empty() && m.start == last_end && last_end))) {
        found.mpich_data.push_back({m.start, m.end});
        last_end = m.path.empty() ? 0 : m.end;
      } else if (m.path != lib->path) {
        last_end = 0;
      }
    }
  }
  return found;
}

}  // namespace slowburn
