// Which MPI a library is, told by the symbols it exports rather than its
// file name: Intel MPI and MVAPICH ship libmpi.so.12 (the MPICH ABI) under
// the name Open MPI uses for libmpi.so.40. The family decides how a
// communicator handle is read (an Open MPI object pointer, an MPICH int).
#pragma once

#include <string_view>

#include "symbols/elf_symbols.h"

namespace slowburn {

enum class MpiFamily {
  unknown,   // exports MPI_* but neither family's internals: handles stay opaque
  open_mpi,  // exports ompi_mpi_comm_world: MPI_Comm is an object pointer
  mpich,     // exports MPIR_*/MPII_* internals: MPI_Comm is an int (MPICH, Intel MPI, MVAPICH, Cray MPICH)
};

std::string_view mpi_family_name(MpiFamily family);

// The library's MPI family; `unknown` for a file that is not an MPI library.
MpiFamily mpi_family(const ElfSymbols& symbols);

}  // namespace slowburn
