// The MPI library a rank mapped, which ABI family it is, and where in the
// rank's memory its communicators can be found: what the communicator
// readers (comm/ompi_comm.h, comm/mpich_comm.h) start from.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "comm/mpich_comm.h"
#include "probes/mpi_family.h"

namespace slowburn {

// The MPI library a rank loaded, and where its communicators can be found.
struct MpiLibrary {
  MpiFamily family = MpiFamily::unknown;
  // Open MPI: where MPI_COMM_WORLD's object may be (ompi_mpi_comm_world:
  // the executable's copy, libmpi's own), best first.
  std::vector<uint64_t> ompi_worlds;
  // MPICH: the library's writable data, where its communicator arrays are.
  std::vector<MemoryRange> mpich_data;
};

// Reads proc_root/PID/maps and the library's symbols; a process with no
// MPI library mapped gets an empty MpiLibrary of family `unknown`.
MpiLibrary locate_mpi(const std::filesystem::path& proc_root, int32_t pid);

}  // namespace slowburn
