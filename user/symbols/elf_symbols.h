// Function symbols of an ELF file (.dynsym and .symtab), with the file offset
// a uprobe needs. C++ names can be asked for mangled, as a demangled
// signature ("ncclIbTest(void*, int*, int*)") or as a bare demangled name
// ("ncclIbTest"); only names that contain the identifier are demangled.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
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
  uint64_t file_offset = 0;  // where a uprobe attaches
  bool dynamic = false;      // from .dynsym (exported) rather than .symtab
  bool global = false;       // STB_GLOBAL or STB_WEAK
};

class ElfSymbols {
 public:
  static Result<ElfSymbols> open(const std::filesystem::path& path);

  ElfSymbols(ElfSymbols&&) noexcept;
  ElfSymbols& operator=(ElfSymbols&&) noexcept;
  ~ElfSymbols();

  // Every defined function matching the query (see the header comment);
  // symbols at the same address appear once, the exported name preferred.
  std::vector<ElfSymbol> lookup(std::string_view query) const;

  const std::filesystem::path& path() const { return path_; }
  size_t function_count() const;

 private:
  struct Table;
  ElfSymbols(std::filesystem::path path, std::unique_ptr<Table> table);

  std::filesystem::path path_;
  std::unique_ptr<Table> table_;
};

// abi::__cxa_demangle, or the input when it is not a mangled C++ name.
std::string demangle(const std::string& mangled);

}  // namespace slowburn
