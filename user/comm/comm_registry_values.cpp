// The registry's readers of values found in a stuck rank's memory (the words
// of its collective's frames, stacks/stack_comm.h): most are not handles,
// so a miss is an error value, never a note or a count.
#include <fmt/format.h>

#include "comm/comm_registry.h"
#include "comm/gloo_context.h"

namespace slowburn {

Result<CommunicatorRef> CommRegistry::read_mpi_value(int32_t pid, uint64_t value) {
  Process* p = process(pid);
  if (!p) return make_error("pid {} is not a rank slowburn knows", pid);
  ensure_mpi_layout(*p);
  std::vector<uint64_t> handles;
  if (p->ompi) {
    handles.push_back(value);
  } else if (p->mpich) {
    // A pointer to an MPIR_Comm first: the object its handle names is the
    // one pointed at (the handle alone would pass for any struct that
    // begins with an MPI_Comm field). Then the value's halves as handles:
    // a heap pointer's low half often reads as one (0x7f96843a3e88:
    // "direct communicator 0x3a3e88"), tried after, and read only when real.
    uint32_t head = 0;
    if (p->memory->read_value(value, head))
      if (auto object = mpich_comm_object(*p->memory, *p->mpich, head); object && *object == value)
        handles.push_back(head);
    for (auto half : {static_cast<uint32_t>(value), static_cast<uint32_t>(value >> 32)})
      if (is_mpich_comm_handle(half)) handles.push_back(half);
  } else {
    return make_error("{}: its MPI communicators cannot be read from memory", rank_label(p->identity));
  }
  for (uint64_t handle : handles) {
    auto comm = read_mpi(*p, handle);
    if (!comm || comm->my_rank < 0 || static_cast<size_t>(comm->my_rank) >= comm->members.size() ||
        comm->members[static_cast<size_t>(comm->my_rank)] != p->identity.rank)
      continue;
    return CommunicatorRef(from_memory(*p, *comm).comm);
  }
  return make_error("{:#x} names no communicator of {}", value, rank_label(p->identity));
}

Result<CommunicatorRef> CommRegistry::read_gloo_value(int32_t pid, uint64_t value) {
  Process* p = process(pid);
  if (!p) return make_error("pid {} is not a rank slowburn knows", pid);
  if (!p->gloo_vtables) p->gloo_vtables = locate_gloo_ ? locate_gloo_(pid) : std::vector<uint64_t>{};
  if (p->gloo_vtables->empty())
    return make_error("{}: no gloo library with exported context vtables is mapped", rank_label(p->identity));
  if (!p->memory) p->memory = open_memory_(pid);
  auto context = read_gloo_context_checked(*p->memory, value, *p->gloo_vtables);
  if (!context) return make_error("{:#x} is not a gloo context of {}", value, rank_label(p->identity));
  // A group of the job's size holds every rank, at its own rank as PyTorch
  // orders a group's ranks: the world (or another group of all the ranks,
  // which has the same members and shares this key).
  if (p->identity.world_size == context->size && context->rank == p->identity.rank) {
    auto info = communicator(fmt::format("gloo:{}:size={}:world", p->identity.job, context->size));
    if (info->label.empty()) {
      info->backend = CommBackend::gloo;
      info->source = CommSource::memory;
      info->size = context->size;
      for (int r = 0; r < context->size; ++r) info->members.push_back(r);
      info->label = "gloo world";
    }
    return CommunicatorRef(info);
  }
  auto info = communicator(fmt::format("gloo:{}:size={}", p->identity.job, context->size));
  if (info->label.empty()) {
    info->backend = CommBackend::gloo;
    info->source = CommSource::memory;
    info->size = context->size;
    info->label = fmt::format("a gloo group of {} (members not known from a snapshot)", context->size);
  }
  return CommunicatorRef(info);
}

}  // namespace slowburn
