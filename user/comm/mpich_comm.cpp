#include "comm/mpich_comm.h"

#include <cstdint>
#include <cstring>
#include <set>

namespace slowburn {

namespace {

constexpr uint32_t kKindMask = 0xc0000000;
constexpr uint32_t kKindBuiltin = 0x40000000;
constexpr uint32_t kKindDirect = 0x80000000;
constexpr uint32_t kKindIndirect = 0xc0000000;
constexpr uint32_t kObjectKindMask = 0x3c000000;
constexpr uint32_t kObjectKindComm = 0x04000000;
constexpr uint32_t kIndexMask = 0x03ffffff;
constexpr uint32_t kFirstDirect = kKindDirect | kObjectKindComm;
constexpr uint32_t kBuiltinComms = 3;  // MPIR_COMM_N_BUILTIN

constexpr uint32_t kMinObject = 64;
constexpr uint32_t kMaxObject = 16384;
constexpr uint64_t kMaxRangeBytes = 64ull << 20;
constexpr int kMaxMembers = 1 << 20;
constexpr char kWorldName[] = "MPI_COMM_WORLD";

// MPIDI_rank_map_mode (ch4): how communicator ranks map to world ranks.
enum RankMapMode : int32_t {
  kDirect = 0,
  kDirectIntra,
  kOffset,
  kOffsetIntra,
  kStride,
  kStrideIntra,
  kStrideBlock,
  kStrideBlockIntra,
  kLut,
  kLutIntra,
  kMlut,
};
// MPIDI_rank_map_t: mode, avtid, size, reg {offset, stride, blocksize}, irreg {t, lpid}.
constexpr uint32_t kMapAvtid = 4, kMapSize = 8, kMapOffset = 12, kMapStride = 16, kMapBlock = 20, kMapLpid = 32;

template <typename T>
T at(const std::vector<unsigned char>& bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

struct Region {
  uint64_t start;
  std::vector<unsigned char> bytes;
};

std::vector<Region> read_ranges(const ProcessMemory& memory, const std::vector<MemoryRange>& ranges) {
  std::vector<Region> regions;
  for (const MemoryRange& r : ranges) {
    if (r.end <= r.start || r.end - r.start > kMaxRangeBytes) continue;
    Region region{r.start, std::vector<unsigned char>(r.end - r.start)};
    if (memory.read(r.start, region.bytes.data(), region.bytes.size())) regions.push_back(std::move(region));
  }
  return regions;
}

// Where two objects of consecutive handles `first`, `first + 1` lie one
// object apart: (address of the first, object size) candidates.
// At most kMaxCandidates: the rank's memory is its own to fill with
// look-alikes, and each costs a search of object sizes.
std::vector<std::pair<uint64_t, uint32_t>> handle_pairs(const std::vector<Region>& regions, uint32_t first) {
  constexpr size_t kMaxCandidates = 16;
  std::vector<std::pair<uint64_t, uint32_t>> found;
  for (const Region& r : regions)
    for (size_t i = 0; i + 4 <= r.bytes.size() && found.size() < kMaxCandidates; i += 8) {
      if (at<uint32_t>(r.bytes, i) != first) continue;
      for (uint32_t size = kMinObject; size <= kMaxObject && i + size + 4 <= r.bytes.size(); size += 8)
        if (at<uint32_t>(r.bytes, i + size) == first + 1) {
          found.emplace_back(r.start + i, size);
          break;
        }
    }
  return found;
}

// The fields of MPI_COMM_WORLD's object, checked against what is known of it.
Result<MpichCommLayout> fields_of_world(const std::vector<unsigned char>& world, int world_rank, int world_size) {
  MpichCommLayout layout;
  layout.object_size = static_cast<uint32_t>(world.size());
  std::optional<uint32_t> name;
  for (uint32_t off = 4; off + sizeof(kWorldName) <= world.size(); off += 4)
    if (std::memcmp(world.data() + off, kWorldName, sizeof(kWorldName)) == 0) {
      name = off;
      break;
    }
  if (!name) return make_error("no \"MPI_COMM_WORLD\" name in the MPI_COMM_WORLD object: not an MPICH 3-4 layout");
  // remote_size, rank, an attribute pointer, local_size, before the name;
  // the context id pair (0 on the world) just before remote_size. Closest
  // to the name first.
  for (uint32_t r = *name - 4; r >= 12; r -= 4) {
    if (at<int32_t>(world, r) != world_rank || at<int32_t>(world, r - 4) != world_size ||
        at<uint32_t>(world, r - 8) != 0)
      continue;
    uint32_t local_size = ((r + 4 + 7) & ~7u) + 8;
    if (local_size + 4 > *name || at<int32_t>(world, local_size) != world_size) continue;
    layout.rank_offset = r;
    layout.size_offset = r - 4;
    layout.cid_offset = r - 8;
    break;
  }
  if (!layout.rank_offset)
    return make_error("MPI_COMM_WORLD's object holds no size {} and rank {} before its name: unknown layout",
                      world_size, world_rank);
  for (uint32_t m = (*name + sizeof(kWorldName) + 3) & ~3u; m + kMapLpid + 8 <= world.size(); m += 4)
    if (at<int32_t>(world, m) == kDirectIntra && at<int32_t>(world, m + kMapAvtid) == 0 &&
        at<int32_t>(world, m + kMapSize) == world_size) {
      layout.map_offset = m;
      break;
    }
  return layout;
}

// The object a handle names, checked to begin with that handle.
Result<uint64_t> object_of(const ProcessMemory& memory, const MpichCommLayout& l, uint32_t handle) {
  uint32_t index = handle & kIndexMask;
  std::vector<uint64_t> candidates;
  switch (handle & kKindMask) {
    case kKindBuiltin:
      if (index < kBuiltinComms) candidates.push_back(l.builtin + uint64_t{index} * l.object_size);
      break;
    case kKindDirect:
      if (!l.direct) return make_error("MPICH communicator {:#x}: the direct communicator array was not found", handle);
      candidates.push_back(l.direct + uint64_t{index} * l.object_size);
      break;
    case kKindIndirect:
      // Block and index: bits 12-25 / 0-11 since MPICH 3.3, 16-25 / 0-15 before.
      for (uint64_t field : l.indirect_fields) {
        uint64_t table = 0;
        if (!memory.read_value(field, table) || !table) continue;
        for (auto [block, slot] : {std::pair{index >> 12, index & 0xfff}, std::pair{index >> 16, index & 0xffff}}) {
          uint64_t block_at = 0;
          if (memory.read_value(table + 8ull * block, block_at) && block_at)
            candidates.push_back(block_at + uint64_t{slot} * l.object_size);
        }
      }
      break;
  }
  for (uint64_t object : candidates) {
    uint32_t first = 0;
    if (memory.read_value(object, first) && first == handle) return object;
  }
  return make_error("MPICH communicator {:#x}: no object carrying that handle (freed, or an unknown layout)", handle);
}

// Members from ch4's rank map, each checked to be a distinct world rank.
Result<std::vector<int>> members_of(const ProcessMemory& memory, const MpichCommLayout& l, uint64_t object,
                                    uint32_t handle, int size) {
  if (!l.map_offset)
    return make_error(
        "MPICH communicator {:#x}: no ch4 rank map was found on MPI_COMM_WORLD, so its members "
        "are not known (ch3 device?)",
        handle);
  int32_t map[6];
  uint64_t lpid = 0;
  if (!memory.read(object + l.map_offset, map, sizeof(map)) ||
      !memory.read_value(object + l.map_offset + kMapLpid, lpid))
    return make_error("cannot read MPICH communicator {:#x}'s rank map", handle);
  int32_t mode = map[0], avtid = map[1], map_size = map[2];
  int64_t offset = map[3], stride = map[4], block = map[5];
  if (map_size != size)
    return make_error("MPICH communicator {:#x}: its rank map has {} ranks, the communicator {}", handle, map_size,
                      size);
  std::vector<int> members(static_cast<size_t>(size));
  // In 64 bits: the map's numbers are the rank's memory, any value at all;
  // a member outside an int is refused with the rest by the caller's check.
  auto regular = [&](auto rule) {
    for (int i = 0; i < size; ++i) {
      int64_t world = rule(int64_t{i});
      members[i] = world < 0 || world > INT32_MAX ? -1 : static_cast<int>(world);
    }
  };
  switch (mode) {
    case kDirect:
    case kDirectIntra:
      regular([](int64_t i) { return i; });
      break;
    case kOffset:
    case kOffsetIntra:
      regular([&](int64_t i) { return offset + i; });
      break;
    case kStride:
    case kStrideIntra:
      regular([&](int64_t i) { return offset + i * stride; });
      break;
    case kStrideBlock:
    case kStrideBlockIntra:
      if (block <= 0) return make_error("MPICH communicator {:#x}: a rank map of block size {}", handle, block);
      regular([&](int64_t i) { return i / block * (stride - block) + i + offset; });
      break;
    case kLut:
    case kLutIntra:
      if (!memory.read(lpid, members.data(), members.size() * sizeof(int)))
        return make_error("cannot read MPICH communicator {:#x}'s rank table", handle);
      break;
    case kMlut: {
      std::vector<int32_t> pairs(2 * members.size());  // {avtid, lpid} each
      if (!memory.read(lpid, pairs.data(), pairs.size() * sizeof(int32_t)))
        return make_error("cannot read MPICH communicator {:#x}'s rank table", handle);
      for (size_t i = 0; i < members.size(); ++i) {
        if (pairs[2 * i] != 0) avtid = pairs[2 * i];
        members[i] = pairs[2 * i + 1];
      }
      break;
    }
    default:
      return make_error("MPICH communicator {:#x}: rank map mode {} is not one slowburn reads", handle, mode);
  }
  if (avtid != 0)
    return make_error("MPICH communicator {:#x} holds processes of another MPI world (MPI_Comm_spawn/connect)", handle);
  return members;
}

}  // namespace

Result<uint64_t> mpich_comm_object(const ProcessMemory& memory, const MpichCommLayout& layout, uint32_t handle) {
  if (!is_mpich_comm_handle(handle)) return make_error("{:#x} is not an MPICH communicator handle", handle);
  return object_of(memory, layout, handle);
}

bool is_mpich_comm_handle(uint32_t handle) {
  return (handle & kKindMask) != 0 && (handle & kObjectKindMask) == kObjectKindComm;
}

Result<MpichCommLayout> discover_mpich_layout(const ProcessMemory& memory, const std::vector<MemoryRange>& ranges,
                                              int world_rank, int world_size) {
  std::vector<Region> regions = read_ranges(memory, ranges);
  if (regions.empty()) return make_error("cannot read the MPI library's data in the rank's memory");
  auto worlds = handle_pairs(regions, kMpichCommWorld);
  if (worlds.empty())
    return make_error(
        "no MPI_COMM_WORLD object (handle {:#x}) in the MPI library's data: not MPICH, or before MPI_Init",
        kMpichCommWorld);
  std::string why;
  for (auto [world, size] : worlds) {
    std::vector<unsigned char> bytes(size);
    if (!memory.read(world, bytes.data(), size)) continue;
    auto layout = fields_of_world(bytes, world_rank, world_size);
    if (!layout) {
      why = layout.error().message;
      continue;
    }
    layout->builtin = world;
    for (auto [direct, direct_size] : handle_pairs(regions, kFirstDirect))
      if (direct_size == size) {
        layout->direct = direct;
        break;
      }
    // MPIR_Comm_mem: {..., indirect, indirect_size, [num_allocated, num_avail,] kind, size, direct, ...}.
    if (layout->direct)
      for (const Region& r : regions)
        for (size_t i = 32; i + 8 <= r.bytes.size(); i += 8)
          if (at<uint64_t>(r.bytes, i) == layout->direct && at<uint32_t>(r.bytes, i - 8) == size)
            layout->indirect_fields.insert(layout->indirect_fields.end(), {r.start + i - 32, r.start + i - 24});
    return *layout;
  }
  return make_error("{}", why);
}

Result<MpiComm> read_mpich_comm(const ProcessMemory& memory, const MpichCommLayout& layout, uint32_t handle,
                                int world_rank, int world_size) {
  if (!is_mpich_comm_handle(handle)) return make_error("{:#x} is not an MPICH communicator handle", handle);
  auto object = object_of(memory, layout, handle);
  if (!object) return object.error();
  uint32_t cid = 0;
  int32_t size = 0, rank = -1;
  if (!memory.read_value(*object + layout.cid_offset, cid) || !memory.read_value(*object + layout.size_offset, size) ||
      !memory.read_value(*object + layout.rank_offset, rank))
    return make_error("cannot read MPICH communicator {:#x}", handle);
  if (size <= 0 || size > kMaxMembers || rank < 0 || rank >= size)
    return make_error("MPICH communicator {:#x} reads as rank {} of {}: freed, or not a communicator", handle, rank,
                      size);
  auto members = members_of(memory, layout, *object, handle, size);
  if (!members) return members.error();
  std::set<int> distinct(members->begin(), members->end());
  if (static_cast<int>(distinct.size()) != size || *distinct.begin() < 0 || *distinct.rbegin() >= world_size ||
      (*members)[rank] != world_rank)
    return make_error("MPICH communicator {:#x}: its rank map does not check out (rank {} is not world rank {})",
                      handle, rank, world_rank);
  MpiComm comm;
  // 16-bit context ids (MPICH < 4.1) come as a (send, receive) pair, equal on an intracommunicator.
  comm.cid = (cid >> 16) == (cid & 0xffff) ? cid & 0xffff : cid;
  comm.my_rank = rank;
  comm.members = std::move(*members);
  return comm;
}

}  // namespace slowburn
