// The probe catalog: every named probe, what it attaches to, which argument
// carries its size, and how its calls line up across ranks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace slowburn {

// How calls of one probe relate across ranks; decides what the detector can
// compute for it.
enum class CallKind {
  synchronizing,   // releases all ranks together (allreduce, allgather, barrier):
                   // aligned across ranks, lateness and blame defined
  rooted,          // one root, released less tightly (bcast): per-rank stats only
  point_to_point,  // send/recv: per-rank stats only
  async_enqueue,   // returns once GPU work is queued (nccl*): host-side time only
  device_wait,     // host waits for the GPU (stream/event synchronize)
  function,        // an arbitrary function (funclat)
  request,         // NCCL IB transport: a request posted, then polled until done
  control,         // verbs control path: QP lifecycle and async events
  comm_lifecycle,  // a communicator created or freed (MPI_Comm_split, ncclCommInitRank ...)
};

// The collective library a probe belongs to: whose communicators it names.
enum class CommBackend { none, mpi, nccl, gloo };
std::string_view comm_backend_name(CommBackend backend);

// What a communicator-lifecycle probe does.
enum class CommEventKind {
  none,
  mpi_split,       // MPI_Comm_split(comm, color, key, *newcomm)
  mpi_split_type,  // MPI_Comm_split_type(comm, type, key, info, *newcomm)
  mpi_dup,         // MPI_Comm_dup(comm, *newcomm)
  mpi_create,      // MPI_Comm_create(comm, group, *newcomm)
  mpi_free,        // MPI_Comm_free(*comm)
  nccl_init,       // ncclCommInitRank[Config](*comm, nranks, uniqueId, rank[, config])
  nccl_init_all,   // ncclCommInitAll(*comms, ndev, devlist): one process, ndev ranks
  nccl_split,      // ncclCommSplit(comm, color, key, *newcomm, config)
  nccl_destroy,    // ncclCommDestroy / ncclCommAbort(comm)
};

// Which BPF program serves a probe.
enum class ProbeProgram {
  callpair,  // bpf/callpair.bpf.c: entry/return timing of any call
  nccl_ib,   // bpf/ncclib.bpf.c: NCCL IB request lifecycle
  verbs,     // bpf/verbs.bpf.c: QP state transitions, async events
};

std::string_view call_kind_name(CallKind kind);

// How to turn the size argument into bytes.
enum class SizeUnit { none, elements, nccl_elements, bytes };

struct ProbeTarget {
  std::string library;               // soname stem: "libmpi.so"
  std::vector<std::string> symbols;  // every entry point to attach; aliases are merged
  // For C++ functions whose arguments the program decodes: the demangled
  // signature it expects. Another signature (another NCCL version) is
  // reported unsupported rather than misread.
  std::string signature;
};

struct ProbeSpec {
  uint16_t id = 0;
  std::string name;  // "mpi.allreduce"
  std::string description;
  CallKind kind = CallKind::function;
  std::vector<ProbeTarget> targets;  // in preference order: the first loaded library wins
  uint8_t size_arg = 0;              // 1-based parameter index, 0 = none
  uint8_t aux_arg = 0;               // 1-based parameter index, 0 = none (NCCL: the datatype)
  SizeUnit size_unit = SizeUnit::none;
  ProbeProgram program = ProbeProgram::callpair;
  // Communicators (argument slots as in include/slowburn/cookie.h):
  CommBackend backend = CommBackend::none;
  uint8_t comm_arg = 0;     // the communicator handle's argument, 0 = none
  bool comm_deref = false;  // the communicator is the u64 the argument points at
  uint16_t seq_offset = 0;  // byte offset + 1 of a u32 sequence number in what comm_arg points at
  uint8_t out_arg = 0;      // an out-pointer argument read at return (the created communicator)
  uint8_t key = 0;          // SB_COOKIE_KEY_*: a key hashed at entry
  CommEventKind comm_event = CommEventKind::none;
};

// The soname stems an MPI library goes by, in the order MPI probes try
// them: Open MPI, Intel MPI and MVAPICH (libmpi.so), MPICH (libmpich.so),
// Cray MPICH (libmpi_cray.so). Which ABI a library is: probes/mpi_family.h.
const std::vector<std::string>& mpi_library_stems();

// Ids below kFirstDynamicProbeId belong to the catalog; funclat's ad-hoc
// probes take ids from there on.
constexpr uint16_t kFirstDynamicProbeId = 1000;

const std::vector<ProbeSpec>& probe_catalog();
const ProbeSpec* find_probe(std::string_view name);
const ProbeSpec* find_probe(uint16_t id);

// Probes whose names match any pattern ("mpi.allreduce", "mpi.*", "*").
// An empty pattern list selects every probe of the call-pair program (MPI,
// NCCL, CUDA, verbs timing). A pattern matching nothing is an error naming
// the known probes.
Result<std::vector<const ProbeSpec*>> select_probes(const std::vector<std::string>& patterns,
                                                    ProbeProgram program = ProbeProgram::callpair);

// Bytes moved by a call, when the probe's size argument allows it.
// NCCL datatypes are an enum; MPI datatypes are per-process handles, so MPI
// sizes stay in elements.
uint64_t nccl_datatype_bytes(uint64_t datatype);

}  // namespace slowburn
