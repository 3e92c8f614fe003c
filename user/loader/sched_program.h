// The ranks' time off the CPU (bpf/sched.bpf.c): sched_switch and
// sched_wakeup raw tracepoints that follow only the processes named here,
// and sum in the kernel. User space reads the sums (host/host_monitor).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/error.h"
#include "host/host_signals.h"
#include "loader/skeleton.h"

struct sched_bpf;
struct bpf_link;

namespace slowburn {

class SchedProgram {
 public:
  static Result<std::unique_ptr<SchedProgram>> load_and_attach();
  ~SchedProgram();
  SchedProgram(const SchedProgram&) = delete;
  SchedProgram& operator=(const SchedProgram&) = delete;

  Result<void> follow(int32_t pid);
  // Stops following it and forgets its sums.
  void forget(int32_t pid);
  // The sums of every followed process that has been switched since.
  std::map<int32_t, SchedSums> sums() const;
  // Who held the followed processes' CPUs while they waited.
  std::vector<CpuShare> shares() const;

 private:
  explicit SchedProgram(Skeleton<sched_bpf> skel);
  Skeleton<sched_bpf> skel_;
};

}  // namespace slowburn
