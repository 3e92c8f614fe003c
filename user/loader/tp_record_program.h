// The raw tracepoint-record program (bpf/tprecord.bpf.c): one loaded
// program, attached to each rare hardware tracepoint this kernel has, with
// a cookie naming it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "loader/skeleton.h"

struct tprecord_bpf;
struct bpf_link;

namespace slowburn {

struct TpRecordCounters {
  uint64_t records = 0;
  uint64_t ringbuf_drops = 0;
};

class TpRecordProgram {
 public:
  static Result<std::unique_ptr<TpRecordProgram>> load();
  ~TpRecordProgram();
  TpRecordProgram(const TpRecordProgram&) = delete;
  TpRecordProgram& operator=(const TpRecordProgram&) = delete;

  Result<void> attach(const std::string& system, const std::string& event, uint32_t source);
  int events_fd() const;
  TpRecordCounters counters() const;
  uint32_t program_id() const;

 private:
  explicit TpRecordProgram(Skeleton<tprecord_bpf> skel);
  Skeleton<tprecord_bpf> skel_;
};

}  // namespace slowburn
