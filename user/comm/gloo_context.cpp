#include "comm/gloo_context.h"

#include <algorithm>
#include <array>
#include <string>

#include "probes/resolver.h"
#include "procfs/mapped_file.h"
#include "procfs/maps.h"
#include "symbols/elf_symbols.h"

namespace slowburn {

namespace {

// The libraries a PyTorch rank's gloo lives in (the gloo probes' targets).
constexpr std::array kGlooLibraries{"libgloo.so", "libtorch_cpu.so"};
// The context classes: the base and the one rendezvous makes.
constexpr std::array kContextVtables{"_ZTVN4gloo7ContextE", "_ZTVN4gloo10rendezvous7ContextE"};
constexpr uint64_t kAddressPoint = 16;

}  // namespace

std::optional<GlooContext> read_gloo_context(const ProcessMemory& memory, uint64_t address) {
  int32_t rank = -1, size = -1;
  if (!address || !memory.read_value(address + 8, rank) || !memory.read_value(address + 12, size) || size <= 0 ||
      size > kGlooMaxSize || rank < 0 || rank >= size)
    return std::nullopt;
  return GlooContext{rank, size};
}

std::optional<GlooContext> read_gloo_context_checked(const ProcessMemory& memory, uint64_t address,
                                                     const std::vector<uint64_t>& vtables) {
  uint64_t vptr = 0;
  if (!address || !memory.read_value(address, vptr) || std::find(vtables.begin(), vtables.end(), vptr) == vtables.end())
    return std::nullopt;
  return read_gloo_context(memory, address);
}

std::vector<uint64_t> locate_gloo_vtables(const std::filesystem::path& proc_root, int32_t pid) {
  std::vector<uint64_t> found;
  auto maps = read_process_maps(proc_root, pid);
  if (!maps) return found;
  for (const char* stem : kGlooLibraries) {
    auto lib = find_library(*maps, stem);
    if (!lib) continue;
    // Where its offset 0 is mapped: the load bias (mpi_library.cpp does the same).
    auto first = std::find_if(maps->begin(), maps->end(),
                              [&](const MapEntry& m) { return m.path == lib->path && m.offset == 0 && !m.deleted; });
    if (first == maps->end()) continue;
    auto file = open_mapped_file(proc_root, pid, *first);
    if (!file) continue;
    auto symbols = ElfSymbols::open(file->path);
    if (!symbols) continue;
    for (const char* vtable : kContextVtables)
      if (auto at = symbols->object_address(vtable, first->start)) found.push_back(*at + kAddressPoint);
    // Gloo lives in one of them: Debian's libtorch_cpu (120 MB of symbols to
    // read) is not opened when libgloo has the vtables.
    if (!found.empty()) break;
  }
  return found;
}

}  // namespace slowburn
