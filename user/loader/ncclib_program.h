// The NCCL IB request program (bpf/ncclib.bpf.c): attached to the four
// ncclIb* functions of a process's libnccl, read as per-connection
// statistics.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "loader/skeleton.h"
#include "loader/uprobe_links.h"
#include "probes/resolver.h"
#include "rdma/ib_connections.h"

struct ncclib_bpf;

namespace slowburn {

struct IbCounters {
  uint64_t posts = 0;
  uint64_t posts_deferred = 0;
  uint64_t completions = 0;
  uint64_t unknown_done = 0;
  uint64_t table_full = 0;
  uint64_t stats_full = 0;    // completions without a statistics slot (more than 4096 connections)
  uint64_t slot_clashes = 0;  // polls lost to two threads sharing a per-thread slot
  uint64_t polls = 0;         // ncclIbTest calls: the polling loop, counted in the kernel only
};

class NcclIbProgram {
 public:
  static Result<std::unique_ptr<NcclIbProgram>> load(std::optional<AttachMode> mode = std::nullopt);
  ~NcclIbProgram();
  NcclIbProgram(const NcclIbProgram&) = delete;
  NcclIbProgram& operator=(const NcclIbProgram&) = delete;

  // One resolved nccl.ib.* probe (isend, irecv, iflush or test) in a process.
  Result<void> attach(const ProbeResolution& probe, int32_t pid);
  std::vector<IbConnectionStats> stats() const;
  IbCounters counters() const;
  size_t link_count() const { return skel_.links().uprobes(uprobes_).size(); }

 private:
  NcclIbProgram(Skeleton<ncclib_bpf> skel, AttachMode mode);
  Skeleton<ncclib_bpf> skel_;
  LinkSet::Id uprobes_;  // every attachment, one link set (skel_ closes it)
};

}  // namespace slowburn
