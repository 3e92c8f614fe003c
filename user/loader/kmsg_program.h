// The printk:console Xid filter (bpf/kmsg_xid.bpf.c), loaded and attached.
#pragma once

#include <cstdint>
#include <memory>

#include "core/error.h"
#include "loader/skeleton.h"

struct kmsg_xid_bpf;
struct bpf_link;

namespace slowburn {

struct KmsgCounters {
  uint64_t lines_seen = 0;
  uint64_t lines_matched = 0;
  uint64_t ringbuf_drops = 0;
};

class KmsgXidProgram {
 public:
  // Mounts tracefs if needed; fails with the reason if printk:console is absent.
  static Result<std::unique_ptr<KmsgXidProgram>> load_and_attach();
  ~KmsgXidProgram();
  KmsgXidProgram(const KmsgXidProgram&) = delete;
  KmsgXidProgram& operator=(const KmsgXidProgram&) = delete;

  int events_fd() const;
  KmsgCounters counters() const;

 private:
  explicit KmsgXidProgram(Skeleton<kmsg_xid_bpf> skel);
  Skeleton<kmsg_xid_bpf> skel_;
};

}  // namespace slowburn
