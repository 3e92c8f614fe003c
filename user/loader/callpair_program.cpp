#include "loader/callpair_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "loader/bpf_maps.h"
#include "loader/privileges.h"
#include "loader/uprobe_multi.h"
#include "slowburn/callpair.h"

// After slowburn/callpair.h: the skeleton refers to its types.
#include "callpair.skel.h"

namespace slowburn {

namespace {

Error load_error(int err, const char* what) {
  if (err == EPERM || (err == EACCES && !check_tracing_privileges()))
    return make_sys_error(err, std::string(what) + " (" + tracing_privileges_hint() + ")");
  if (err == EACCES || err == EINVAL)
    return make_sys_error(err, std::string(what) + ": the kernel verifier rejected them (its log is above)");
  return make_sys_error(err, what);
}

}  // namespace

uint64_t make_callpair_cookie(uint16_t probe_id, uint8_t size_arg, uint8_t aux_arg) {
  return uint64_t{probe_id} | (uint64_t{size_arg & SB_COOKIE_ARG_MASK} << SB_COOKIE_SIZE_ARG_SHIFT) |
         (uint64_t{aux_arg & SB_COOKIE_ARG_MASK} << SB_COOKIE_AUX_ARG_SHIFT);
}

Result<std::unique_ptr<CallpairProgram>> CallpairProgram::load(const CallpairConfig& config) {
  AttachMode mode =
      config.attach_mode.value_or(kernel_has_uprobe_multi() ? AttachMode::multi_link : AttachMode::perf_link);
  if (mode == AttachMode::multi_link && !kernel_has_uprobe_multi())
    return make_error("this kernel has no multi-uprobe links with PID filtering (Linux 6.10+)");
  callpair_bpf* skel = callpair_bpf::open();
  if (!skel)
    return make_sys_error(errno, "cannot open the call-pair BPF object (embedded in slowburn: a build problem)");
  std::unique_ptr<CallpairProgram> program(new CallpairProgram(skel, mode));
  if (mode == AttachMode::multi_link) {
    // Fixed at load time: a program is either multi-uprobe or perf-event attached.
    bpf_program__set_expected_attach_type(skel->progs.call_enter, static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
    bpf_program__set_expected_attach_type(skel->progs.call_exit, static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
  }

  skel->rodata->targ_tgid = config.target_tgid;
  skel->rodata->targ_min_ns = config.min_duration_ns;
  skel->rodata->hist_unit_ns = config.hist_unit_ns ? config.hist_unit_ns : 1;
  skel->rodata->emit_records = config.emit_records;
  skel->rodata->wakeup_bytes = std::min<uint64_t>(config.wakeup_bytes, config.ringbuf_bytes / 2);
  if (bpf_map__set_max_entries(skel->maps.events, config.ringbuf_bytes) ||
      bpf_map__set_max_entries(skel->maps.call_states, config.max_thread_states) ||
      bpf_map__set_max_entries(skel->maps.record_seqs, config.max_thread_states))
    return make_sys_error(errno, fmt::format("cannot size the BPF maps (ring buffer {} bytes, {} call states)",
                                             config.ringbuf_bytes, config.max_thread_states));
  if (int err = callpair_bpf::load(skel); err) return load_error(-err, "cannot load the call-pair BPF programs");
  return program;
}

CallpairProgram::~CallpairProgram() {
  for (int fd : multi_links_) close(fd);
  for (bpf_link* link : perf_links_) bpf_link__destroy(link);
  callpair_bpf::destroy(skel_);
}

Result<void> CallpairProgram::attach(const std::string& path, int32_t pid, std::span<const UprobeSite> sites) {
  if (sites.empty()) return {};
  bpf_program* programs[] = {skel_->progs.call_enter, skel_->progs.call_exit};
  std::string where = fmt::format("{}{}", path, pid > 0 ? fmt::format(" in pid {}", pid) : "");
  if (mode_ == AttachMode::multi_link) {
    std::vector<uint64_t> offsets, cookies;
    for (const UprobeSite& site : sites) {
      offsets.push_back(site.file_offset);
      cookies.push_back(site.cookie);
    }
    int fds[2] = {-1, -1};
    for (int i = 0; i < 2; ++i) {
      auto fd = create_uprobe_multi_link(bpf_program__fd(programs[i]), path, offsets, cookies, pid, i == 1);
      if (!fd) {
        if (fds[0] >= 0) close(fds[0]);
        return make_sys_error(fd.error().sys_errno,
                              fmt::format("cannot attach {} uprobe(s) at {}", sites.size(), where));
      }
      fds[i] = *fd;
    }
    multi_links_.insert(multi_links_.end(), {fds[0], fds[1]});
    return {};
  }
  std::vector<bpf_link*> made;
  for (const UprobeSite& site : sites) {
    for (int i = 0; i < 2; ++i) {
      LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = site.cookie, .retprobe = i == 1);
      bpf_link* link =
          bpf_program__attach_uprobe_opts(programs[i], pid > 0 ? pid : -1, path.c_str(), site.file_offset, &opts);
      if (!link) {
        int err = errno;
        for (bpf_link* l : made) bpf_link__destroy(l);
        return make_sys_error(
            err, fmt::format("cannot attach {} at {}+0x{:x}", i ? "uretprobe" : "uprobe", where, site.file_offset));
      }
      made.push_back(link);
    }
  }
  perf_links_.insert(perf_links_.end(), made.begin(), made.end());
  return {};
}

int CallpairProgram::events_fd() const { return bpf_map__fd(skel_->maps.events); }

std::vector<KernelHistogram> CallpairProgram::read_histograms(const std::string& unit, bool and_delete) {
  std::vector<KernelHistogram> result;
  int fd = bpf_map__fd(skel_->maps.hists);
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return result;
  std::vector<sb_hist> values(static_cast<size_t>(cpus));
  for (const sb_hist_key& key : map_keys<sb_hist_key>(fd)) {
    // Lookup-and-delete is one step in the kernel: no call is lost between
    // reading an interval's histogram and starting the next.
    int err = and_delete ? bpf_map_lookup_and_delete_elem(fd, &key, values.data())
                         : bpf_map_lookup_elem(fd, &key, values.data());
    if (err != 0) continue;
    KernelHistogram h{key.tgid, key.probe_id, Log2Histogram(unit, SB_HIST_SLOTS), 0};
    for (const sb_hist& per_cpu : values) {
      for (size_t slot = 0; slot < SB_HIST_SLOTS; ++slot) h.hist.add_slot_count(slot, per_cpu.slots[slot]);
      h.total_ns += per_cpu.total_ns;
    }
    result.push_back(std::move(h));
  }
  return result;
}

std::vector<KernelHistogram> CallpairProgram::histograms(const std::string& unit) {
  return read_histograms(unit, false);
}

std::vector<KernelHistogram> CallpairProgram::take_histograms(const std::string& unit) {
  return read_histograms(unit, true);
}

std::vector<InFlightCall> CallpairProgram::in_flight() const {
  std::vector<InFlightCall> calls;
  int fd = bpf_map__fd(skel_->maps.call_states);
  for (const sb_call_key& key : map_keys<sb_call_key>(fd)) {
    sb_call_state state;
    if (bpf_map_lookup_elem(fd, &key, &state) != 0) continue;  // returned meanwhile
    calls.push_back({state.tgid, key.tid, key.probe_id, state.entry_ns});
  }
  return calls;
}

CallpairCounters CallpairProgram::counters() const {
  const auto& c = skel_->bss->counters;
  return {__atomic_load_n(&c.ringbuf_drops, __ATOMIC_RELAXED), __atomic_load_n(&c.orphan_returns, __ATOMIC_RELAXED),
          __atomic_load_n(&c.state_failures, __ATOMIC_RELAXED)};
}

static uint32_t program_id(const bpf_program* program) {
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(bpf_program__fd(program), &info, &len) != 0) return 0;
  return info.id;
}

uint32_t CallpairProgram::entry_program_id() const { return program_id(skel_->progs.call_enter); }
uint32_t CallpairProgram::exit_program_id() const { return program_id(skel_->progs.call_exit); }

}  // namespace slowburn
