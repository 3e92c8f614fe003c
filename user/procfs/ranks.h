// Rank discovery: which processes on this node are ranks of a training job,
// read from their environment. Readers take the procfs directory ("/proc"
// in production, a fixture tree in tests).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/rank_identity.h"
#include "procfs/environ.h"

namespace slowburn {

// Pure: the rank fields an environment declares, or nullopt if none.
// Precedence (most specific first): OMPI_COMM_WORLD_RANK, PMIX_RANK,
// PMI_RANK, RANK+WORLD_SIZE (torchrun), SLURM_PROCID. The job: the
// launcher's id (OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE, PMI_JOBID,
// TORCHELASTIC_RUN_ID), else Slurm's job.step; for a hydra rank (MPICH's
// mpiexec sets no id) read_rank and discover_ranks name it by its proxy's
// control port, "hydra:HOST:PORT", the same on every node.
std::optional<RankIdentity> identify_rank(const Environment& env);

// The environment variables identify_rank() looks at, for error messages.
const char* rank_variable_names();

// Every rank process under proc_root, sorted by (job, rank). Processes that
// vanish or cannot be read while scanning are skipped. `exclude_pid` is the
// caller itself.
std::vector<RankIdentity> discover_ranks(const std::filesystem::path& proc_root, int32_t exclude_pid = 0);

// The object `slowburn ranks --json` prints for a rank (and slowburn mcp's
// ranks tool returns): kind "rank" (as every JSON line says what it is),
// pid, rank, local_rank, world_size, launcher, job, host, command,
// cuda_visible_devices, nccl_ib_hca.
nlohmann::json rank_json(const RankIdentity& rank);

// One process, with an error saying why it is not usable as a rank.
Result<RankIdentity> read_rank(const std::filesystem::path& proc_root, int32_t pid);

// The process's start time (field 22 of proc_root/PID/stat, clock ticks
// since boot): with the pid, it names one process; 0 when unreadable.
uint64_t process_start_ticks(const std::filesystem::path& proc_root, int32_t pid);

// Whether proc_root/PID still exists (and is not a zombie).
bool process_alive(const std::filesystem::path& proc_root, int32_t pid);

}  // namespace slowburn
