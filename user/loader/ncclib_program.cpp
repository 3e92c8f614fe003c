#include "loader/ncclib_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

#include "loader/bpf_maps.h"
#include "slowburn/ncclib.h"

// After slowburn/ncclib.h: the skeleton refers to its types.
#include "ncclib.skel.h"

namespace slowburn {

NcclIbProgram::NcclIbProgram(ncclib_bpf* skel, AttachMode mode)
    : skel_(skel), links_(std::make_unique<UprobeLinks>(mode)) {}

Result<std::unique_ptr<NcclIbProgram>> NcclIbProgram::load(std::optional<AttachMode> requested) {
  auto mode = choose_attach_mode(requested);
  if (!mode) return mode.error();
  ncclib_bpf* skel = ncclib_bpf::open();
  if (!skel) return make_sys_error(errno, "cannot open the NCCL IB program (bpf/ncclib.bpf.c)");
  std::unique_ptr<NcclIbProgram> program(new NcclIbProgram(skel, *mode));
  for (bpf_program* p : {skel->progs.ib_isend, skel->progs.ib_irecv, skel->progs.ib_iflush, skel->progs.ib_post_return,
                         skel->progs.ib_test, skel->progs.ib_test_return})
    prepare_program(p, *mode);
  if (int err = ncclib_bpf::load(skel); err) return make_sys_error(-err, "cannot load the NCCL IB program");
  return program;
}

NcclIbProgram::~NcclIbProgram() {
  links_.reset();
  ncclib_bpf::destroy(skel_);
}

Result<void> NcclIbProgram::attach(const ProbeResolution& probe, int32_t pid) {
  bpf_program* entry = nullptr;
  bpf_program* exit = skel_->progs.ib_post_return;
  if (probe.spec->name == "nccl.ib.isend")
    entry = skel_->progs.ib_isend;
  else if (probe.spec->name == "nccl.ib.irecv")
    entry = skel_->progs.ib_irecv;
  else if (probe.spec->name == "nccl.ib.iflush")
    entry = skel_->progs.ib_iflush;
  else if (probe.spec->name == "nccl.ib.test")
    entry = skel_->progs.ib_test, exit = skel_->progs.ib_test_return;
  else
    return make_error("{} is not an NCCL IB probe", probe.spec->name);
  std::vector<UprobeSite> sites;
  for (const AttachSite& site : probe.sites) sites.push_back({site.file_offset, 0});
  if (auto ok = links_->attach(entry, false, probe.attach_path, pid, sites); !ok) return ok;
  return links_->attach(exit, true, probe.attach_path, pid, sites);
}

std::vector<IbConnectionStats> NcclIbProgram::stats() const {
  std::vector<IbConnectionStats> result;
  int fd = bpf_map__fd(skel_->maps.ib_stats);
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return result;
  std::vector<sb_ib_stats> values(static_cast<size_t>(cpus));
  for (const sb_ib_key& key : map_keys<sb_ib_key>(fd)) {
    if (bpf_map_lookup_elem(fd, &key, values.data()) != 0) continue;
    IbConnectionStats s;
    s.tgid = key.tgid;
    s.direction = static_cast<IbDirection>(key.direction);
    s.comm = key.comm;
    for (const sb_ib_stats& cpu : values) {
      for (size_t i = 0; i < SB_IB_LAT_SLOTS; ++i) s.latency.add_slot_count(i, cpu.lat_slots[i]);
      for (size_t i = 0; i < SB_IB_SIZE_SLOTS; ++i) s.size.add_slot_count(i, cpu.size_slots[i]);
      s.requests += cpu.requests;
      s.bytes += cpu.bytes;
      s.total_ns += cpu.total_ns;
    }
    result.push_back(std::move(s));
  }
  return result;
}

IbCounters NcclIbProgram::counters() const {
  const auto& c = skel_->bss->ib_counters;
  auto load = [](const __u64& v) { return __atomic_load_n(&v, __ATOMIC_RELAXED); };
  IbCounters out;
  out.posts = load(c.posts);
  out.posts_deferred = load(c.posts_deferred);
  out.completions = load(c.completions);
  out.unknown_done = load(c.unknown_done);
  out.table_full = load(c.table_full);
  out.stats_full = load(c.stats_full);
  out.slot_clashes = load(c.slot_clashes);
  int cpus = libbpf_num_possible_cpus();
  std::vector<uint64_t> per_cpu(static_cast<size_t>(cpus > 0 ? cpus : 1));
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.polls), &zero, per_cpu.data()) == 0)
    for (uint64_t n : per_cpu) out.polls += n;
  return out;
}

}  // namespace slowburn
