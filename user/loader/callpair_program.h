// The loaded call-pair BPF object (bpf/callpair.bpf.c) and its attachments.
// RAII: destroying it detaches every link and frees the programs and maps,
// as a SIGKILL would (links are file descriptors).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "events/call_event.h"
#include "loader/skeleton.h"
#include "loader/uprobe_links.h"
#include "stats/log2_hist.h"

struct callpair_bpf;
struct bpf_link;

namespace slowburn {

struct CallpairConfig {
  uint32_t target_tgid = 0;      // 0: every process an attachment allows
  uint64_t min_duration_ns = 0;  // shorter calls are counted in histograms, not recorded
  uint64_t hist_unit_ns = 1000;  // 1 (nsecs), 1000 (usecs), 1000000 (msecs)
  bool emit_records = true;      // false: in-kernel histograms only
  uint32_t ringbuf_bytes = 8u << 20;
  uint64_t wakeup_bytes = 256u << 10;     // pending bytes that wake the consumer before its poll timer
  uint32_t max_thread_states = 16384;     // (thread, probe) entry states, LRU
  std::optional<AttachMode> attach_mode;  // default: multi_link where the kernel has it
};

struct KernelHistogram {
  uint32_t tgid = 0;
  uint32_t probe_id = 0;
  uint64_t comm = 0;  // the communicator handle of its calls (process-local), 0: none
  Log2Histogram hist;
  uint64_t total_ns = 0;  // sum of durations, for the mean
};

struct CallpairCounters {
  uint64_t ringbuf_drops = 0;
  uint64_t orphan_returns = 0;
  uint64_t state_failures = 0;
};

class CallpairProgram {
 public:
  static Result<std::unique_ptr<CallpairProgram>> load(const CallpairConfig& config);
  ~CallpairProgram();
  CallpairProgram(const CallpairProgram&) = delete;
  CallpairProgram& operator=(const CallpairProgram&) = delete;

  // Entry and return probes at every site of `path`, in process `pid` only
  // (-1: every process that maps the file). All or nothing: on an error no
  // site of this call is attached.
  Result<void> attach(const std::string& path, int32_t pid, std::span<const UprobeSite> sites);

  int events_fd() const;
  // The in-kernel histograms, summed over CPUs; take_ also empties them
  // (interval output, as funclatency -i), without losing calls in between.
  std::vector<KernelHistogram> histograms(const std::string& unit);
  std::vector<KernelHistogram> take_histograms(const std::string& unit);
  std::vector<InFlightCall> in_flight() const;
  CallpairCounters counters() const;
  size_t link_count() const { return skel_.links().uprobes(uprobes_).size(); }
  AttachMode attach_mode() const { return skel_.links().uprobes(uprobes_).mode(); }
  uint32_t entry_program_id() const;
  uint32_t exit_program_id() const;

 private:
  CallpairProgram(Skeleton<callpair_bpf> skel, AttachMode mode);
  std::vector<KernelHistogram> read_histograms(const std::string& unit, bool and_delete);
  Skeleton<callpair_bpf> skel_;
  LinkSet::Id uprobes_;  // every attachment, one link set (skel_ closes it)
};

}  // namespace slowburn
