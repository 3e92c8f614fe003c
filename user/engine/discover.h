// Stage 1 of a session: which rank processes to trace, and, when nothing
// could be traced in them, what they do load (no false all-clear).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rank_identity.h"

namespace slowburn {

// The named pids, or every rank process on the node (an error that says how
// to start or name them when there is none).
Result<std::vector<RankIdentity>> find_ranks(const std::vector<int32_t>& pids, const std::filesystem::path& proc_root);

// The communication libraries a process maps (libmpi, libnccl, libgloo,
// libtorch_cpu, librccl, libmpich ...), by file name, each once.
std::vector<std::string> communication_libraries(const std::filesystem::path& proc_root, int32_t pid);

// "nothing traced: ranks 0-3 load libgloo.so.0, libtorch_cpu.so, none of
// them a supported collective library; ...": why a session that attached
// no collective probe must not say "no straggler".
Error nothing_traced_error(const std::vector<RankIdentity>& ranks, const std::filesystem::path& proc_root);

}  // namespace slowburn
