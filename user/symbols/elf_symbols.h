// Function symbols of an ELF file (.dynsym with symbol versions, .symtab,
// and the .symtab of separate debug info found through the build id or
// .gnu_debuglink), with the file offset a uprobe needs. C++ names can be
// asked for mangled, as a demangled signature ("ncclIbTest(void*, int*,
// int*)") or as a bare demangled name ("ncclIbTest"); only names that
// contain the identifier are demangled. libelf reads the file through mmap:
// the 218 MB libnccl.so.2 costs its symbol tables, not its size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace slowburn {

struct ElfSymbol {
  std::string name;       // as stored (mangled for C++)
  std::string demangled;  // filled by lookups that demangle; else empty
  uint64_t address = 0;   // st_value
  uint64_t size = 0;
  uint64_t file_offset = 0;     // where a uprobe attaches
  bool dynamic = false;         // from .dynsym (exported) rather than .symtab
  bool global = false;          // STB_GLOBAL or STB_WEAK
  bool hidden_version = false;  // a non-default symbol version (name@VER, not name@@VER): a compat entry
};

// Where separate debug info is looked for.
struct DebugInfoSearch {
  std::vector<std::filesystem::path> debug_dirs = {"/usr/lib/debug"};
  // For a file a process mapped (opened through /proc/PID/map_files, a path
  // that says nothing of where it lives): .gnu_debuglink neighbours are
  // opened inside `process_root` (/proc/PID/root, RESOLVE_IN_ROOT), in
  // `process_dir`, the library's directory as the process names it. Empty:
  // beside the file's own path.
  std::filesystem::path process_root;
  std::filesystem::path process_dir;
};

class ElfSymbols {
 public:
  static Result<ElfSymbols> open(const std::filesystem::path& path, const DebugInfoSearch& search = {});
  // The same tables read from an ELF image in memory (copied: libelf may
  // convert in place), named `name` in errors. No separate debug file is
  // looked for (there is no file to look beside), but .gnu_debuglink is read.
  // For files slowburn did not open itself, and the fuzzer.
  static Result<ElfSymbols> from_bytes(std::span<const std::byte> image, const std::string& name = "ELF image");

  ElfSymbols(ElfSymbols&&) noexcept;
  ElfSymbols& operator=(ElfSymbols&&) noexcept;
  ~ElfSymbols();

  // Every defined function matching the query (see the header comment);
  // symbols at the same address appear once, the exported name preferred;
  // a name that has a default version hides its compat versions.
  std::vector<ElfSymbol> lookup(std::string_view query) const;

  // An exported data object's link-time address (st_value).
  std::optional<uint64_t> exported_object(const std::string& name) const;
  // Its address in a process that mapped this file's offset 0 at
  // `mapped_at`: the link-time address plus the load bias, which is
  // `mapped_at` less the link-time address of offset 0 (0 for a shared
  // library or a PIE, 0x400000 for a non-PIE executable such as Debian's
  // /usr/bin/python3.11).
  std::optional<uint64_t> object_address(const std::string& name, uint64_t mapped_at) const;

  const std::filesystem::path& path() const { return path_; }
  size_t function_count() const;
  const std::string& build_id() const;  // hex, empty when the file has none
  // The separate debug file whose .symtab was read, if one was.
  const std::optional<std::filesystem::path>& debug_file() const;
  // The debug file name .gnu_debuglink asks for, when the file has one.
  const std::optional<std::string>& debuglink() const;
  // No .symtab of its own and no debug file found: only exported names are known.
  bool stripped() const;

  // The tables read (defined in elf_symbols.cpp; public only so that its
  // file-local readers can fill one).
  struct Table;

 private:
  ElfSymbols(std::filesystem::path path, std::unique_ptr<Table> table);

  std::filesystem::path path_;
  std::unique_ptr<Table> table_;
};

// abi::__cxa_demangle, or the input when it is not a mangled C++ name.
std::string demangle(const std::string& mangled);

// Whether two C++ signatures are the same up to spacing:
// "f(int, char*)" == "f(int,char*)".
bool same_signature(std::string_view a, std::string_view b);

// Just the build id of a file (cheap: the notes only); empty when none.
std::string read_build_id(const std::filesystem::path& path);

}  // namespace slowburn
