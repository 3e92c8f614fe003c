// The libibverbs control-path program (bpf/verbs.bpf.c): QP lifecycle and
// async events, one ring-buffer record per call.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "core/error.h"
#include "loader/skeleton.h"
#include "loader/uprobe_links.h"
#include "probes/resolver.h"

struct verbs_bpf;

namespace slowburn {

struct VerbsCounters {
  uint64_t records = 0;
  uint64_t ringbuf_drops = 0;
  uint64_t state_failures = 0;
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
  int events_fd() const;
  VerbsCounters counters() const;
  size_t link_count() const { return skel_.links().uprobes(uprobes_).size(); }

 private:
  VerbsProgram(Skeleton<verbs_bpf> skel, AttachMode mode);
  Skeleton<verbs_bpf> skel_;
  LinkSet::Id uprobes_;  // every attachment, one link set (skel_ closes it)
};

}  // namespace slowburn
