#include "probes/resolver.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>

#include "core/strings.h"
#include "procfs/mapped_file.h"

namespace slowburn {

namespace {

// Looks every symbol of a target up in one file; aliases collapse to one
// site. With an expected signature, a symbol of the same name and another
// signature is not a site: it goes to `unsupported`, demangled.
std::vector<AttachSite> find_sites(const ElfSymbols& symbols, const ProbeTarget& target,
                                   std::vector<std::string>* unsupported = nullptr) {
  std::vector<AttachSite> sites;
  std::set<uint64_t> seen;
  for (const std::string& name : target.symbols) {
    for (const ElfSymbol& symbol : symbols.lookup(name)) {
      std::string demangled = symbol.demangled.empty() ? demangle(symbol.name) : symbol.demangled;
      if (!target.signature.empty() && !same_signature(demangled, target.signature)) {
        if (unsupported) unsupported->push_back(demangled);
        continue;
      }
      if (!seen.insert(symbol.address).second) continue;
      sites.push_back({symbol.name, demangled == symbol.name ? "" : demangled, symbol.address, symbol.file_offset});
    }
  }
  return sites;
}

std::string missing_reason(const std::string& file, const ProbeTarget& target,
                           const std::vector<std::string>& unsupported) {
  if (!unsupported.empty())
    return fmt::format("unsupported: {} has {}; slowburn decodes {}", file, join(unsupported, ", "), target.signature);
  return fmt::format("symbol missing: {} has none of {}", file, join(target.symbols));
}

// A hidden function cannot be found in a stripped file: say how to get it.
std::string stripped_hint(const ElfSymbols& symbols) {
  if (!symbols.stripped()) return "";
  const std::string& id = symbols.build_id();
  return id.size() > 2 ? fmt::format(
                             " (the file is stripped: only exported functions are visible; install its debug "
                             "symbols, /usr/lib/debug/.build-id/{}/{}.debug)",
                             id.substr(0, 2), id.substr(2))
                       : " (the file is stripped and has no build id: only exported functions are visible)";
}

std::vector<std::string> all_symbols(const ProbeSpec& spec) {
  std::vector<std::string> names;
  for (const ProbeTarget& target : spec.targets)
    names.insert(names.end(), target.symbols.begin(), target.symbols.end());
  return names;
}

}  // namespace

Result<std::shared_ptr<const ElfSymbols>> SymbolCache::get(const std::filesystem::path& path,
                                                           const DebugInfoSearch& search) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return make_sys_error(errno, "cannot stat " + path.string());
  // The same file (device, inode) with the same contents (build id): a file
  // replaced in place by an upgrade gets a new entry.
  auto key = std::make_tuple(st.st_dev, st.st_ino, read_build_id(path));
  if (auto it = by_file_.find(key); it != by_file_.end()) return it->second;
  auto symbols = ElfSymbols::open(path, search);
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
  // Only for a file that is the probe's own library is a stripped symbol
  // table the reason worth telling.
  bool own_library = !order.empty();
  if (order.empty())
    for (const ProbeTarget& t : spec.targets) order.push_back(&t);
  std::vector<std::string> unsupported;
  const ProbeTarget* unsupported_target = nullptr;
  for (const ProbeTarget* target : order) {
    size_t before = unsupported.size();
    result.sites = find_sites(**symbols, *target, &unsupported);
    if (!result.sites.empty()) {
      result.resolved = true;
      return result;
    }
    if (unsupported.size() > before && !unsupported_target) unsupported_target = target;
  }
  // A function of the right name with another signature says more than
  // "missing": this library is a version slowburn does not decode.
  result.reason = unsupported_target
                      ? missing_reason(file.filename().string(), *unsupported_target, unsupported)
                      : fmt::format("symbol missing: {} has none of {}{}", file.filename().string(),
                                    join(all_symbols(spec)), own_library ? stripped_hint(**symbols) : "");
  return result;
}

std::string soname_stem(const std::string& name) {
  std::string stem = name.rfind("lib", 0) == 0 ? name : "lib" + name;
  if (stem.find(".so") == std::string::npos) stem += ".so";
  return stem;
}

Result<std::string> find_library_file(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("LD_LIBRARY_PATH")) dirs = split(env, ':');
  for (const char* dir :
       {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
        "/lib64", "/usr/lib64", "/usr/lib", "/usr/local/lib", "/usr/local/cuda/lib64", "/usr/local/cuda/lib"})
    dirs.push_back(dir);
  std::string stem = soname_stem(name);
  for (const std::string& dir : dirs) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
      if (library_name_matches(entry.path().string(), stem)) return entry.path().string();
  }
  return make_error("library '{}' not found in LD_LIBRARY_PATH or the usual library directories; give its path", name);
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
    // The very file the process mapped (procfs/mapped_file.h): a
    // containerised job's library is its own file, and a path it names can
    // be made to lead to a host file.
    auto file = open_mapped_file(proc_root, pid, *mapping);
    if (!file) {
      notes.push_back(file.error().message);
      continue;
    }
    DebugInfoSearch search;
    search.process_root = proc / "root";
    search.process_dir = std::filesystem::path(mapping->path).parent_path();
    auto symbols = cache.get(file->path, search);
    if (!symbols) {
      notes.push_back(symbols.error().message);
      continue;
    }
    std::vector<std::string> unsupported;
    auto sites = find_sites(**symbols, target, &unsupported);
    if (sites.empty()) {
      notes.push_back(missing_reason(mapping->path, target, unsupported) +
                      (unsupported.empty() ? stripped_hint(**symbols) : ""));
      continue;
    }
    result.resolved = true;
    result.library = mapping->path;
    result.attach_path = file->path.string();
    result.file = file->fd;
    result.sites = std::move(sites);
    return result;
  }
  result.reason = join(notes);
  return result;
}

}  // namespace slowburn
