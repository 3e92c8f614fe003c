#include "loader/callpair_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "loader/bpf_maps.h"
#include "loader/privileges.h"
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
  auto mode = choose_attach_mode(config.attach_mode);
  if (!mode) return mode.error();
  callpair_bpf* skel = callpair_bpf::open();
  if (!skel)
    return make_sys_error(errno, "cannot open the call-pair BPF object (embedded in slowburn: a build problem)");
  std::unique_ptr<CallpairProgram> program(new CallpairProgram(skel, *mode));
  prepare_program(skel->progs.call_enter, *mode);
  prepare_program(skel->progs.call_exit, *mode);

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
  links_.reset();  // the links, then the programs they run
  callpair_bpf::destroy(skel_);
}

Result<void> CallpairProgram::attach(const std::string& path, int32_t pid, std::span<const UprobeSite> sites) {
  if (auto ok = links_->attach(skel_->progs.call_enter, false, path, pid, sites); !ok) return ok;
  return links_->attach(skel_->progs.call_exit, true, path, pid, sites);
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
