// A gloo::Context in a rank's memory: its vtable pointer, then `const int
// rank` and `const int size` (gloo/context.h). The probes know an argument
// is a context and read only rank and size; a word found on a stuck rank's
// stack (stacks/stack_comm.h) is one only when its first word is the
// address point of a gloo context class's vtable in that process: the
// exported vtables of gloo::Context and gloo::rendezvous::Context (the
// class PyTorch's ProcessGroupGloo makes) in libgloo, or in a libtorch_cpu
// that carries gloo inside.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "comm/process_memory.h"

namespace slowburn {

// Sizes beyond this are not a context's.
constexpr int kGlooMaxSize = 1 << 20;

struct GlooContext {
  int rank = 0;  // the process's rank in the group
  int size = 0;  // the group's size
};

// Rank and size of the context at `address`, when they read as one (0 <=
// rank < size <= kGlooMaxSize).
std::optional<GlooContext> read_gloo_context(const ProcessMemory& memory, uint64_t address);

// The same, only when the object's first word is one of `vtables`.
std::optional<GlooContext> read_gloo_context_checked(const ProcessMemory& memory, uint64_t address,
                                                     const std::vector<uint64_t>& vtables);

// Where a context's vtable pointer points in the process: the address
// points (vtable + 16, the Itanium C++ ABI's offset-to-top and typeinfo
// before the first virtual function) of gloo's context classes in the
// library it mapped. Empty when no gloo library is mapped or its vtables
// are not exported.
std::vector<uint64_t> locate_gloo_vtables(const std::filesystem::path& proc_root, int32_t pid);

}  // namespace slowburn
