#include "symbols/elf_symbols.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace slowburn {

struct ElfSymbols::Table {
  std::vector<ElfSymbol> functions;
  std::unordered_multimap<std::string_view, size_t> by_name;   // views into functions[i].name
  std::unordered_map<std::string, uint64_t> exported_objects;  // .dynsym data: name -> st_value
  std::string build_id;
  std::optional<std::filesystem::path> debug_file;
  std::optional<std::string> debuglink;
  bool has_symtab = false;  // its own .symtab, or one from a debug file
  uint64_t load_vaddr = 0;
};

namespace {

constexpr uint16_t kVersymHidden = 0x8000;  // VERSYM_HIDDEN: name@VER, not the default name@@VER

struct ElfHandle {
  int fd = -1;
  Elf* elf = nullptr;
  std::vector<char> image;  // from_bytes: the copy libelf reads (ELF_C_READ_MMAP_PRIVATE may convert in place)
  ElfHandle() = default;
  ElfHandle(const ElfHandle&) = delete;
  ElfHandle& operator=(const ElfHandle&) = delete;
  ~ElfHandle() {
    if (elf) elf_end(elf);
    if (fd >= 0) close(fd);
  }
  Result<void> open(const std::filesystem::path& path) {
    // O_NONBLOCK: a FIFO named as a library must not hang the tracer.
    int opened = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (opened < 0) return make_sys_error(errno, "cannot open " + path.string());
    return adopt(opened, path);
  }
  Result<void> adopt(int opened, const std::filesystem::path& path) {
    fd = opened;
    struct stat st;
    if (fstat(fd, &st) != 0) return make_sys_error(errno, "cannot stat " + path.string());
    if (!S_ISREG(st.st_mode)) return make_error("{} is not a regular file", path.string());
    elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    return check_kind(path.string());
  }
  Result<void> open_image(std::span<const std::byte> bytes, const std::string& name) {
    const char* first = reinterpret_cast<const char*>(bytes.data());
    image.assign(first, first + bytes.size());
    elf = image.empty() ? nullptr : elf_memory(image.data(), image.size());
    return check_kind(name);
  }
  // libelf reads any bytes as kind NONE without an error of its own: say
  // what is wrong rather than its "no error".
  Result<void> check_kind(const std::string& name) const {
    if (!elf) return make_error("{} is not an ELF file: {}", name, elf_errmsg(-1));
    if (elf_kind(elf) != ELF_K_ELF) return make_error("{} is not an ELF file (it does not begin with \\x7fELF)", name);
    return {};
  }
};

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Drops spaces except between two identifier characters ("unsigned long").
std::string normalise_signature(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ') {
      if (!out.empty() && identifier_char(out.back()) && i + 1 < text.size() && identifier_char(text[i + 1]))
        out += ' ';
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

struct LoadSegment {
  uint64_t vaddr, offset, filesz;
};

std::vector<LoadSegment> load_segments(Elf* elf) {
  std::vector<LoadSegment> segments;
  size_t count = 0;
  if (elf_getphdrnum(elf, &count) != 0) return segments;
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) && phdr.p_type == PT_LOAD)
      segments.push_back({phdr.p_vaddr, phdr.p_offset, phdr.p_filesz});
  }
  return segments;
}

// File offset of an address, through the main file's PT_LOAD segments: the
// same for symbols read from a separate debug file, whose sections are NOBITS.
std::optional<uint64_t> file_offset_of(const std::vector<LoadSegment>& segments, uint64_t address) {
  for (const LoadSegment& s : segments)
    if (address >= s.vaddr && address < s.vaddr + s.filesz) return address - s.vaddr + s.offset;
  return std::nullopt;
}

Elf_Scn* find_section(Elf* elf, Elf64_Word type, const char* name = nullptr) {
  size_t shstrndx = 0;
  elf_getshdrstrndx(elf, &shstrndx);
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != type) continue;
    if (!name) return scn;
    const char* section_name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (section_name && std::strcmp(section_name, name) == 0) return scn;
  }
  return nullptr;
}

std::string build_id_of(Elf* elf) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    size_t offset = 0, name_offset = 0, desc_offset = 0;
    GElf_Nhdr note;
    while ((offset = gelf_getnote(data, offset, &note, &name_offset, &desc_offset)) > 0) {
      if (note.n_type != NT_GNU_BUILD_ID || note.n_namesz != 4 ||
          std::memcmp(static_cast<char*>(data->d_buf) + name_offset, "GNU", 4) != 0)
        continue;
      std::string hex;
      const auto* bytes = static_cast<const unsigned char*>(data->d_buf) + desc_offset;
      for (size_t i = 0; i < note.n_descsz; ++i) hex += fmt::format("{:02x}", bytes[i]);
      return hex;
    }
  }
  return {};
}

// .gnu_debuglink: a file name, padding, then a CRC32 of the debug file.
std::optional<std::pair<std::string, uint32_t>> debuglink_of(Elf* elf) {
  Elf_Scn* scn = find_section(elf, SHT_PROGBITS, ".gnu_debuglink");
  if (!scn) return std::nullopt;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data || data->d_size < 8) return std::nullopt;
  const char* text = static_cast<const char*>(data->d_buf);
  size_t name_length = strnlen(text, data->d_size);
  size_t crc_at = (name_length + 4) & ~size_t{3};
  if (crc_at + 4 > data->d_size) return std::nullopt;
  uint32_t crc = 0;
  std::memcpy(&crc, text + crc_at, 4);
  return std::make_pair(std::string(text, name_length), crc);
}

uint32_t file_crc32(int fd) {
  uLong crc = crc32(0, nullptr, 0);
  std::vector<unsigned char> buffer(1 << 16);
  ssize_t n;
  off_t at = 0;
  while ((n = pread(fd, buffer.data(), buffer.size(), at)) > 0) {
    crc = crc32(crc, buffer.data(), static_cast<uInt>(n));
    at += n;
  }
  return static_cast<uint32_t>(crc);
}

// A regular file, opened without blocking on a FIFO; -1 otherwise.
int open_regular(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    return -1;
  }
  return fd;
}

// `inside` resolved with `root` as "/" (a process's root: its absolute
// symlinks and ".." stay inside it); -1 when absent or not a regular file.
int open_regular_in_root(const std::filesystem::path& root, const std::filesystem::path& inside) {
  int root_fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return -1;
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  std::string relative = inside.relative_path().string();
  int fd = static_cast<int>(::syscall(SYS_openat2, root_fd, relative.c_str(), &how, sizeof how));
  close(root_fd);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    return -1;
  }
  return fd;
}

// A debuglink names a file beside the library: a name with a directory in
// it (a crafted "../../etc/shadow") is not one.
bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

struct DebugCandidate {
  std::filesystem::path path;
  int fd = -1;  // open, owned by the caller
};

// Where gdb looks: /usr/lib/debug/.build-id/ab/cdef.debug, then the
// debuglink name next to the file, in .debug/, and under the debug dirs.
// For a file a process mapped, the neighbours are looked for where the
// process sees them: inside its root (search.process_root), by the
// directory it names the library with.
std::optional<DebugCandidate> find_debug_file(const std::filesystem::path& path,
                                              const std::optional<std::pair<std::string, uint32_t>>& link,
                                              const std::string& build_id, const DebugInfoSearch& search) {
  std::error_code ec;
  if (build_id.size() > 2) {
    for (const auto& dir : search.debug_dirs) {
      auto candidate = dir / ".build-id" / build_id.substr(0, 2) / (build_id.substr(2) + ".debug");
      if (int fd = open_regular(candidate); fd >= 0) return DebugCandidate{candidate, fd};
    }
  }
  if (!link || !plain_file_name(link->first)) return std::nullopt;
  bool in_process = !search.process_root.empty();
  std::filesystem::path dir =
      in_process ? search.process_dir : std::filesystem::weakly_canonical(path, ec).parent_path();
  std::vector<std::pair<std::filesystem::path, bool>> candidates = {{dir / link->first, in_process},
                                                                    {dir / ".debug" / link->first, in_process}};
  for (const auto& debug_dir : search.debug_dirs)
    candidates.push_back({debug_dir / dir.relative_path() / link->first, false});
  for (const auto& [candidate, inside_process] : candidates) {
    if (candidate == path) continue;
    int fd = inside_process ? open_regular_in_root(search.process_root, candidate) : open_regular(candidate);
    if (fd < 0) continue;
    if (file_crc32(fd) == link->second) return DebugCandidate{candidate, fd};  // not a stale copy
    close(fd);
  }
  return std::nullopt;
}

// Collects STT_FUNC / STT_GNU_IFUNC definitions of one symbol table, and
// its STT_OBJECT definitions into `objects` when given.
void read_symbol_table(Elf* elf, Elf_Scn* scn, bool dynamic, const std::vector<LoadSegment>& segments, Elf_Data* versym,
                       std::vector<ElfSymbol>& out, std::unordered_map<std::string, uint64_t>* objects = nullptr) {
  GElf_Shdr shdr;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!gelf_getshdr(scn, &shdr) || !data || shdr.sh_entsize == 0) return;
  size_t count = shdr.sh_size / shdr.sh_entsize;
  for (size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
    int type = GELF_ST_TYPE(sym.st_info);
    if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE || sym.st_value == 0) continue;
    if (type == STT_OBJECT && objects) {
      if (const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name); name && *name)
        objects->emplace(name, sym.st_value);
      continue;
    }
    if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
    const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
    auto offset = file_offset_of(segments, sym.st_value);
    if (!name || !*name || !offset) continue;
    ElfSymbol symbol;
    symbol.name = name;
    symbol.address = sym.st_value;
    symbol.size = sym.st_size;
    symbol.file_offset = *offset;
    symbol.dynamic = dynamic;
    int bind = GELF_ST_BIND(sym.st_info);
    symbol.global = bind == STB_GLOBAL || bind == STB_WEAK;
    GElf_Versym version;
    if (versym && gelf_getversym(versym, static_cast<int>(i), &version))
      symbol.hidden_version = (version & kVersymHidden) != 0;
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

bool same_signature(std::string_view a, std::string_view b) { return normalise_signature(a) == normalise_signature(b); }

std::string read_build_id(const std::filesystem::path& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return {};
  ElfHandle handle;
  if (!handle.open(path)) return {};
  return build_id_of(handle.elf);
}

ElfSymbols::ElfSymbols(std::filesystem::path path, std::unique_ptr<Table> table)
    : path_(std::move(path)), table_(std::move(table)) {}
ElfSymbols::ElfSymbols(ElfSymbols&&) noexcept = default;
ElfSymbols& ElfSymbols::operator=(ElfSymbols&&) noexcept = default;
ElfSymbols::~ElfSymbols() = default;

size_t ElfSymbols::function_count() const { return table_->functions.size(); }

std::optional<uint64_t> ElfSymbols::exported_object(const std::string& name) const {
  auto it = table_->exported_objects.find(name);
  if (it == table_->exported_objects.end()) return std::nullopt;
  return it->second;
}
std::optional<uint64_t> ElfSymbols::object_address(const std::string& name, uint64_t mapped_at) const {
  auto value = exported_object(name);
  if (!value) return std::nullopt;
  return mapped_at - table_->load_vaddr + *value;
}
const std::string& ElfSymbols::build_id() const { return table_->build_id; }
const std::optional<std::filesystem::path>& ElfSymbols::debug_file() const { return table_->debug_file; }
const std::optional<std::string>& ElfSymbols::debuglink() const { return table_->debuglink; }
bool ElfSymbols::stripped() const { return !table_->has_symtab; }

namespace {

// What the main file holds: build id, debuglink, .dynsym, its own .symtab.
struct MainTables {
  std::unique_ptr<ElfSymbols::Table> table;
  std::vector<LoadSegment> segments;
  std::vector<ElfSymbol> symtab;
  std::optional<std::pair<std::string, uint32_t>> debuglink;
};

// Reads the main file's tables; the caller may add a debug file's .symtab.
MainTables read_main_tables(Elf* elf) {
  MainTables main{std::make_unique<ElfSymbols::Table>(), load_segments(elf), {}, debuglink_of(elf)};
  ElfSymbols::Table& table = *main.table;
  table.build_id = build_id_of(elf);
  constexpr uint64_t kPage = 4096;
  // The first PT_LOAD maps the file's start (its vaddr and offset agree modulo the page).
  if (!main.segments.empty())
    table.load_vaddr = (main.segments.front().vaddr - main.segments.front().offset) & ~(kPage - 1);
  if (main.debuglink) table.debuglink = main.debuglink->first;
  if (Elf_Scn* dynsym = find_section(elf, SHT_DYNSYM)) {
    Elf_Scn* versym = find_section(elf, SHT_GNU_versym);
    read_symbol_table(elf, dynsym, true, main.segments, versym ? elf_getdata(versym, nullptr) : nullptr,
                      table.functions, &table.exported_objects);
  }
  if (Elf_Scn* scn = find_section(elf, SHT_SYMTAB)) {
    read_symbol_table(elf, scn, false, main.segments, nullptr, main.symtab);
    table.has_symtab = true;
  }
  return main;
}

// .symtab repeats the exported names: keep a .symtab entry only when its
// name is not already known from .dynsym. (Copies of the names: views into
// `functions` would dangle as it grows.)
void merge_symtab(ElfSymbols::Table& table, std::vector<ElfSymbol>& symtab) {
  std::unordered_set<std::string> exported;
  for (const ElfSymbol& s : table.functions) exported.insert(s.name);
  for (ElfSymbol& s : symtab)
    if (!exported.contains(s.name)) table.functions.push_back(std::move(s));
  for (size_t i = 0; i < table.functions.size(); ++i) table.by_name.emplace(table.functions[i].name, i);
}

}  // namespace

Result<ElfSymbols> ElfSymbols::open(const std::filesystem::path& path, const DebugInfoSearch& search) {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error("libelf initialisation failed: {}", elf_errmsg(-1));
  ElfHandle handle;
  if (auto ok = handle.open(path); !ok) return ok.error();
  MainTables main = read_main_tables(handle.elf);
  if (!main.table->has_symtab) {
    // Stripped: the full symbol table lives in the separate debug file.
    if (auto debug = find_debug_file(path, main.debuglink, main.table->build_id, search)) {
      ElfHandle separate;
      if (separate.adopt(debug->fd, debug->path)) {
        if (Elf_Scn* scn = find_section(separate.elf, SHT_SYMTAB)) {
          read_symbol_table(separate.elf, scn, false, main.segments, nullptr, main.symtab);
          main.table->debug_file = debug->path;
          main.table->has_symtab = true;
        }
      }
    }
  }
  merge_symtab(*main.table, main.symtab);
  return ElfSymbols(path, std::move(main.table));
}

Result<ElfSymbols> ElfSymbols::from_bytes(std::span<const std::byte> image, const std::string& name) {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error("libelf initialisation failed: {}", elf_errmsg(-1));
  ElfHandle handle;
  if (auto ok = handle.open_image(image, name); !ok) return ok.error();
  MainTables main = read_main_tables(handle.elf);
  merge_symtab(*main.table, main.symtab);
  return ElfSymbols(name, std::move(main.table));
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
  // ibv_modify_qp@IBVERBS_1.0 is a compat shim that calls ibv_modify_qp@@IBVERBS_1.1:
  // probing both would count each call twice.
  bool has_default = std::any_of(found.begin(), found.end(), [](const ElfSymbol& s) { return !s.hidden_version; });
  if (has_default) std::erase_if(found, [](const ElfSymbol& s) { return s.hidden_version; });
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
