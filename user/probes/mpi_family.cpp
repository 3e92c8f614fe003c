#include "probes/mpi_family.h"

#include <algorithm>

namespace slowburn {

namespace {

bool exports_function(const ElfSymbols& symbols, std::string_view name) {
  auto found = symbols.lookup(name);
  return std::any_of(found.begin(), found.end(), [&](const ElfSymbol& s) { return s.dynamic && s.name == name; });
}

}  // namespace

std::string_view mpi_family_name(MpiFamily family) {
  switch (family) {
    case MpiFamily::open_mpi:
      return "Open MPI";
    case MpiFamily::mpich:
      return "MPICH ABI";
    case MpiFamily::unknown:
      break;
  }
  return "unknown MPI";
}

MpiFamily mpi_family(const ElfSymbols& symbols) {
  if (symbols.exported_object("ompi_mpi_comm_world")) return MpiFamily::open_mpi;
  // Every MPICH derivative keeps the error and attribute internals the
  // Fortran and C++ bindings call across the library boundary.
  for (std::string_view name : {"MPIR_Err_create_code", "MPIR_Err_return_comm", "MPII_Comm_get_attr"})
    if (exports_function(symbols, name)) return MpiFamily::mpich;
  return MpiFamily::unknown;
}

}  // namespace slowburn
