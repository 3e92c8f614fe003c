#include "loader/collagg_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "core/clock.h"
#include "loader/bpf_maps.h"
#include "loader/features.h"
#include "slowburn/collagg.h"

// After slowburn/collagg.h: the skeleton refers to its types.
#include "collagg.skel.h"

namespace slowburn {

namespace {
AggStats sum_stats(const sb_agg_key& key, const std::vector<sb_agg_stats>& per_cpu) {
  AggStats s;
  s.tgid = key.tgid;
  s.probe_id = key.probe_id;
  s.comm_slot = key.comm_slot;
  for (const sb_agg_stats& v : per_cpu) {
    s.calls += v.calls;
    s.wait_ns += v.wait_ns;
    s.gaps += v.gaps;
    s.gap_ns += v.gap_ns;
    s.arrivals += v.arrivals;
    s.lateness_ns += v.lateness_ns;
    s.lasts += v.lasts;
    s.blame_ns += v.blame_ns;
    s.blame_leaving_ns += v.blame_leaving_ns;
    s.instances += v.instances;
    s.seq_events += v.seq_events;
    s.cpu_calls += v.cpu_calls;
    s.cpu_wait_ns += v.cpu_wait_ns;
    s.oncpu_ns += v.oncpu_ns;
    s.runq_calls += v.runq_calls;
    s.runq_ns += v.runq_ns;
    for (size_t i = 0; i < SB_HIST_SLOTS; ++i) s.wait_us_slots[i] += v.slots[i];
  }
  return s;
}
}  // namespace

Result<std::unique_ptr<CollaggProgram>> CollaggProgram::load(std::optional<AttachMode> requested,
                                                             double sequential_lead_share) {
  auto mode = choose_attach_mode(KernelFeatures::host(), requested);
  if (!mode) return mode.error();
  auto skel = Skeleton<collagg_bpf>::open("the aggregation BPF programs (bpf/collagg.bpf.c)");
  if (!skel) return skel.error();
  (*skel)->rodata->seq_lead_share_bp = sb_share_bp(sequential_lead_share);
  prepare_program((*skel)->progs.agg_enter, *mode);
  prepare_program((*skel)->progs.agg_exit, *mode);
  if (auto loaded = skel->load(); !loaded) return loaded.error();
  return std::unique_ptr<CollaggProgram>(new CollaggProgram(std::move(*skel), *mode));
}

CollaggProgram::CollaggProgram(Skeleton<collagg_bpf> skel, AttachMode mode) : skel_(std::move(skel)), mode_(mode) {}

CollaggProgram::~CollaggProgram() = default;

Result<LinkSet::Id> CollaggProgram::attach(const std::string& path, int32_t pid, std::span<const UprobeSite> sites) {
  auto links = std::make_unique<UprobeLinks>(mode_);
  if (auto ok = links->attach_pair(skel_->progs.agg_enter, skel_->progs.agg_exit, path, pid, sites); !ok)
    return ok.error();
  return skel_.links().add(std::move(links));
}

Result<void> CollaggProgram::add_target(int32_t pid, uint32_t job_slot) {
  uint32_t key = static_cast<uint32_t>(pid);
  sb_agg_target target{job_slot, 0, monotonic_ns()};
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.targets), &key, &target, BPF_ANY) != 0)
    return make_sys_error(errno, fmt::format("cannot register process {} with the aggregation program", pid));
  return {};
}

void CollaggProgram::restart_gaps() {
  uint64_t now_ns = monotonic_ns();
  int fd = bpf_map__fd(skel_->maps.targets);
  for (uint32_t key : map_keys<uint32_t>(fd)) {
    sb_agg_target target{};
    if (bpf_map_lookup_elem(fd, &key, &target) != 0) continue;
    target.since_ns = now_ns;
    bpf_map_update_elem(fd, &key, &target, BPF_EXIST);
  }
}

std::vector<AggStats> CollaggProgram::read_process(int32_t pid) const {
  std::vector<AggStats> result;
  int fd = bpf_map__fd(skel_->maps.stats);
  for (const sb_agg_key& key : map_keys<sb_agg_key>(fd)) {
    if (key.tgid != static_cast<uint32_t>(pid)) continue;
    if (auto values = lookup_percpu<sb_agg_key, sb_agg_stats>(fd, key)) result.push_back(sum_stats(key, *values));
  }
  return result;
}

std::vector<CollaggProgram::NewComm> CollaggProgram::take_new_comms() {
  std::vector<NewComm> found;
  int fd = bpf_map__fd(skel_->maps.new_comms);
  for (const sb_agg_comm_key& key : map_keys<sb_agg_comm_key>(fd)) {
    sb_agg_new_comm seen{};
    if (bpf_map_lookup_and_delete_elem(fd, &key, &seen) != 0) continue;
    found.push_back({static_cast<int32_t>(key.tgid), key.handle, seen.probe_id});
  }
  return found;
}

Result<void> CollaggProgram::set_comm_slot(int32_t pid, uint64_t handle, uint32_t slot) {
  sb_agg_comm_key key{static_cast<uint32_t>(pid), 0, handle};
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.comm_slots), &key, &slot, BPF_ANY) != 0)
    return make_sys_error(errno, fmt::format("cannot name communicator {:#x} of process {}", handle, pid));
  return {};
}

void CollaggProgram::forget_process(int32_t pid) {
  uint32_t key = static_cast<uint32_t>(pid);
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.targets), &key);
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.processes), &key);
  for (int fd : {bpf_map__fd(skel_->maps.stats), bpf_map__fd(skel_->maps.leaving)})
    for (const sb_agg_key& k : map_keys<sb_agg_key>(fd))
      if (k.tgid == key) bpf_map_delete_elem(fd, &k);
  for (int comm_fd : {bpf_map__fd(skel_->maps.comm_slots), bpf_map__fd(skel_->maps.new_comms)})
    for (const sb_agg_comm_key& k : map_keys<sb_agg_comm_key>(comm_fd))
      if (k.tgid == key) bpf_map_delete_elem(comm_fd, &k);
}

void CollaggProgram::forget_job(uint32_t job_slot) {
  int fd = bpf_map__fd(skel_->maps.instances);
  for (const sb_agg_instance_key& k : map_keys<sb_agg_instance_key>(fd))
    if (k.job_slot == job_slot) bpf_map_delete_elem(fd, &k);
}

void CollaggProgram::forget_probe_instances(uint32_t probe_id) {
  int fd = bpf_map__fd(skel_->maps.instances);
  for (const sb_agg_instance_key& k : map_keys<sb_agg_instance_key>(fd))
    if (k.probe_id == probe_id) bpf_map_delete_elem(fd, &k);
}

std::vector<AggStats> CollaggProgram::read() const {
  return sum_percpu_map<sb_agg_key, sb_agg_stats>(bpf_map__fd(skel_->maps.stats), sum_stats);
}

CollaggCounters CollaggProgram::counters() const {
  const auto& c = skel_->bss->counters;
  return {__atomic_load_n(&c.orphan_returns, __ATOMIC_RELAXED), __atomic_load_n(&c.state_failures, __ATOMIC_RELAXED),
          __atomic_load_n(&c.stats_full, __ATOMIC_RELAXED), __atomic_load_n(&c.unplaced, __ATOMIC_RELAXED),
          __atomic_load_n(&c.open_races, __ATOMIC_RELAXED)};
}

std::vector<InFlightCall> CollaggProgram::in_flight() const {
  std::vector<InFlightCall> calls;
  int fd = bpf_map__fd(skel_->maps.call_states);
  for (const sb_call_key& key : map_keys<sb_call_key>(fd)) {
    sb_agg_call_state state;
    if (bpf_map_lookup_elem(fd, &key, &state) != 0) continue;  // returned meanwhile
    calls.push_back({state.tgid, key.tid, key.probe_id, state.entry_ns, state.comm_slot, nullptr});
  }
  return calls;
}

size_t CollaggProgram::map_entries() const {
  return map_keys<uint32_t>(bpf_map__fd(skel_->maps.targets)).size() +
         map_keys<sb_agg_key>(bpf_map__fd(skel_->maps.stats)).size() +
         map_keys<sb_agg_instance_key>(bpf_map__fd(skel_->maps.instances)).size() +
         map_keys<sb_agg_comm_key>(bpf_map__fd(skel_->maps.comm_slots)).size();
}

}  // namespace slowburn
