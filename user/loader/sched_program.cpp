#include "loader/sched_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "loader/bpf_maps.h"
#include "slowburn/sched.h"

// After slowburn/sched.h: the skeleton refers to its types.
#include "sched.skel.h"

namespace slowburn {

Result<std::unique_ptr<SchedProgram>> SchedProgram::load_and_attach() {
  auto opened = Skeleton<sched_bpf>::open("the scheduler program (bpf/sched.bpf.c)");
  if (!opened) return opened.error();
  std::unique_ptr<SchedProgram> program(new SchedProgram(std::move(*opened)));
  if (auto loaded = program->skel_.load(); !loaded) return loaded.error();
  auto& skel = program->skel_;
  for (bpf_program* prog :
       {skel->progs.sb_sched_switch, skel->progs.sb_sched_wakeup, skel->progs.sb_sched_wakeup_new}) {
    bpf_link* link = bpf_program__attach(prog);
    if (!link) return make_sys_error(errno, fmt::format("cannot attach {}", bpf_program__name(prog)));
    program->skel_.links().add(link);
  }
  return program;
}

SchedProgram::SchedProgram(Skeleton<sched_bpf> skel) : skel_(std::move(skel)) {}

SchedProgram::~SchedProgram() = default;

Result<void> SchedProgram::follow(int32_t pid) {
  uint32_t key = static_cast<uint32_t>(pid);
  uint8_t one = 1;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.targets), &key, &one, BPF_ANY) != 0)
    return make_sys_error(errno, fmt::format("cannot follow pid {} on the CPU (targets map full?)", pid));
  return {};
}

void SchedProgram::forget(int32_t pid) {
  uint32_t key = static_cast<uint32_t>(pid);
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.targets), &key);
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.stats), &key);
  int fd = bpf_map__fd(skel_->maps.shares);
  for (const sb_share_key& k : map_keys<sb_share_key>(fd))
    if (k.tgid == key) bpf_map_delete_elem(fd, &k);
}

std::map<int32_t, SchedSums> SchedProgram::sums() const {
  auto sum = [](const uint32_t& tgid, const std::vector<sb_sched_stats>& cpus) {
    SchedSums s;
    for (const sb_sched_stats& c : cpus) {
      s.oncpu_ns += c.oncpu_ns;
      for (size_t r = 0; r < kOffCpuReasons; ++r) s.offcpu_ns[r] += c.offcpu_ns[r];
      s.involuntary_switches += c.involuntary_switches;
      s.voluntary_switches += c.voluntary_switches;
      s.runq_waits += c.runq_waits;
      for (size_t slot = 0; slot < SB_SCHED_HIST_SLOTS; ++slot) s.runq_ns.add_slot_count(slot, c.runq_slots[slot]);
    }
    return std::make_pair(static_cast<int32_t>(tgid), std::move(s));
  };
  std::map<int32_t, SchedSums> out;
  for (auto& [pid, s] : sum_percpu_map<uint32_t, sb_sched_stats>(bpf_map__fd(skel_->maps.stats), sum))
    out[pid] = std::move(s);
  return out;
}

std::vector<CpuShare> SchedProgram::shares() const {
  std::vector<CpuShare> out;
  int fd = bpf_map__fd(skel_->maps.shares);
  for (const sb_share_key& k : map_keys<sb_share_key>(fd)) {
    sb_share v{};
    if (bpf_map_lookup_elem(fd, &k, &v) != 0) continue;
    out.push_back({static_cast<int32_t>(k.tgid), static_cast<int32_t>(k.other_tgid), k.cpu, v.ns,
                   std::string(v.comm, strnlen(v.comm, sizeof(v.comm)))});
  }
  return out;
}

}  // namespace slowburn
