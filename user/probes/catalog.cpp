#include "probes/catalog.h"

#include <fnmatch.h>

#include <algorithm>

#include "core/strings.h"
#include "slowburn/cookie.h"

namespace slowburn {

namespace {

ProbeSpec mpi(uint16_t id, std::string name, std::string symbol, CallKind kind, uint8_t size_arg, uint8_t comm_arg,
              std::string description) {
  ProbeSpec spec;
  spec.backend = CommBackend::mpi;
  spec.comm_arg = comm_arg;
  spec.id = id;
  spec.name = std::move(name);
  spec.description = std::move(description);
  spec.kind = kind;
  // MPI_X is a weak alias of PMPI_X in Open MPI and MPICH (one address,
  // attached once); attaching in the MPI library also catches calls routed
  // through a PMPI tool layer. Every library of either ABI family
  // (probes/mpi_family.h) exports the same names.
  for (const std::string& stem : mpi_library_stems()) spec.targets.push_back({stem, {symbol, "P" + symbol}, ""});
  spec.size_arg = size_arg;
  spec.size_unit = size_arg ? SizeUnit::elements : SizeUnit::none;
  return spec;
}

ProbeSpec nccl(uint16_t id, std::string name, std::string symbol, CallKind kind, uint8_t size_arg, uint8_t datatype_arg,
               uint8_t comm_arg, std::string description) {
  ProbeSpec spec;
  spec.backend = CommBackend::nccl;
  spec.comm_arg = comm_arg;
  spec.id = id;
  spec.name = std::move(name);
  spec.description = std::move(description);
  spec.kind = kind;
  spec.targets = {{"libnccl.so", {symbol, "p" + symbol}, ""}};
  spec.size_arg = size_arg;
  spec.aux_arg = datatype_arg;
  spec.size_unit = size_arg ? SizeUnit::nccl_elements : SizeUnit::none;
  return spec;
}

// A communicator's creation or end: the parent (or freed) handle, the color,
// the created handle read through its out pointer at return.
ProbeSpec lifecycle(ProbeSpec spec, CommEventKind event, uint8_t comm_arg, uint8_t out_arg, uint8_t aux_arg,
                    uint8_t size_arg) {
  spec.kind = CallKind::comm_lifecycle;
  spec.comm_event = event;
  spec.comm_arg = comm_arg;
  spec.out_arg = out_arg;
  spec.aux_arg = aux_arg;
  spec.size_arg = size_arg;
  spec.size_unit = SizeUnit::none;
  return spec;
}

// gloo's collectives take one options object whose first member is the
// std::shared_ptr<gloo::Context> (its pointer first), and a u32 tag that
// PyTorch's ProcessGroupGloo sets from a per-group collective counter.
ProbeSpec gloo(uint16_t id, std::string name, std::string demangled, CallKind kind, uint16_t tag_offset,
               std::string description) {
  ProbeSpec spec;
  spec.id = id;
  spec.name = std::move(name);
  spec.description = std::move(description);
  spec.kind = kind;
  spec.backend = CommBackend::gloo;
  // Debian links PyTorch against libgloo.so.0; PyPI wheels carry gloo inside libtorch_cpu.so.
  spec.targets = {{"libgloo.so", {demangled}, demangled}, {"libtorch_cpu.so", {demangled}, demangled}};
  spec.comm_arg = 1;
  spec.comm_deref = true;
  spec.seq_offset = static_cast<uint16_t>(tag_offset + 1);
  return spec;
}

ProbeSpec cuda(uint16_t id, std::string name, std::vector<std::string> runtime_symbols,
               std::vector<std::string> driver_symbols, std::string description) {
  ProbeSpec spec;
  spec.id = id;
  spec.name = std::move(name);
  spec.description = std::move(description);
  spec.kind = CallKind::device_wait;
  // The runtime API when the process loaded libcudart; the driver API
  // otherwise (static cudart, as PyTorch links it, still calls libcuda).
  spec.targets = {{"libcudart.so", std::move(runtime_symbols), ""}, {"libcuda.so", std::move(driver_symbols), ""}};
  spec.aux_arg = 1;  // the stream / event handle
  return spec;
}

// NCCL's IB transport (src/transport/net_ib.cc up to 2.28): C++ linkage,
// hidden, in .symtab only. Signatures of 2.26-2.28 (2.26 added phandle).
ProbeSpec nccl_ib(uint16_t id, std::string name, std::string symbol, std::string signature, std::string description) {
  ProbeSpec spec;
  spec.id = id;
  spec.name = std::move(name);
  spec.description = std::move(description);
  spec.kind = CallKind::request;
  spec.program = ProbeProgram::nccl_ib;
  spec.targets = {{"libnccl.so", {symbol}, std::move(signature)}};
  return spec;
}

ProbeSpec verbs(uint16_t id, std::string name, std::string symbol, CallKind kind, ProbeProgram program,
                uint8_t size_arg, std::string description) {
  ProbeSpec spec;
  spec.id = id;
  spec.name = std::move(name);
  spec.description = std::move(description);
  spec.kind = kind;
  spec.program = program;
  spec.targets = {{"libibverbs.so", {symbol}, ""}};
  spec.size_arg = size_arg;
  spec.size_unit = size_arg ? SizeUnit::bytes : SizeUnit::none;
  return spec;
}

ProbeSpec provider(uint16_t id, std::string name, std::string symbol, std::string description) {
  ProbeSpec spec;
  spec.id = id;
  spec.name = std::move(name);
  spec.description = std::move(description);
  spec.kind = CallKind::function;
  // Hidden in the provider library: only with its .symtab or debug info.
  spec.targets = {{"libmlx5.so", {symbol}, ""}};
  return spec;
}

ProbeSpec nccl_key(ProbeSpec spec) {
  spec.key = SB_COOKIE_KEY_NCCL_UNIQUE_ID;
  return spec;
}

std::vector<ProbeSpec> build_catalog() {
  using K = CallKind;
  // NCCL signatures (nccl.h): ncclAllReduce(send, recv, count, datatype, op, comm, stream),
  // ncclAllGather(send, recv, sendcount, datatype, comm, stream),
  // ncclReduceScatter(send, recv, recvcount, datatype, op, comm, stream),
  // ncclBroadcast(send, recv, count, datatype, root, comm, stream),
  // ncclSend(send, count, datatype, peer, comm, stream), ncclRecv(recv, count, datatype, peer, comm, stream).
  return {
      mpi(1, "mpi.allreduce", "MPI_Allreduce", K::synchronizing, 3, 6, "MPI_Allreduce (count: elements)"),
      mpi(2, "mpi.barrier", "MPI_Barrier", K::synchronizing, 0, 1, "MPI_Barrier"),
      mpi(3, "mpi.bcast", "MPI_Bcast", K::rooted, 2, 5, "MPI_Bcast (count: elements)"),
      mpi(4, "mpi.allgather", "MPI_Allgather", K::synchronizing, 2, 7, "MPI_Allgather (sendcount: elements)"),
      mpi(5, "mpi.reduce_scatter", "MPI_Reduce_scatter", K::synchronizing, 0, 6,
          "MPI_Reduce_scatter (counts are an array: no size)"),
      mpi(6, "mpi.reduce_scatter_block", "MPI_Reduce_scatter_block", K::synchronizing, 3, 6,
          "MPI_Reduce_scatter_block (recvcount: elements)"),
      mpi(7, "mpi.alltoall", "MPI_Alltoall", K::synchronizing, 2, 7, "MPI_Alltoall (sendcount: elements)"),
      mpi(8, "mpi.reduce", "MPI_Reduce", K::rooted, 3, 7, "MPI_Reduce (count: elements)"),
      lifecycle(mpi(10, "mpi.comm_split", "MPI_Comm_split", K::comm_lifecycle, 0, 0,
                    "MPI_Comm_split: a communicator created"),
                CommEventKind::mpi_split, 1, 4, 2, 3),
      lifecycle(mpi(11, "mpi.comm_split_type", "MPI_Comm_split_type", K::comm_lifecycle, 0, 0,
                    "MPI_Comm_split_type: a communicator created"),
                CommEventKind::mpi_split_type, 1, 5, 2, 3),
      lifecycle(
          mpi(12, "mpi.comm_dup", "MPI_Comm_dup", K::comm_lifecycle, 0, 0, "MPI_Comm_dup: a communicator created"),
          CommEventKind::mpi_dup, 1, 2, 0, 0),
      lifecycle(mpi(13, "mpi.comm_create", "MPI_Comm_create", K::comm_lifecycle, 0, 0,
                    "MPI_Comm_create: a communicator created"),
                CommEventKind::mpi_create, 1, 3, 0, 0),
      lifecycle(
          mpi(14, "mpi.comm_free", "MPI_Comm_free", K::comm_lifecycle, 0, 0, "MPI_Comm_free: a communicator ends"),
          CommEventKind::mpi_free, 1, 0, 0, 0),
      nccl(20, "nccl.allreduce", "ncclAllReduce", K::async_enqueue, 3, 4, 6, "ncclAllReduce enqueue (host side)"),
      nccl(21, "nccl.allgather", "ncclAllGather", K::async_enqueue, 3, 4, 5, "ncclAllGather enqueue (host side)"),
      nccl(22, "nccl.reducescatter", "ncclReduceScatter", K::async_enqueue, 3, 4, 6,
           "ncclReduceScatter enqueue (host side)"),
      nccl(23, "nccl.broadcast", "ncclBroadcast", K::async_enqueue, 3, 4, 6, "ncclBroadcast enqueue (host side)"),
      nccl(24, "nccl.send", "ncclSend", K::point_to_point, 2, 3, 5, "ncclSend enqueue (host side)"),
      nccl(25, "nccl.recv", "ncclRecv", K::point_to_point, 2, 3, 5, "ncclRecv enqueue (host side)"),
      nccl(26, "nccl.group_end", "ncclGroupEnd", K::async_enqueue, 0, 0, 0,
           "ncclGroupEnd: launches the grouped operations"),
      // ncclUniqueId is 128 bytes passed by value (SysV class MEMORY): at
      // 8(%rsp), taking no register, so rank is the third register argument.
      lifecycle(nccl_key(nccl(30, "nccl.comm_init_rank", "ncclCommInitRank", K::comm_lifecycle, 0, 0, 0,
                              "ncclCommInitRank: a communicator created")),
                CommEventKind::nccl_init, 0, 1, 3, 2),
      lifecycle(nccl_key(nccl(31, "nccl.comm_init_rank_config", "ncclCommInitRankConfig", K::comm_lifecycle, 0, 0, 0,
                              "ncclCommInitRankConfig: a communicator created")),
                CommEventKind::nccl_init, 0, 1, 3, 2),
      lifecycle(nccl(32, "nccl.comm_init_all", "ncclCommInitAll", K::comm_lifecycle, 0, 0, 0,
                     "ncclCommInitAll: one process, one communicator rank per device"),
                CommEventKind::nccl_init_all, 0, 1, 0, 2),
      lifecycle(nccl(33, "nccl.comm_split", "ncclCommSplit", K::comm_lifecycle, 0, 0, 0,
                     "ncclCommSplit: a communicator created"),
                CommEventKind::nccl_split, 1, 4, 2, 3),
      lifecycle(nccl(34, "nccl.comm_destroy", "ncclCommDestroy", K::comm_lifecycle, 0, 0, 0,
                     "ncclCommDestroy: a communicator ends"),
                CommEventKind::nccl_destroy, 1, 0, 0, 0),
      lifecycle(nccl(35, "nccl.comm_abort", "ncclCommAbort", K::comm_lifecycle, 0, 0, 0,
                     "ncclCommAbort: a communicator ends"),
                CommEventKind::nccl_destroy, 1, 0, 0, 0),
      // Tag offsets of gloo 0.0~git20220518 (Debian 12's libgloo, PyTorch 1.13),
      // checked against its headers by tests/unit/gloo_layout_test.cpp.
      gloo(50, "gloo.allreduce", "gloo::allreduce(gloo::AllreduceOptions const&)", K::synchronizing, 128,
           "gloo::allreduce: returns once every member of the process group has arrived"),
      gloo(51, "gloo.allgather", "gloo::allgather(gloo::AllgatherOptions&)", K::synchronizing, 40, "gloo::allgather"),
      gloo(52, "gloo.allgatherv", "gloo::allgatherv(gloo::AllgathervOptions&)", K::synchronizing, 64,
           "gloo::allgatherv"),
      gloo(53, "gloo.barrier", "gloo::barrier(gloo::BarrierOptions&)", K::synchronizing, 24, "gloo::barrier"),
      gloo(54, "gloo.broadcast", "gloo::broadcast(gloo::BroadcastOptions&)", K::rooted, 52, "gloo::broadcast"),
      gloo(55, "gloo.reduce", "gloo::reduce(gloo::ReduceOptions&)", K::rooted, 88, "gloo::reduce"),
      gloo(56, "gloo.alltoall", "gloo::alltoall(gloo::AlltoallOptions&)", K::synchronizing, 40, "gloo::alltoall"),
      gloo(57, "gloo.alltoallv", "gloo::alltoallv(gloo::AlltoallvOptions&)", K::synchronizing, 136, "gloo::alltoallv"),
      gloo(58, "gloo.gather", "gloo::gather(gloo::GatherOptions&)", K::rooted, 44, "gloo::gather"),
      gloo(59, "gloo.scatter", "gloo::scatter(gloo::ScatterOptions&)", K::rooted, 60, "gloo::scatter"),
      cuda(40, "cuda.stream_sync", {"cudaStreamSynchronize", "cudaStreamSynchronize_ptsz"},
           {"cuStreamSynchronize", "cuStreamSynchronize_ptsz"}, "host waits for a CUDA stream"),
      cuda(41, "cuda.event_sync", {"cudaEventSynchronize"}, {"cuEventSynchronize"}, "host waits for a CUDA event"),
      verbs(60, "verbs.reg_mr", "ibv_reg_mr", K::function, ProbeProgram::callpair, 3,
            "ibv_reg_mr latency (length: bytes)"),
      provider(61, "verbs.mlx5.post_send", "mlx5_post_send", "mlx5 provider: post send work requests"),
      provider(62, "verbs.mlx5.poll_cq", "mlx5_poll_cq", "mlx5 provider: poll a completion queue"),
      nccl_ib(80, "nccl.ib.isend", "ncclIbIsend", "ncclIbIsend(void*, void*, unsigned long, int, void*, void*, void**)",
              "NCCL IB send request: posted, then completed by ncclIbTest"),
      nccl_ib(81, "nccl.ib.irecv", "ncclIbIrecv",
              "ncclIbIrecv(void*, int, void**, unsigned long*, int*, void**, void**, void**)",
              "NCCL IB receive request"),
      nccl_ib(82, "nccl.ib.iflush", "ncclIbIflush", "ncclIbIflush(void*, int, void**, int*, void**, void**)",
              "NCCL IB flush (GPU Direct RDMA read back)"),
      nccl_ib(83, "nccl.ib.test", "ncclIbTest", "ncclIbTest(void*, int*, int*)",
              "NCCL IB completion poll: *done = 1 completes a request"),
      verbs(90, "verbs.modify_qp", "ibv_modify_qp", K::control, ProbeProgram::verbs, 0,
            "QP state transitions (to ERR or SQE: an event)"),
      verbs(91, "verbs.create_qp", "ibv_create_qp", K::control, ProbeProgram::verbs, 0, "QP creation (inventory)"),
      verbs(92, "verbs.destroy_qp", "ibv_destroy_qp", K::control, ProbeProgram::verbs, 0, "QP destruction (inventory)"),
      verbs(93, "verbs.async_event", "ibv_get_async_event", K::control, ProbeProgram::verbs, 0,
            "asynchronous events: QP_FATAL, PORT_ERR, DEVICE_FATAL ..."),
  };
}

}  // namespace

std::string_view call_kind_name(CallKind kind) {
  switch (kind) {
    case CallKind::synchronizing:
      return "synchronizing";
    case CallKind::rooted:
      return "rooted";
    case CallKind::point_to_point:
      return "point-to-point";
    case CallKind::async_enqueue:
      return "async-enqueue";
    case CallKind::device_wait:
      return "device-wait";
    case CallKind::request:
      return "request";
    case CallKind::control:
      return "control";
    case CallKind::function:
      return "function";
    case CallKind::comm_lifecycle:
      return "communicator";
  }
  return "?";
}

std::string_view comm_backend_name(CommBackend backend) {
  switch (backend) {
    case CommBackend::none:
      return "none";
    case CommBackend::mpi:
      return "mpi";
    case CommBackend::nccl:
      return "nccl";
    case CommBackend::gloo:
      return "gloo";
  }
  return "?";
}

const std::vector<std::string>& mpi_library_stems() {
  static const std::vector<std::string> stems = {"libmpi.so", "libmpich.so", "libmpi_cray.so"};
  return stems;
}

const std::vector<ProbeSpec>& probe_catalog() {
  static const std::vector<ProbeSpec> catalog = build_catalog();
  return catalog;
}

const ProbeSpec* find_probe(std::string_view name) {
  for (const ProbeSpec& spec : probe_catalog())
    if (spec.name == name) return &spec;
  return nullptr;
}

const ProbeSpec* find_probe(uint16_t id) {
  for (const ProbeSpec& spec : probe_catalog())
    if (spec.id == id) return &spec;
  return nullptr;
}

Result<std::vector<const ProbeSpec*>> select_probes(const std::vector<std::string>& patterns, ProbeProgram program) {
  std::vector<const ProbeSpec*> selected;
  if (patterns.empty()) {
    for (const ProbeSpec& spec : probe_catalog())
      if (spec.program == program) selected.push_back(&spec);
    return selected;
  }
  for (const std::string& pattern : patterns) {
    bool matched = false;
    for (const ProbeSpec& spec : probe_catalog()) {
      if (spec.program != program || fnmatch(pattern.c_str(), spec.name.c_str(), 0) != 0) continue;
      matched = true;
      if (std::find(selected.begin(), selected.end(), &spec) == selected.end()) selected.push_back(&spec);
    }
    if (!matched) {
      std::vector<std::string> known;
      for (const ProbeSpec& spec : probe_catalog())
        if (spec.program == program) known.push_back(spec.name);
      return make_error("no probe matches '{}'; known probes: {} (see 'slowburn catalog')", pattern, join(known));
    }
  }
  return selected;
}

uint64_t nccl_datatype_bytes(uint64_t datatype) {
  // ncclDataType_t (nccl.h): int8 0, uint8 1, int32 2, uint32 3, int64 4,
  // uint64 5, float16 6, float32 7, float64 8, bfloat16 9, fp8e4m3 10, fp8e5m2 11.
  static constexpr uint8_t kBytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return datatype < sizeof(kBytes) ? kBytes[datatype] : 0;
}

}  // namespace slowburn
