#include "loader/callpair_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "loader/bpf_maps.h"
#include "loader/features.h"
#include "slowburn/callpair.h"

// After slowburn/callpair.h: the skeleton refers to its types.
#include "callpair.skel.h"

namespace slowburn {

Result<std::unique_ptr<CallpairProgram>> CallpairProgram::load(const CallpairConfig& config) {
  auto mode = choose_attach_mode(KernelFeatures::host(), config.attach_mode);
  if (!mode) return mode.error();
  auto opened = Skeleton<callpair_bpf>::open("the call-pair BPF programs (bpf/callpair.bpf.c)");
  if (!opened) return opened.error();
  std::unique_ptr<CallpairProgram> program(new CallpairProgram(std::move(*opened), *mode));
  auto& skel = program->skel_;
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
  if (auto loaded = skel.load(); !loaded) return loaded.error();
  return program;
}

CallpairProgram::CallpairProgram(Skeleton<callpair_bpf> skel, AttachMode mode)
    : skel_(std::move(skel)), uprobes_(skel_.links().add(std::make_unique<UprobeLinks>(mode))) {}

CallpairProgram::~CallpairProgram() = default;

Result<void> CallpairProgram::attach(const std::string& path, int32_t pid, std::span<const UprobeSite> sites) {
  return skel_.links().uprobes(uprobes_).attach_pair(skel_->progs.call_enter, skel_->progs.call_exit, path, pid, sites);
}

int CallpairProgram::events_fd() const { return bpf_map__fd(skel_->maps.events); }

std::vector<KernelHistogram> CallpairProgram::read_histograms(const std::string& unit, bool and_delete) {
  // Lookup-and-delete is one step in the kernel: no call is lost between
  // reading an interval's histogram and starting the next.
  return sum_percpu_map<sb_hist_key, sb_hist>(
      bpf_map__fd(skel_->maps.hists),
      [&](const sb_hist_key& key, const std::vector<sb_hist>& per_cpu) {
        KernelHistogram h{key.tgid, key.probe_id, key.comm, Log2Histogram(unit, SB_HIST_SLOTS), 0};
        for (const sb_hist& cpu : per_cpu) {
          for (size_t slot = 0; slot < SB_HIST_SLOTS; ++slot) h.hist.add_slot_count(slot, cpu.slots[slot]);
          h.total_ns += cpu.total_ns;
        }
        return h;
      },
      and_delete);
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
    calls.push_back({state.tgid, key.tid, key.probe_id, state.entry_ns, state.args.comm, nullptr});
  }
  return calls;
}

CallpairCounters CallpairProgram::counters() const {
  const auto& c = skel_->bss->counters;
  return {__atomic_load_n(&c.ringbuf_drops, __ATOMIC_RELAXED), __atomic_load_n(&c.orphan_returns, __ATOMIC_RELAXED),
          __atomic_load_n(&c.state_failures, __ATOMIC_RELAXED)};
}

uint32_t CallpairProgram::entry_program_id() const { return bpf_program_id(skel_->progs.call_enter); }
uint32_t CallpairProgram::exit_program_id() const { return bpf_program_id(skel_->progs.call_exit); }

}  // namespace slowburn
