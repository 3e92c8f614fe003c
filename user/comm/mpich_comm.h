// What an MPICH-family communicator handle stands for, read from the rank's
// memory: its context id (equal on every member), the rank's position, and
// its members' MPI_COMM_WORLD ranks, as comm/ompi_comm.h does for Open MPI.
//
// In the MPICH ABI (MPICH, Intel MPI, MVAPICH, Cray MPICH) MPI_Comm is an
// int: bits 30-31 say where the object lives (builtin 1, direct 2, indirect
// 3), bits 26-29 the object kind (1: communicator), the rest an index. The
// arrays behind them (MPIR_Comm_builtin, MPIR_Comm_direct, MPIR_Comm_mem's
// indirect blocks) are not exported by a stripped libmpich, so they are
// found in the library's writable data by what MPI_Init leaves there: every
// MPIR_Comm begins with its own handle, MPI_COMM_WORLD (0x44000000) and
// MPI_COMM_SELF (0x44000001) are the first two builtins, one object apart.
// Every object found through a handle is checked to carry that handle.
//
// Fields are found on MPI_COMM_WORLD, whose values are known: the name
// "MPI_COMM_WORLD", context id 0, the rank and size from the launcher's
// environment; the ch4 device's rank map (mode, avtid, size, then offset,
// stride, blocksize, then LUT pointers) in DIRECT_INTRA mode of the world's
// size. Seen on MPICH 4.0.2 (Debian 12, ch4:ucx): sizeof(MPIR_Comm) 0x368,
// context id pair at +0x40, remote_size +0x44, rank +0x48, local_size
// +0x58, name +0x74, rank map +0x310. Without a rank map (the ch3 device)
// the members are not known: an error, so the caller names the
// communicator by its creation.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "comm/mpi_comm.h"
#include "comm/process_memory.h"
#include "core/error.h"

namespace slowburn {

// A range of the rank's address space to search: the MPI library's
// writable mappings and the anonymous one after them (its .bss).
struct MemoryRange {
  uint64_t start = 0;
  uint64_t end = 0;
};

struct MpichCommLayout {
  uint64_t builtin = 0;      // MPIR_Comm_builtin: MPI_COMM_WORLD's object
  uint64_t direct = 0;       // MPIR_Comm_direct (0: not found)
  uint32_t object_size = 0;  // sizeof(MPIR_Comm)
  uint32_t cid_offset = 0;   // context_id (and recvcontext_id): a u32 equal on every member
  uint32_t size_offset = 0;  // remote_size
  uint32_t rank_offset = 0;
  uint32_t map_offset = 0;  // ch4's MPIDI_rank_map_t; 0: none (members unknown)
  // Where MPIR_Comm_mem.indirect may be (the allocator's layout differs
  // across versions): each is tried, and an object read through it must
  // carry its handle.
  std::vector<uint64_t> indirect_fields;
};

constexpr uint32_t kMpichCommWorld = 0x44000000;
constexpr uint32_t kMpichCommSelf = 0x44000001;

// Whether a handle is an MPICH communicator handle (kind 1, not invalid).
bool is_mpich_comm_handle(uint32_t handle);

// Finds the layout from MPI_COMM_WORLD in `ranges` and checks it against the
// rank's known world rank and size.
Result<MpichCommLayout> discover_mpich_layout(const ProcessMemory& memory, const std::vector<MemoryRange>& ranges,
                                              int world_rank, int world_size);

// Where the communicator a handle names lives in the rank's memory (its
// object, checked to begin with that handle).
Result<uint64_t> mpich_comm_object(const ProcessMemory& memory, const MpichCommLayout& layout, uint32_t handle);

// Reads a communicator through a checked layout.
Result<MpiComm> read_mpich_comm(const ProcessMemory& memory, const MpichCommLayout& layout, uint32_t handle,
                                int world_rank, int world_size);

}  // namespace slowburn
