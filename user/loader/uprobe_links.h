// Uprobe attachments of any program, as multi-uprobe links where the kernel
// has them (one link per file, process and direction) or as perf-event
// links (one per uprobe). RAII: destroying it detaches everything.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"

struct bpf_program;
struct bpf_link;

namespace slowburn {

enum class AttachMode { multi_link, perf_link };

// One place to put a probe: an offset in a file and the cookie it fires with.
struct UprobeSite {
  uint64_t file_offset = 0;
  uint64_t cookie = 0;
};

struct KernelFeatures;

// The mode to use: the requested one, else multi-uprobe links where the
// kernel has them with PID filtering (6.10+).
Result<AttachMode> choose_attach_mode(const KernelFeatures& kernel, std::optional<AttachMode> requested);

// Before load: a program attached through multi-uprobe links must say so.
void prepare_program(bpf_program* program, AttachMode mode);

class UprobeLinks {
 public:
  explicit UprobeLinks(AttachMode mode) : mode_(mode) {}
  ~UprobeLinks();
  UprobeLinks(const UprobeLinks&) = delete;
  UprobeLinks& operator=(const UprobeLinks&) = delete;

  // `program` at every site of `path`, as a uprobe or a uretprobe, in process
  // `pid` only (-1: every process). All or nothing.
  Result<void> attach(bpf_program* program, bool retprobe, const std::string& path, int32_t pid,
                      std::span<const UprobeSite> sites);
  // An entry program and its return program at the same sites: both or neither.
  Result<void> attach_pair(bpf_program* entry, bpf_program* exit, const std::string& path, int32_t pid,
                           std::span<const UprobeSite> sites);
  size_t size() const { return perf_links_.size() + multi_links_.size(); }
  AttachMode mode() const { return mode_; }

 private:
  AttachMode mode_;
  std::vector<bpf_link*> perf_links_;
  std::vector<int> multi_links_;  // link fds
};

}  // namespace slowburn
