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
};

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
