// The kernel's side of each traced rank: how its process ends or stops
// (loader/lifecycle_program.h: the exit status, the signal and who sent it,
// the OOM killer), and what it does now (procfs/process_state.h: its state,
// the system call and file it blocks on, its CPU time over the last
// minutes). Gives the detector's ProcessLookup and each rank's end.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "detect/straggler.h"
#include "engine/call_stream.h"
#include "events/decoder.h"
#include "events/process_view.h"
#include "probes/probe_status.h"

namespace slowburn {

class LifecycleProgram;

class RankWatch {
 public:
  explicit RankWatch(std::filesystem::path proc_root);
  ~RankWatch();
  RankWatch(RankWatch&&) noexcept;
  RankWatch& operator=(RankWatch&&) noexcept;

  // Loads the lifecycle program and adds its ring buffer through `add`; the
  // probe's status says why not (then ends are unknown, not failures).
  using AddRing = std::function<Result<void>(int fd, RingBufferReader::Handler)>;
  ProbeStatus attach_lifecycle(const AddRing& add);
  void follow(int32_t pid);
  // Its history goes (a long-running service sees thousands of ranks come and go).
  void forget(int32_t pid);
  // A lifecycle record (also fed by tests and replays).
  void on_record(const LifecycleRecord& record);

  // Samples every followed rank's CPU time (at the liveness period).
  void sample(uint64_t now_ns);
  // The rank's process now, its CPU time counted since `since_ns` (from the
  // samples around it); nullopt when /proc has nothing and no end is known.
  std::optional<ProcessView> view(int32_t pid, uint64_t since_ns, uint64_t now_ns) const;
  StragglerDetector::ProcessLookup lookup(uint64_t now_ns) const;
  // How it ended, where the kernel said.
  std::optional<ProcessEnd> end_of(int32_t pid) const;
  uint64_t ringbuf_drops() const;

 private:
  struct CpuSample {
    uint64_t ts_ns = 0;
    uint64_t cpu_ns = 0;
  };
  struct Signal {
    int signal = 0;
    uint64_t ts_ns = 0;
    uint32_t sender_pid = 0;
    std::string sender_comm;
  };
  std::filesystem::path proc_root_;
  std::unique_ptr<LifecycleProgram> program_;
  EventDecoder decoder_;
  std::map<int32_t, std::deque<CpuSample>> cpu_;  // per rank, the last kKeptSamples
  std::map<int32_t, Signal> last_signal_;         // the latest stop or end signal sent to it
  std::map<int32_t, ProcessEnd> ends_;
};

// Pure: the end an exit record and the signal sent before it describe.
ProcessEnd end_from_exit(const LifecycleRecord& exit, const std::optional<LifecycleRecord>& signal, bool oom);

}  // namespace slowburn
