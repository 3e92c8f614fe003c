// What an Open MPI communicator handle stands for, read from the rank's
// memory: its context id (equal on every member), the rank's position, and
// its members' MPI_COMM_WORLD ranks. Together they name the communicator
// across processes (disjoint children of one MPI_Comm_split share a context
// id: their members tell them apart), with no clock and without having seen
// it created.
//
// ompi_communicator_t is not an ABI. Its layout is discovered at run time on
// MPI_COMM_WORLD, whose values are known (name "MPI_COMM_WORLD", context id
// 0, the rank and size from the launcher's environment), and every offset is
// checked there before it is used on another communicator. Seen on Open MPI
// 4.1.4 (Debian 12): c_name at +0xa0, c_contextid +0xe0, c_my_rank +0xe4,
// c_local_group +0xf8; ompi_group_t: grp_proc_count +16, grp_my_rank +20,
// grp_proc_pointers +32; opal_proc_t: proc_name.vpid +44; a proc pointer
// with bit 0 set is a sentinel holding the vpid in bits 32-63.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "comm/mpi_comm.h"
#include "comm/process_memory.h"
#include "core/error.h"

namespace slowburn {

struct OmpiCommLayout {
  uint32_t name_offset = 0;
  uint32_t cid_offset = 0;      // name + MPI_MAX_OBJECT_NAME (64)
  uint32_t my_rank_offset = 0;  // cid + 4
  uint32_t group_offset = 0;    // c_local_group
  static constexpr uint32_t kGroupCount = 16;
  static constexpr uint32_t kGroupMyRank = 20;
  static constexpr uint32_t kGroupProcs = 32;
  static constexpr uint32_t kProcVpid = 44;
};

// Finds the layout on MPI_COMM_WORLD (`world` is the address of the
// ompi_mpi_comm_world symbol in the process) and checks it against the
// rank's known world rank and size.
Result<OmpiCommLayout> discover_ompi_layout(const ProcessMemory& memory, uint64_t world, int world_rank,
                                            int world_size);

// Reads a communicator through a checked layout. Members beyond
// `max_members` (a corrupt count) are an error, not a huge read.
Result<MpiComm> read_ompi_comm(const ProcessMemory& memory, const OmpiCommLayout& layout, uint64_t handle,
                               int max_members = 1 << 20);

}  // namespace slowburn
