#include "loader/tp_record_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <cerrno>

#include "slowburn/hwevents.h"

// After slowburn/hwevents.h: the skeleton refers to its types.
#include "tprecord.skel.h"

namespace slowburn {

Result<std::unique_ptr<TpRecordProgram>> TpRecordProgram::load() {
  auto skel = Skeleton<tprecord_bpf>::open("the tracepoint-record program (bpf/tprecord.bpf.c)");
  if (!skel) return skel.error();
  if (auto loaded = skel->load(); !loaded) return loaded.error();
  return std::unique_ptr<TpRecordProgram>(new TpRecordProgram(std::move(*skel)));
}

TpRecordProgram::TpRecordProgram(Skeleton<tprecord_bpf> skel) : skel_(std::move(skel)) {}

TpRecordProgram::~TpRecordProgram() = default;

Result<void> TpRecordProgram::attach(const std::string& system, const std::string& event, uint32_t source) {
  LIBBPF_OPTS(bpf_tracepoint_opts, opts, .bpf_cookie = source);
  bpf_link* link = bpf_program__attach_tracepoint_opts(skel_->progs.tp_record, system.c_str(), event.c_str(), &opts);
  if (!link) return make_sys_error(errno, fmt::format("cannot attach to {}:{}", system, event));
  skel_.links().add(link);
  return {};
}

int TpRecordProgram::events_fd() const { return bpf_map__fd(skel_->maps.tp_records); }

TpRecordCounters TpRecordProgram::counters() const {
  const auto& c = skel_->bss->tp_counters;
  return {__atomic_load_n(&c.records, __ATOMIC_RELAXED), __atomic_load_n(&c.ringbuf_drops, __ATOMIC_RELAXED)};
}

uint32_t TpRecordProgram::program_id() const { return bpf_program_id(skel_->progs.tp_record); }

}  // namespace slowburn
