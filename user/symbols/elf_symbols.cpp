#include "symbols/elf_symbols.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

namespace slowburn {

struct ElfSymbols::Table {
  std::vector<ElfSymbol> functions;
  std::unordered_multimap<std::string_view, size_t> by_name;  // views into functions[i].name
};

namespace {

struct ElfHandle {
  int fd = -1;
  Elf* elf = nullptr;
  ~ElfHandle() {
    if (elf) elf_end(elf);
    if (fd >= 0) close(fd);
  }
};

// Strips parameter list and whitespace differences: "f(int, char*)" and
// "f(int,char*)" compare equal.
std::string normalise_signature(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ') {
      // Keep a space only between two identifier characters ("unsigned long").
      bool left = !out.empty() && (std::isalnum(static_cast<unsigned char>(out.back())) || out.back() == '_');
      bool right = i + 1 < text.size() && (std::isalnum(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '_');
      if (left && right) out += ' ';
      continue;
    }
    out += c;
  }
  return out;
}

std::string_view base_name(std::string_view demangled) {
  size_t paren = demangled.find('(');
  return paren == std::string_view::npos ? demangled : demangled.substr(0, paren);
}

// Collects STT_FUNC / STT_GNU_IFUNC definitions of one symbol table.
void read_symbol_table(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr, bool dynamic, std::vector<ElfSymbol>& out) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data || shdr.sh_entsize == 0) return;
  size_t count = shdr.sh_size / shdr.sh_entsize;
  for (size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
    int type = GELF_ST_TYPE(sym.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE ||
        sym.st_value == 0)
      continue;
    const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (!name || !*name) continue;
    // File offset = address - section address + section file offset.
    Elf_Scn* home = elf_getscn(elf, sym.st_shndx);
    GElf_Shdr home_shdr;
    if (!home || !gelf_getshdr(home, &home_shdr) || home_shdr.sh_type == SHT_NOBITS) continue;
    ElfSymbol symbol;
    symbol.name = name;
    symbol.address = sym.st_value;
    symbol.size = sym.st_size;
    symbol.file_offset = sym.st_value - home_shdr.sh_addr + home_shdr.sh_offset;
    symbol.dynamic = dynamic;
    int bind = GELF_ST_BIND(sym.st_info);
    symbol.global = bind == STB_GLOBAL || bind == STB_WEAK;
    out.push_back(std::move(symbol));
  }
}

}  // namespace

std::string demangle(const std::string& mangled) {
  if (mangled.rfind("_Z", 0) != 0) return mangled;
  int status = 0;
  char* text = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !text) return mangled;
  std::string result(text);
  std::free(text);
  return result;
}

ElfSymbols::ElfSymbols(std::filesystem::path path, std::unique_ptr<Table> table)
    : path_(std::move(path)), table_(std::move(table)) {}
ElfSymbols::ElfSymbols(ElfSymbols&&) noexcept = default;
ElfSymbols& ElfSymbols::operator=(ElfSymbols&&) noexcept = default;
ElfSymbols::~ElfSymbols() = default;

size_t ElfSymbols::function_count() const { return table_->functions.size(); }

Result<ElfSymbols> ElfSymbols::open(const std::filesystem::path& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error("libelf initialisation failed: {}", elf_errmsg(-1));
  ElfHandle handle;
  handle.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (handle.fd < 0) return make_sys_error(errno, "cannot open " + path.string());
  handle.elf = elf_begin(handle.fd, ELF_C_READ_MMAP, nullptr);
  if (!handle.elf || elf_kind(handle.elf) != ELF_K_ELF)
    return make_error("{} is not an ELF file: {}", path.string(), elf_errmsg(-1));

  auto table = std::make_unique<Table>();
  std::vector<ElfSymbol> symtab;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(handle.elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    if (shdr.sh_type == SHT_DYNSYM)
      read_symbol_table(handle.elf, scn, shdr, true, table->functions);
    else if (shdr.sh_type == SHT_SYMTAB)
      read_symbol_table(handle.elf, scn, shdr, false, symtab);
  }
  // .symtab repeats the exported names: keep a .symtab entry only when its
  // name is not already known from .dynsym.
  // (Copies of the names: views into `functions` would dangle as it grows.)
  std::unordered_set<std::string> exported;
  for (const ElfSymbol& s : table->functions) exported.insert(s.name);
  for (ElfSymbol& s : symtab)
    if (!exported.contains(s.name)) table->functions.push_back(std::move(s));
  for (size_t i = 0; i < table->functions.size(); ++i) table->by_name.emplace(table->functions[i].name, i);
  return ElfSymbols(path, std::move(table));
}

std::vector<ElfSymbol> ElfSymbols::lookup(std::string_view query) const {
  std::vector<ElfSymbol> found;
  auto [first, last] = table_->by_name.equal_range(query);
  for (auto it = first; it != last; ++it) found.push_back(table_->functions[it->second]);

  if (found.empty()) {
    // A C++ name: demangle only the candidates whose mangled form contains the
    // identifier (mangling keeps identifiers verbatim), compare demangled.
    std::string wanted = normalise_signature(query);
    bool with_signature = wanted.find('(') != std::string::npos;
    std::string_view identifier = base_name(wanted);
    size_t scope = identifier.rfind("::");
    if (scope != std::string_view::npos) identifier = identifier.substr(scope + 2);
    for (const ElfSymbol& s : table_->functions) {
      if (s.name.rfind("_Z", 0) != 0 || s.name.find(identifier) == std::string::npos) continue;
      std::string text = demangle(s.name);
      std::string normalised = normalise_signature(text);
      bool match = with_signature ? normalised == wanted : base_name(normalised) == wanted;
      if (!match) continue;
      ElfSymbol copy = s;
      copy.demangled = std::move(text);
      found.push_back(std::move(copy));
    }
  }
  // Aliases (MPI_Allreduce / PMPI_Allreduce) share an address: attach once.
  std::sort(found.begin(), found.end(), [](const ElfSymbol& a, const ElfSymbol& b) {
    return std::tie(a.address, b.dynamic, b.global) < std::tie(b.address, a.dynamic, a.global);
  });
  found.erase(std::unique(found.begin(), found.end(),
                          [](const ElfSymbol& a, const ElfSymbol& b) { return a.address == b.address; }),
              found.end());
  return found;
}

}  // namespace slowburn
