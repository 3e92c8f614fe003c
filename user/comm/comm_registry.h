// Which communicator each collective call ran on, across the processes of
// a job: the handle a call carries is per process (an Open MPI
// ompi_communicator_t*, an ncclComm_t, a gloo::Context*), so the registry
// turns (process, handle) into a communicator every member agrees on:
//   - Open MPI and the MPICH family: the context id and members read from
//     the rank's memory (comm/ompi_comm.h, comm/mpich_comm.h), whenever
//     the communicator was made;
//   - creations it saw (MPI_Comm_split/dup/create, ncclCommInitRank's
//     unique id, ncclCommSplit): parent, order on the parent, color;
//   - gloo: process groups told apart by comm/gloo_groups.h, sequence
//     numbers from PyTorch's tag;
//   - otherwise the job-wide communicator, aligned by exit time as before
//     communicators were known, with a note saying so.
// It also numbers each call on its (communicator, probe).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "comm/gloo_groups.h"
#include "comm/mpi_library.h"
#include "comm/mpich_comm.h"
#include "comm/ompi_comm.h"
#include "comm/process_memory.h"
#include "core/rank_identity.h"
#include "events/call_event.h"
#include "events/communicator.h"
#include "probes/catalog.h"

namespace slowburn {

struct CommRegistryCounters {
  uint64_t resolved_memory = 0;    // handles named from process memory
  uint64_t resolved_creation = 0;  // handles named by a creation slowburn saw
  uint64_t unresolved = 0;         // handles left on the job-wide communicator
  uint64_t freed = 0;              // communicators freed or destroyed
};

class CommRegistry {
 public:
  using MemoryOpener = std::function<std::unique_ptr<ProcessMemory>(int32_t pid)>;
  using MpiLocator = std::function<MpiLibrary(int32_t pid)>;
  // Where gloo's context vtables are in a process (comm/gloo_context.h).
  using GlooLocator = std::function<std::vector<uint64_t>(int32_t pid)>;

  CommRegistry(MemoryOpener open_memory, MpiLocator locate_mpi, GlooLocator locate_gloo = {});
  // The live machine: /proc/PID/mem, the MPI library in /proc/PID/maps.
  static CommRegistry for_processes(const std::filesystem::path& proc_root);

  void add_rank(const RankIdentity& rank);
  void remove_rank(int32_t pid);

  // A communicator-lifecycle call (a probe of kind comm_lifecycle).
  void on_lifecycle(const CallEvent& call, const ProbeSpec& spec);
  // The communicator and sequence number of a collective call.
  CallComm classify(const CallEvent& call, const ProbeSpec& spec);
  // The communicator of a handle, without counting a call (calls in flight,
  // the probe mode). `now_ns` lets a gloo grouping settle (0: no clock).
  CommunicatorRef lookup(int32_t pid, CommBackend backend, uint64_t handle, uint64_t now_ns = 0);

  // A value found in a rank's memory (the stack of a rank stuck inside a
  // collective, stacks/stack_comm.h) that may name an MPI communicator: an
  // Open MPI handle, an MPICH handle, or a pointer to an MPICH object. The
  // communicator when it reads as one that holds this rank at its
  // position; an error otherwise, with no note and nothing counted (most
  // values are not handles).
  Result<CommunicatorRef> read_mpi_value(int32_t pid, uint64_t value);
  // The same for a gloo rank: a value that points at a gloo::Context (its
  // vtable checked). Its members are known only for a group of the job's
  // size (every rank): a snapshot has no calls to tell smaller groups of
  // one size apart, so those are the size class, members unknown.
  Result<CommunicatorRef> read_gloo_value(int32_t pid, uint64_t value);

  // What a person should know: layouts not recognised, communicators made
  // before tracing began, process groups told apart.
  std::vector<std::string> take_notes();
  std::vector<CommunicatorRef> communicators() const;
  const CommRegistryCounters& counters() const { return counters_; }

 private:
  struct Binding {
    std::shared_ptr<CommunicatorInfo> comm;
    std::optional<int> comm_rank;
    bool seq_from_creation = false;
    std::optional<size_t> gloo_stream;
    uint64_t gloo_generation = 0;  // of the grouping its communicator was derived from
  };
  struct Process {
    RankIdentity identity;
    std::unique_ptr<ProcessMemory> memory;
    std::optional<MpiLibrary> mpi;  // located on the first MPI handle
    std::optional<OmpiCommLayout> ompi;
    std::optional<MpichCommLayout> mpich;
    bool layout_tried = false;
    std::optional<std::vector<uint64_t>> gloo_vtables;  // located on the first gloo value read
    std::optional<uint64_t> world;
    std::map<std::pair<CommBackend, uint64_t>, Binding> handles;
    std::map<std::string, int> creations_on;  // parent key -> creations seen on it (their order)
  };

  Process* process(int32_t pid);
  std::shared_ptr<CommunicatorInfo> communicator(const std::string& key);
  std::shared_ptr<CommunicatorInfo> job_wide(const std::string& job);
  Binding& bind(Process& p, CommBackend backend, uint64_t handle, uint64_t now_ns = 0);
  Binding resolve_mpi(Process& p, uint64_t handle);
  Binding resolve_gloo(Process& p, uint64_t context, uint64_t now_ns);
  Binding from_memory(Process& p, const MpiComm& comm);
  // The communicator a handle names, read from the rank's memory.
  Result<MpiComm> read_mpi(Process& p, uint64_t handle);
  const MpiLibrary& mpi_library(Process& p);
  // An MPI handle as the library defines it: the MPICH ABI's MPI_Comm is an
  // int, so the upper half of its register or 8-byte read is not part of it.
  uint64_t mpi_handle(Process& p, uint64_t raw);
  void ensure_mpi_layout(Process& p);
  void on_mpi_creation(Process& p, const CallEvent& call, const ProbeSpec& spec);
  void on_nccl_creation(Process& p, const CallEvent& call, const ProbeSpec& spec);
  void refresh_gloo(Process& p, Binding& binding, uint64_t now_ns);
  // Whether every process group of this size that will show up here has:
  // each of the job's processes has a context of it, or it has been settling long enough.
  bool gloo_class_settled(const Process& p, int size, uint64_t now_ns);
  void note_once(const std::string& key, std::string text);

  static constexpr uint64_t kGlooSettleNs = 1'000'000'000;

  MemoryOpener open_memory_;
  MpiLocator locate_mpi_;
  GlooLocator locate_gloo_;
  std::map<int32_t, Process> processes_;
  std::map<std::string, std::shared_ptr<CommunicatorInfo>> comms_;  // by key
  uint32_t next_id_ = 1;
  std::map<std::tuple<int32_t, uint32_t, uint32_t>, uint64_t> next_seq_;  // (pid, comm, probe)
  GlooGroups gloo_;
  std::map<std::pair<std::string, int>, uint64_t> gloo_class_since_;  // (job, size) -> its first context's time
  std::set<std::pair<std::string, int>> gloo_settled_;
  std::set<std::string> noted_;
  std::vector<std::string> notes_;
  CommRegistryCounters counters_;
};

}  // namespace slowburn
