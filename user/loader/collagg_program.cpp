#include "loader/collagg_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <cerrno>
#include <ctime>

#include "loader/bpf_maps.h"
#include "loader/privileges.h"
#include "slowburn/collagg.h"

// After slowburn/collagg.h: the skeleton refers to its types.
#include "collagg.skel.h"

namespace slowburn {

namespace {
AggStats sum_stats(const sb_agg_key& key, const std::vector<sb_agg_stats>& per_cpu) {
  AggStats s;
  s.tgid = key.tgid;
  s.probe_id = key.probe_id;
  for (const sb_agg_stats& v : per_cpu) {
    s.calls += v.calls;
    s.wait_ns += v.wait_ns;
    s.gaps += v.gaps;
    s.gap_ns += v.gap_ns;
    s.arrivals += v.arrivals;
    s.lateness_ns += v.lateness_ns;
    s.lasts += v.lasts;
    s.blame_ns += v.blame_ns;
    s.instances += v.instances;
    for (size_t i = 0; i < SB_HIST_SLOTS; ++i) s.wait_us_slots[i] += v.slots[i];
  }
  return s;
}
}  // namespace

uint64_t make_collagg_cookie(uint16_t probe_id, bool synchronizing) {
  return uint64_t{probe_id} | (synchronizing ? SB_COOKIE_SYNC : 0);
}

Result<std::unique_ptr<CollaggProgram>> CollaggProgram::load(std::optional<AttachMode> requested) {
  auto mode = choose_attach_mode(requested);
  if (!mode) return mode.error();
  collagg_bpf* skel = collagg_bpf::open();
  if (!skel)
    return make_sys_error(errno, "cannot open the aggregation BPF object (embedded in slowburn: a build problem)");
  std::unique_ptr<CollaggProgram> program(new CollaggProgram(skel, *mode));
  prepare_program(skel->progs.agg_enter, *mode);
  prepare_program(skel->progs.agg_exit, *mode);
  if (int err = collagg_bpf::load(skel); err) {
    if (-err == EPERM || !check_tracing_privileges())
      return make_sys_error(
          -err, std::string("cannot load the aggregation BPF programs (") + tracing_privileges_hint() + ")");
    return make_sys_error(-err, "cannot load the aggregation BPF programs: the kernel verifier rejected them");
  }
  return program;
}

CollaggProgram::~CollaggProgram() { collagg_bpf::destroy(skel_); }

Result<std::unique_ptr<UprobeLinks>> CollaggProgram::attach(const std::string& path, int32_t pid,
                                                            std::span<const UprobeSite> sites) {
  auto links = std::make_unique<UprobeLinks>(mode_);
  if (auto ok = links->attach(skel_->progs.agg_enter, false, path, pid, sites); !ok) return ok.error();
  if (auto ok = links->attach(skel_->progs.agg_exit, true, path, pid, sites); !ok) return ok.error();
  return links;
}

Result<void> CollaggProgram::add_target(int32_t pid, uint32_t job_slot) {
  uint32_t key = static_cast<uint32_t>(pid);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // bpf_ktime_get_ns()'s clock
  sb_agg_target target{job_slot, 0, static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + now.tv_nsec};
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.targets), &key, &target, BPF_ANY) != 0)
    return make_sys_error(errno, fmt::format("cannot register process {} with the aggregation program", pid));
  return {};
}

void CollaggProgram::restart_gaps() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  uint64_t now_ns = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + now.tv_nsec;
  int fd = bpf_map__fd(skel_->maps.targets);
  for (uint32_t key : map_keys<uint32_t>(fd)) {
    sb_agg_target target{};
    if (bpf_map_lookup_elem(fd, &key, &target) != 0) continue;
    target.since_ns = now_ns;
    bpf_map_update_elem(fd, &key, &target, BPF_EXIST);
  }
}

std::vector<AggStats> CollaggProgram::read_process(int32_t pid, std::span<const uint32_t> probe_ids) const {
  std::vector<AggStats> result;
  int fd = bpf_map__fd(skel_->maps.stats);
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return result;
  std::vector<sb_agg_stats> values(static_cast<size_t>(cpus));
  for (uint32_t probe : probe_ids) {
    sb_agg_key key{static_cast<uint32_t>(pid), probe};
    if (bpf_map_lookup_elem(fd, &key, values.data()) != 0) continue;
    result.push_back(sum_stats(key, values));
  }
  return result;
}

void CollaggProgram::forget_process(int32_t pid) {
  uint32_t key = static_cast<uint32_t>(pid);
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.targets), &key);
  int fd = bpf_map__fd(skel_->maps.stats);
  for (const sb_agg_key& k : map_keys<sb_agg_key>(fd))
    if (k.tgid == key) bpf_map_delete_elem(fd, &k);
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
  std::vector<AggStats> result;
  int fd = bpf_map__fd(skel_->maps.stats);
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return result;
  std::vector<sb_agg_stats> values(static_cast<size_t>(cpus));
  for (const sb_agg_key& key : map_keys<sb_agg_key>(fd)) {
    if (bpf_map_lookup_elem(fd, &key, values.data()) != 0) continue;  // forgotten meanwhile
    result.push_back(sum_stats(key, values));
  }
  return result;
}

CollaggCounters CollaggProgram::counters() const {
  const auto& c = skel_->bss->counters;
  return {__atomic_load_n(&c.orphan_returns, __ATOMIC_RELAXED), __atomic_load_n(&c.state_failures, __ATOMIC_RELAXED),
          __atomic_load_n(&c.stats_full, __ATOMIC_RELAXED), __atomic_load_n(&c.unplaced, __ATOMIC_RELAXED)};
}

size_t CollaggProgram::map_entries() const {
  return map_keys<uint32_t>(bpf_map__fd(skel_->maps.targets)).size() +
         map_keys<sb_agg_key>(bpf_map__fd(skel_->maps.stats)).size() +
         map_keys<sb_agg_instance_key>(bpf_map__fd(skel_->maps.instances)).size();
}

}  // namespace slowburn
