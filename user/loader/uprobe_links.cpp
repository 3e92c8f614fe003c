#include "loader/uprobe_links.h"

#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>

#include "loader/features.h"
#include "loader/uprobe_multi.h"

namespace slowburn {

Result<AttachMode> choose_attach_mode(const KernelFeatures& kernel, std::optional<AttachMode> requested) {
  AttachMode mode = requested.value_or(kernel.uprobe_multi ? AttachMode::multi_link : AttachMode::perf_link);
  if (mode == AttachMode::multi_link && !kernel.uprobe_multi)
    return make_error("this kernel ({}) has no multi-uprobe links with PID filtering (Linux 6.10+)",
                      kernel.release.empty() ? std::string("?") : kernel.release);
  return mode;
}

void prepare_program(bpf_program* program, AttachMode mode) {
  // Fixed at load time: a program is either multi-uprobe or perf-event attached.
  if (mode == AttachMode::multi_link)
    bpf_program__set_expected_attach_type(program, static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
}

UprobeLinks::~UprobeLinks() {
  for (int fd : multi_links_) close(fd);
  for (bpf_link* link : perf_links_) bpf_link__destroy(link);
}

Result<void> UprobeLinks::attach(bpf_program* program, bool retprobe, const std::string& path, int32_t pid,
                                 std::span<const UprobeSite> sites) {
  if (sites.empty()) return {};
  std::string where = fmt::format("{}{}", path, pid > 0 ? fmt::format(" in pid {}", pid) : "");
  const char* kind = retprobe ? "uretprobe" : "uprobe";
  if (mode_ == AttachMode::multi_link) {
    std::vector<uint64_t> offsets, cookies;
    for (const UprobeSite& site : sites) {
      offsets.push_back(site.file_offset);
      cookies.push_back(site.cookie);
    }
    auto fd = create_uprobe_multi_link(bpf_program__fd(program), path, offsets, cookies, pid, retprobe);
    if (!fd)
      return make_sys_error(fd.error().sys_errno,
                            fmt::format("cannot attach {} {}(s) at {}", sites.size(), kind, where));
    multi_links_.push_back(*fd);
    return {};
  }
  std::vector<bpf_link*> made;
  for (const UprobeSite& site : sites) {
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = site.cookie, .retprobe = retprobe);
    bpf_link* link =
        bpf_program__attach_uprobe_opts(program, pid > 0 ? pid : -1, path.c_str(), site.file_offset, &opts);
    if (!link) {
      int err = errno;
      for (bpf_link* l : made) bpf_link__destroy(l);
      return make_sys_error(err, fmt::format("cannot attach {} at {}+0x{:x}", kind, where, site.file_offset));
    }
    made.push_back(link);
  }
  perf_links_.insert(perf_links_.end(), made.begin(), made.end());
  return {};
}

Result<void> UprobeLinks::attach_pair(bpf_program* entry, bpf_program* exit, const std::string& path, int32_t pid,
                                      std::span<const UprobeSite> sites) {
  size_t perf_before = perf_links_.size(), multi_before = multi_links_.size();
  if (auto ok = attach(entry, false, path, pid, sites); !ok) return ok;
  if (auto ok = attach(exit, true, path, pid, sites); !ok) {
    // The entries alone would fill the in-flight map with calls that never return.
    for (size_t i = perf_before; i < perf_links_.size(); ++i) bpf_link__destroy(perf_links_[i]);
    for (size_t i = multi_before; i < multi_links_.size(); ++i) close(multi_links_[i]);
    perf_links_.resize(perf_before);
    multi_links_.resize(multi_before);
    return ok;
  }
  return {};
}

}  // namespace slowburn
