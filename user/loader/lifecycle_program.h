// How the traced ranks end or stop (bpf/lifecycle.bpf.c), loaded and
// attached: exits with the kernel's exit code, the signals that stop or end
// them and who sent them, the OOM killer's choice; one record each.
#pragma once

#include <cstdint>
#include <memory>

#include "core/error.h"
#include "loader/skeleton.h"

struct lifecycle_bpf;

namespace slowburn {

class LifecycleProgram {
 public:
  // Fails with the reason (no BTF for raw tracepoints, not root).
  static Result<std::unique_ptr<LifecycleProgram>> load_and_attach();
  ~LifecycleProgram();
  LifecycleProgram(const LifecycleProgram&) = delete;
  LifecycleProgram& operator=(const LifecycleProgram&) = delete;

  // Its records are about these processes only.
  Result<void> follow(int32_t pid);
  int events_fd() const;
  uint64_t ringbuf_drops() const;
  // Whether the OOM killer's tracepoint (oom:mark_victim) was there to attach.
  bool sees_oom() const { return sees_oom_; }

 private:
  explicit LifecycleProgram(Skeleton<lifecycle_bpf> skel);
  Skeleton<lifecycle_bpf> skel_;
  bool sees_oom_ = false;
};

}  // namespace slowburn
