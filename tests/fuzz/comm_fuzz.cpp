// libFuzzer target for reading Open MPI and MPICH communicators out of a
// rank's memory (comm/ompi_comm.h, comm/mpich_comm.h): the layout
// discovered on MPI_COMM_WORLD, then a communicator read through it, and
// through a layout the input makes up.
// The rank's memory is the traced process's to corrupt (a freed handle, a
// wild pointer, a count of millions), so no memory may crash, hang or make
// slowburn read without bounds (ASan and UBSan, `make fuzz`). The input: a
// byte of world rank, a byte of world size, a byte of layout offset, then
// the process's memory, mapped at kBase; reads outside it fail, as
// /proc/PID/mem does.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "comm/mpich_comm.h"
#include "comm/ompi_comm.h"
#include "comm/process_memory.h"

using namespace slowburn;

namespace {

constexpr uint64_t kBase = 0x7f0000001000;

class ImageMemory : public ProcessMemory {
 public:
  explicit ImageMemory(std::vector<uint8_t> image) : image_(std::move(image)) {}
  bool read(uint64_t address, void* out, size_t size) const override {
    if (address < kBase || address - kBase > image_.size() || size > image_.size() - (address - kBase)) return false;
    if (size) std::memcpy(out, image_.data() + (address - kBase), size);
    return true;
  }

 private:
  std::vector<uint8_t> image_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  int world_rank = data[0] % 64;
  int world_size = data[1] % 64 + 1;
  uint32_t made_up_offset = data[2];
  ImageMemory memory(std::vector<uint8_t>(data + 3, data + size));
  constexpr int kMaxMembers = 1 << 16;
  if (auto layout = discover_ompi_layout(memory, kBase, world_rank, world_size)) {
    if (layout->name_offset >= 512 || layout->group_offset >= 512) std::abort();
    if (auto world = read_ompi_comm(memory, *layout, kBase, kMaxMembers))
      if (world->members.empty() || world->members.size() > static_cast<size_t>(kMaxMembers)) std::abort();
    // Another handle: somewhere in the image.
    (void)read_ompi_comm(memory, *layout, kBase + made_up_offset * 8, kMaxMembers);
  }
  OmpiCommLayout made_up;
  made_up.name_offset = made_up_offset;
  made_up.cid_offset = made_up_offset + 64;
  made_up.my_rank_offset = made_up_offset + 68;
  made_up.group_offset = (made_up_offset + 72 + 7) & ~7u;
  (void)read_ompi_comm(memory, made_up, kBase, kMaxMembers);
  // MPICH: the image is the library's data; handles of every kind.
  std::vector<MemoryRange> library_data = {{kBase, kBase + (size - 3)}};
  if (auto layout = discover_mpich_layout(memory, library_data, world_rank, world_size)) {
    for (uint32_t handle : {kMpichCommWorld, 0x84000000u | made_up_offset, 0xc4000000u | made_up_offset << 4})
      if (auto comm = read_mpich_comm(memory, *layout, handle, world_rank, world_size))
        if (comm->members.empty() || comm->members.size() > static_cast<size_t>(world_size)) std::abort();
  }
  return 0;
}
