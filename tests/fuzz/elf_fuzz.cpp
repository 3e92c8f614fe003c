// libFuzzer target for the ELF symbol reader (symbols/elf_symbols.h), on
// images in memory: crafted and truncated files, bad section and program
// headers, symbol counts larger than their sections, bad notes and
// .gnu_debuglink. A mapped library is a file the traced process chose, so
// no image may crash, hang or read out of bounds (ASan and UBSan, `make
// fuzz`), and what is read holds together: every function has a name.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "symbols/elf_symbols.h"

using namespace slowburn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto symbols = ElfSymbols::from_bytes(std::as_bytes(std::span(data, size)), "fuzz.so");
  if (!symbols) {
    if (symbols.error().message.empty()) std::abort();
    return 0;
  }
  (void)symbols->build_id();
  (void)symbols->debuglink();
  (void)symbols->stripped();
  (void)symbols->exported_object("ompi_mpi_comm_world");
  // A lookup by name, and the demangling path on every C++ name with an "f"
  // or "a" in it (crafted mangled names reach the demangler).
  for (const char* query : {"MPI_Allreduce", "f", "a::a", "f(int)"})
    for (const ElfSymbol& s : symbols->lookup(query))
      if (s.name.empty()) std::abort();
  return 0;
}
