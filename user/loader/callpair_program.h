// The loaded call-pair BPF object (bpf/callpair.bpf.c) and its attachments.
// RAII: destroying it detaches every link and frees the programs and maps,
// as a SIGKILL would (links are file descriptors).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "events/call_event.h"
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
  uint32_t max_thread_states = 16384;  // (thread, probe) entry states, LRU
};

struct KernelHistogram {
  uint32_t tgid = 0;
  uint32_t probe_id = 0;
  Log2Histogram hist;
  uint64_t total_ns = 0;  // sum of durations, for the mean
};

struct CallpairCounters {
  uint64_t ringbuf_drops = 0;
  uint64_t orphan_returns = 0;
  uint64_t state_failures = 0;
};

// Cookie of one attachment: which probe, which arguments to keep.
uint64_t make_callpair_cookie(uint16_t probe_id, uint8_t size_arg, uint8_t aux_arg);

class CallpairProgram {
 public:
  static Result<std::unique_ptr<CallpairProgram>> load(const CallpairConfig& config);
  ~CallpairProgram();
  CallpairProgram(const CallpairProgram&) = delete;
  CallpairProgram& operator=(const CallpairProgram&) = delete;

  // Entry and return probes at `file_offset` of `path`, in process `pid`
  // only (-1: every process that maps the file).
  Result<void> attach(const std::string& path, uint64_t file_offset, int32_t pid, uint64_t cookie);

  int events_fd() const;
  std::vector<KernelHistogram> histograms(const std::string& unit) const;
  // Empties the in-kernel histograms (interval output, as funclatency -i).
  void clear_histograms();
  std::vector<InFlightCall> in_flight() const;
  CallpairCounters counters() const;
  size_t link_count() const { return links_.size(); }
  uint32_t entry_program_id() const;
  uint32_t exit_program_id() const;

 private:
  explicit CallpairProgram(callpair_bpf* skel) : skel_(skel) {}
  callpair_bpf* skel_;
  std::vector<bpf_link*> links_;
};

}  // namespace slowburn
