// The libibverbs program (bpf/verbs.bpf.c): QP lifecycle and async events,
// one ring-buffer record per call; and the data path's completion latency
// per QP, summed in the kernel.
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

struct verbs_bpf;

namespace slowburn {

struct VerbsCounters {
  uint64_t records = 0;
  uint64_t ringbuf_drops = 0;
  uint64_t state_failures = 0;
  uint64_t posts = 0;
  uint64_t completions = 0;
  uint64_t receives = 0;
  uint64_t unmatched = 0;
  uint64_t stats_full = 0;
  uint64_t chain_truncated = 0;
  uint64_t wc_truncated = 0;
};

class VerbsProgram {
 public:
  static Result<std::unique_ptr<VerbsProgram>> load(std::optional<AttachMode> mode = std::nullopt);
  ~VerbsProgram();
  VerbsProgram(const VerbsProgram&) = delete;
  VerbsProgram& operator=(const VerbsProgram&) = delete;

  // One resolved verbs.* probe (modify_qp, create_qp, destroy_qp,
  // async_event) in process `pid` (-1: every process mapping the library).
  Result<void> attach(const ProbeResolution& probe, int32_t pid);
  // The data path of process `pid`: its provider's post_send and poll_cq,
  // at these offsets of the file `path` (where a context's ops point).
  // poll_cq first: a post_send probe left alone, should poll_cq's fail,
  // would stamp requests nothing completes.
  Result<void> attach_data_path(const std::string& path, int32_t pid, uint64_t post_send_offset,
                                uint64_t poll_cq_offset);
  // Per (process, QP): send completions, post to completion (direction qp).
  std::vector<IbConnectionStats> qp_stats() const;
  int events_fd() const;
  VerbsCounters counters() const;
  size_t link_count() const { return skel_.links().uprobes(uprobes_).size(); }

 private:
  VerbsProgram(Skeleton<verbs_bpf> skel, AttachMode mode);
  Skeleton<verbs_bpf> skel_;
  LinkSet::Id uprobes_;  // every attachment, one link set (skel_ closes it)
};

}  // namespace slowburn
