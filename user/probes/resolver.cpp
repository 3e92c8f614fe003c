#include "probes/resolver.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <set>

#include "core/strings.h"

namespace slowburn {

namespace {

// Looks every symbol of a target up in one file; aliases collapse to one site.
std::vector<AttachSite> find_sites(const ElfSymbols& symbols, const ProbeTarget& target) {
  std::vector<AttachSite> sites;
  std::set<uint64_t> seen;
  for (const std::string& name : target.symbols) {
    for (const ElfSymbol& symbol : symbols.lookup(name)) {
      if (!seen.insert(symbol.address).second) continue;
      sites.push_back({symbol.name, symbol.demangled, symbol.address, symbol.file_offset});
    }
  }
  return sites;
}

std::vector<std::string> all_symbols(const ProbeSpec& spec) {
  std::vector<std::string> names;
  for (const ProbeTarget& target : spec.targets)
    names.insert(names.end(), target.symbols.begin(), target.symbols.end());
  return names;
}

}  // namespace

Result<std::shared_ptr<const ElfSymbols>> SymbolCache::get(const std::filesystem::path& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return make_sys_error(errno, "cannot stat " + path.string());
  auto key = std::make_pair(st.st_dev, st.st_ino);
  if (auto it = by_file_.find(key); it != by_file_.end()) return it->second;
  auto symbols = ElfSymbols::open(path);
  if (!symbols) return symbols.error();
  auto shared = std::make_shared<const ElfSymbols>(std::move(*symbols));
  by_file_.emplace(key, shared);
  return shared;
}

ProbeResolution resolve_in_file(const ProbeSpec& spec, const std::filesystem::path& file, SymbolCache& cache) {
  ProbeResolution result;
  result.spec = &spec;
  result.library = file.string();
  result.attach_path = file.string();
  auto symbols = cache.get(file);
  if (!symbols) {
    result.reason = symbols.error().message;
    return result;
  }
  std::vector<const ProbeTarget*> order;
  for (const ProbeTarget& t : spec.targets)
    if (library_name_matches(file.string(), t.library)) order.push_back(&t);
  if (order.empty())
    for (const ProbeTarget& t : spec.targets) order.push_back(&t);
  for (const ProbeTarget* target : order) {
    result.sites = find_sites(**symbols, *target);
    if (!result.sites.empty()) {
      result.resolved = true;
      return result;
    }
  }
  result.reason = fmt::format("symbol missing: {} has none of {}", file.filename().string(), join(all_symbols(spec)));
  return result;
}

Result<std::vector<MapEntry>> read_process_maps(const std::filesystem::path& proc_root, int32_t pid) {
  std::filesystem::path path = proc_root / std::to_string(pid) / "maps";
  std::ifstream in(path);
  if (!in) return make_sys_error(errno, "cannot read " + path.string());
  return parse_maps(in);
}

ProbeResolution resolve_in_process(const ProbeSpec& spec, const std::filesystem::path& proc_root, int32_t pid,
                                   const std::vector<MapEntry>& maps, SymbolCache& cache) {
  ProbeResolution result;
  result.spec = &spec;
  std::vector<std::string> notes;
  std::filesystem::path proc = proc_root / std::to_string(pid);
  for (const ProbeTarget& target : spec.targets) {
    auto mapping = find_library(maps, target.library);
    if (!mapping) {
      notes.push_back(fmt::format("{} not loaded", target.library));
      continue;
    }
    // Through the process's own root: a containerised job's library is its
    // own file, invisible at the same path from the host mount namespace. A
    // file replaced since it was mapped is still reachable via map_files.
    std::filesystem::path file = mapping->deleted
                                     ? proc / "map_files" / fmt::format("{:x}-{:x}", mapping->start, mapping->end)
                                     : proc / "root" / std::filesystem::path(mapping->path).relative_path();
    auto symbols = cache.get(file);
    if (!symbols) {
      notes.push_back(symbols.error().message);
      continue;
    }
    auto sites = find_sites(**symbols, target);
    if (sites.empty()) {
      notes.push_back(fmt::format("symbol missing: {} has none of {}", mapping->path, join(target.symbols)));
      continue;
    }
    result.resolved = true;
    result.library = mapping->path;
    result.attach_path = file.string();
    result.sites = std::move(sites);
    return result;
  }
  result.reason = join(notes);
  return result;
}

}  // namespace slowburn
