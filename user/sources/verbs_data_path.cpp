#include "sources/verbs_data_path.h"

#include <fmt/format.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "loader/verbs_program.h"
#include "probes/resolver.h"
#include "procfs/maps.h"
#include "slowburn/verbs.h"

namespace slowburn {

namespace {

Result<uint64_t> read_word(int32_t pid, uint64_t address) {
  uint64_t value = 0;
  iovec local{&value, sizeof(value)};
  iovec remote{reinterpret_cast<void*>(address), sizeof(value)};
  if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(sizeof(value)))
    return make_sys_error(errno, fmt::format("cannot read pid {}'s memory at {:#x}", pid, address));
  return value;
}

}  // namespace

Result<VerbsDataPath> find_verbs_data_path(const std::filesystem::path& proc_root, int32_t pid, uint64_t qp,
                                           uint32_t qp_num) {
  // qp_num and state share a word: the number is the low half (x86-64).
  auto number = read_word(pid, qp + SB_IBV_QP_NUM_OFFSET);
  if (!number) return number.error();
  if (static_cast<uint32_t>(*number) != qp_num)
    return make_error("pid {}'s QP {:#x} at {:#x} is gone (freed before it was read)", pid, qp_num, qp);
  auto context = read_word(pid, qp + SB_IBV_QP_CONTEXT_OFFSET);
  if (!context) return context.error();
  if (*context % alignof(uint64_t))
    return make_error("pid {}'s QP at {:#x} names no context ({:#x}): freed, or not a struct ibv_qp", pid, qp,
                      *context);
  auto post_send = read_word(pid, *context + SB_IBV_CONTEXT_POST_SEND_OFFSET);
  if (!post_send) return post_send.error();
  auto poll_cq = read_word(pid, *context + SB_IBV_CONTEXT_POLL_CQ_OFFSET);
  if (!poll_cq) return poll_cq.error();
  auto maps = read_process_maps(proc_root, pid);
  if (!maps) return maps.error();
  auto post_map = mapping_at(*maps, *post_send);
  auto poll_map = mapping_at(*maps, *poll_cq);
  auto executable_file = [](const std::optional<MapEntry>& m) {
    return m && m->inode != 0 && !m->path.empty() && m->perms.find('x') != std::string::npos;
  };
  if (!executable_file(post_map) || !executable_file(poll_map) || poll_map->inode != post_map->inode ||
      poll_map->dev_major != post_map->dev_major || poll_map->dev_minor != post_map->dev_minor)
    return make_error(
        "pid {}'s verbs context (QP {:#x}) has post_send {:#x} and poll_cq {:#x}, not in one executable file "
        "mapping: its provider's data path is not traced",
        pid, qp, *post_send, *poll_cq);
  auto file = open_mapped_file(proc_root, pid, *post_map);
  if (!file) return file.error();
  VerbsDataPath out;
  out.post_send = *post_send;
  out.poll_cq = *poll_cq;
  out.library = post_map->path;
  out.file = std::move(*file);
  out.post_send_offset = *post_send - post_map->start + post_map->offset;
  out.poll_cq_offset = *poll_cq - poll_map->start + poll_map->offset;
  return out;
}

std::optional<ProbeStatus> VerbsDataPathTracer::saw_qp(int32_t pid, uint64_t qp, uint32_t qp_num,
                                                       std::optional<RankIdentity> rank) {
  if (traced_.contains(pid) || given_up_.contains(pid)) return std::nullopt;
  Tries& tries = tries_[pid];
  // A QP's create and modifies: read once (by number too: a freed QP's
  // memory is given to the next one).
  if (!tries.qps.insert({qp, qp_num}).second) return std::nullopt;
  ProbeStatus status;
  status.probe = "verbs.qp_completions";
  status.rank = std::move(rank);
  status.pid = pid;
  auto path = find_verbs_data_path(proc_root_, pid, qp, qp_num);
  if (!path) {
    tries.last_error = path.error().message;
    if (tries.qps.size() < kTries) return std::nullopt;
    given_up_.insert(pid);
    status.state = ProbeState::failed;
    status.detail = fmt::format("{} QPs tried; the last: {}", tries.qps.size(), tries.last_error);
    return status;
  }
  status.library = path->library;
  status.sites = {AttachSite{"post_send", "", path->post_send, path->post_send_offset},
                  AttachSite{"poll_cq", "", path->poll_cq, path->poll_cq_offset}};
  auto attached =
      program_.attach_data_path(path->file.path.string(), pid, path->post_send_offset, path->poll_cq_offset);
  if (attached) {
    traced_.insert(pid);
    status.state = ProbeState::attached;
  } else {
    given_up_.insert(pid);
    status.state = ProbeState::failed;
    status.detail = attached.error().message;
    tries.last_error = status.detail;
  }
  return status;
}

std::vector<std::string> VerbsDataPathTracer::summary_lines(
    const std::function<std::optional<int>(uint32_t)>& rank_of) const {
  std::vector<std::string> lines;
  auto who = [&](uint32_t pid) {
    auto rank = rank_of(pid);
    return fmt::format("{}pid {}", rank ? fmt::format("rank {} ", *rank) : "", pid);
  };
  for (const auto& [pid, tries] : tries_)
    if (!traced_.contains(pid))
      lines.push_back(fmt::format("{} libibverbs data path not traced: {} QP(s) tried; the last: {}",
                                  who(static_cast<uint32_t>(pid)), tries.qps.size(), tries.last_error));
  if (traced_.empty()) return lines;
  VerbsCounters c = program_.counters();
  auto qps = program_.qp_stats();
  std::string line = fmt::format(
      "libibverbs data path: {} work request(s) posted, {} send completion(s) timed on {} QP(s) (a signaled "
      "request's: unsignaled ones complete with it), {} receive(s), {} send completion(s) unmatched (posted "
      "before the probe)",
      c.posts, c.completions, qps.size(), c.receives, c.unmatched);
  for (const IbConnectionStats& qp : qps)
    if (qp.errors) line += fmt::format("; {} completion(s) in error on {} QP {:#x}", qp.errors, who(qp.tgid), qp.comm);
  if (c.stats_full)
    line += fmt::format("; {} completion(s) not counted (more than {} QPs)", c.stats_full, SB_VERBS_MAX_QPS);
  if (c.chain_truncated)
    line += fmt::format("; {} post chain(s) longer than {} requests, the rest not timed", c.chain_truncated,
                        SB_VERBS_MAX_CHAIN);
  if (c.wc_truncated)
    line += fmt::format("; {} poll(s) returned more than {} completions, the rest not seen", c.wc_truncated,
                        SB_VERBS_MAX_WC);
  lines.push_back(line);
  return lines;
}

}  // namespace slowburn
