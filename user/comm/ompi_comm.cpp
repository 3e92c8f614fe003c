#include "comm/ompi_comm.h"

#include <cstring>

namespace slowburn {

namespace {

constexpr uint32_t kSearchBytes = 512;   // ompi_predefined_communicator_t is padded to 512
constexpr uint32_t kMaxObjectName = 64;  // MPI_MAX_OBJECT_NAME in Open MPI
constexpr char kWorldName[] = "MPI_COMM_WORLD";

// One member's world rank from its group slot: a proc pointer, or a
// sentinel that encodes the name (bit 0 set, vpid in bits 32-63).
std::optional<int> member_vpid(const ProcessMemory& memory, uint64_t proc) {
  if (proc & 1) return static_cast<int>(proc >> 32);
  uint32_t vpid = 0;
  if (!proc || !memory.read_value(proc + OmpiCommLayout::kProcVpid, vpid)) return std::nullopt;
  return static_cast<int>(vpid);
}

struct GroupHead {
  int32_t count = 0;
  int32_t my_rank = 0;
  uint64_t procs = 0;
};

std::optional<GroupHead> read_group(const ProcessMemory& memory, uint64_t group) {
  GroupHead g;
  if (!group || !memory.read_value(group + OmpiCommLayout::kGroupCount, g.count) ||
      !memory.read_value(group + OmpiCommLayout::kGroupMyRank, g.my_rank) ||
      !memory.read_value(group + OmpiCommLayout::kGroupProcs, g.procs))
    return std::nullopt;
  return g;
}

}  // namespace

Result<OmpiCommLayout> discover_ompi_layout(const ProcessMemory& memory, uint64_t world, int world_rank,
                                            int world_size) {
  char bytes[kSearchBytes];
  if (!memory.read(world, bytes, sizeof(bytes)))
    return make_error("cannot read MPI_COMM_WORLD (ompi_mpi_comm_world) in the rank's memory");
  OmpiCommLayout layout;
  const char* found = nullptr;
  for (uint32_t off = 0; off + sizeof(kWorldName) <= sizeof(bytes); off += 8)
    if (std::memcmp(bytes + off, kWorldName, sizeof(kWorldName)) == 0) {
      found = bytes + off;
      layout.name_offset = off;
      break;
    }
  if (!found) return make_error("no \"MPI_COMM_WORLD\" name in ompi_mpi_comm_world: not an Open MPI 3-5 layout");
  layout.cid_offset = layout.name_offset + kMaxObjectName;
  layout.my_rank_offset = layout.cid_offset + 4;
  if (layout.my_rank_offset + 4 > sizeof(bytes)) return make_error("MPI_COMM_WORLD's name is too close to its end");
  uint32_t cid;
  int32_t my_rank;
  std::memcpy(&cid, bytes + layout.cid_offset, 4);
  std::memcpy(&my_rank, bytes + layout.my_rank_offset, 4);
  if (cid != 0 || my_rank != world_rank)
    return make_error("MPI_COMM_WORLD's context id {} / rank {} after its name are not 0 / {}: unknown layout", cid,
                      my_rank, world_rank);
  // The local group: the first pointer after the rank whose group says
  // (world_size, world_rank) and whose slot for this rank holds this rank.
  for (uint32_t off = (layout.my_rank_offset + 4 + 7) & ~7u; off + 8 <= sizeof(bytes) && off < layout.cid_offset + 64;
       off += 8) {
    uint64_t group;
    std::memcpy(&group, bytes + off, 8);
    auto head = read_group(memory, group);
    if (!head || head->count != world_size || head->my_rank != world_rank) continue;
    uint64_t proc = 0;
    if (!memory.read_value(head->procs + 8ull * static_cast<uint64_t>(world_rank), proc)) continue;
    auto vpid = member_vpid(memory, proc);
    if (!vpid || *vpid != world_rank) continue;
    layout.group_offset = off;
    return layout;
  }
  return make_error("MPI_COMM_WORLD has no group of {} ranks with this rank at {}: unknown layout", world_size,
                    world_rank);
}

Result<MpiComm> read_ompi_comm(const ProcessMemory& memory, const OmpiCommLayout& layout, uint64_t handle,
                               int max_members) {
  MpiComm comm;
  uint64_t group = 0;
  if (!memory.read_value(handle + layout.cid_offset, comm.cid) ||
      !memory.read_value(handle + layout.my_rank_offset, comm.my_rank) ||
      !memory.read_value(handle + layout.group_offset, group))
    return make_error("cannot read communicator {:#x}", handle);
  auto head = read_group(memory, group);
  if (!head) return make_error("cannot read the group of communicator {:#x}", handle);
  if (head->count <= 0 || head->count > max_members || head->my_rank != comm.my_rank)
    return make_error(
        "communicator {:#x} reads as {} members with this rank at {} (expected {}): freed, or not a "
        "communicator",
        handle, head->count, head->my_rank, comm.my_rank);
  std::vector<uint64_t> procs(static_cast<size_t>(head->count));
  if (!memory.read(head->procs, procs.data(), procs.size() * sizeof(uint64_t)))
    return make_error("cannot read the members of communicator {:#x}", handle);
  for (uint64_t proc : procs) {
    auto vpid = member_vpid(memory, proc);
    if (!vpid) return make_error("cannot read a member of communicator {:#x}", handle);
    comm.members.push_back(*vpid);
  }
  return comm;
}

}  // namespace slowburn
