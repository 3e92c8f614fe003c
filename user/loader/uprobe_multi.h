// Multi-uprobe links (BPF_TRACE_UPROBE_MULTI, Linux 6.6; PID filtering fixed
// in 6.10): one link attaches a program at many offsets of one file, each
// with its own cookie, and detaching it waits for one RCU grace period
// instead of one per uprobe: with 64 single uprobes, Ctrl-C took 6 s here.
// libbpf 1.1 predates them (1.3 has bpf_program__attach_uprobe_multi), so
// this speaks to the kernel directly; drop it for libbpf >= 1.3.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/error.h"

namespace slowburn {

// enum bpf_attach_type value (include/uapi/linux/bpf.h, v6.6+); Debian 12's
// kernel headers (6.1) do not have it.
constexpr int kBpfTraceUprobeMulti = 48;

// Whether this kernel has multi-uprobe links with process (not thread) PID
// filtering; probed once, the way libbpf's probe_uprobe_multi_link does.
bool kernel_has_uprobe_multi();

// A link of `prog_fd` (loaded with expected_attach_type
// kBpfTraceUprobeMulti) at every offset of `path`; pid > 0 limits it to that
// process. Returns the link fd.
Result<int> create_uprobe_multi_link(int prog_fd, const std::string& path, std::span<const uint64_t> offsets,
                                     std::span<const uint64_t> cookies, int32_t pid, bool is_return);

}  // namespace slowburn
