#include "sources/rdma_sources.h"

#include <fmt/format.h>

#include <algorithm>

#include "loader/attach_probes.h"
#include "loader/ncclib_program.h"
#include "loader/ring_buffer.h"
#include "loader/verbs_program.h"
#include "procfs/maps.h"
#include "rdma/ib_connections.h"
#include "rdma/verbs_names.h"
#include "sources/verbs_data_path.h"

namespace slowburn {

namespace {

// The resolutions of `probes` in each rank that maps `library`; empty when none does.
std::map<int32_t, std::vector<ProbeResolution>> resolve_in_ranks(const std::vector<RankIdentity>& ranks,
                                                                 const std::vector<const ProbeSpec*>& probes,
                                                                 const char* library,
                                                                 const std::filesystem::path& proc_root,
                                                                 SymbolCache& symbols) {
  std::map<int32_t, std::vector<ProbeResolution>> out;
  for (const RankIdentity& rank : ranks) {
    auto maps = read_process_maps(proc_root, rank.pid);
    if (!maps || !find_library(*maps, library)) continue;
    for (const ProbeSpec* spec : probes)
      out[rank.pid].push_back(resolve_in_process(*spec, proc_root, rank.pid, *maps, symbols));
  }
  return out;
}

}  // namespace

RdmaSources::RdmaSources(const std::vector<RankIdentity>& ranks, const Topology* topology) : builder_(topology) {
  for (const RankIdentity& r : ranks) by_pid_[r.pid] = r;
}

RdmaSources::~RdmaSources() = default;

std::optional<int> RdmaSources::rank_of(uint32_t pid) const {
  auto it = by_pid_.find(static_cast<int32_t>(pid));
  return it == by_pid_.end() ? std::nullopt : std::optional<int>(it->second.rank);
}

Result<std::unique_ptr<RdmaSources>> RdmaSources::start(const std::vector<RankIdentity>& ranks,
                                                        const std::filesystem::path& proc_root, SymbolCache& symbols,
                                                        const Topology* topology) {
  std::unique_ptr<RdmaSources> sources(new RdmaSources(ranks, topology));
  sources->proc_root_ = proc_root;
  struct Side {
    const char* patterns;
    ProbeProgram program;
    const char* library;
  };
  for (const Side& side : {Side{"verbs.*", ProbeProgram::verbs, "libibverbs.so"},
                           Side{"nccl.ib.*", ProbeProgram::nccl_ib, "libnccl.so"}}) {
    auto probes = select_probes({side.patterns}, side.program);
    if (!probes) return probes.error();
    auto by_rank = resolve_in_ranks(ranks, *probes, side.library, proc_root, symbols);
    if (by_rank.empty()) {
      ProbeStatus status;
      status.probe = side.patterns;
      status.state = ProbeState::unavailable;
      status.detail = fmt::format("no traced rank has {} loaded", side.library);
      sources->statuses_.push_back(status);
      continue;
    }
    // Load the program only now: a job without RDMA costs nothing.
    // A program that does not load costs this source, not the trace.
    std::function<Result<void>(const ProbeResolution&, int32_t)> attach;
    Error load_error;
    if (side.program == ProbeProgram::verbs) {
      auto program = VerbsProgram::load();
      if (program) {
        sources->verbs_ = std::move(*program);
        attach = [&](const ProbeResolution& r, int32_t pid) { return sources->verbs_->attach(r, pid); };
      } else {
        load_error = program.error();
      }
    } else {
      auto program = NcclIbProgram::load();
      if (program) {
        sources->ib_ = std::move(*program);
        attach = [&](const ProbeResolution& r, int32_t pid) { return sources->ib_->attach(r, pid); };
      } else {
        load_error = program.error();
      }
    }
    if (!attach) {
      ProbeStatus status;
      status.probe = side.patterns;
      status.state = ProbeState::failed;
      status.detail = load_error.message;
      sources->statuses_.push_back(status);
      continue;
    }
    for (const auto& [pid, resolutions] : by_rank) {
      for (const ProbeResolution& r : resolutions) {
        ProbeStatus status = attach_with_status(r, pid, sources->by_pid_.at(pid), attach);
        sources->attached_ += status.state == ProbeState::attached;
        sources->statuses_.push_back(status);
      }
    }
  }
  return sources;
}

Result<void> RdmaSources::add_to(const std::function<Result<void>(int fd, RingBufferReader::Handler handler)>& add) {
  if (!verbs_) return {};
  return add(verbs_->events_fd(), [this](std::span<const std::byte> record) {
    auto call = decoder_.decode_verbs(record);
    if (!call) return;
    if (call->object && call->result == 0 &&
        (call->kind == VerbsCallKind::create_qp || call->kind == VerbsCallKind::modify_qp))
      trace_data_path(static_cast<int32_t>(call->pid), call->object, call->qp_num);
    for (const QpEvent& e : inventory_.apply(*call)) pending_.push_back(builder_.qp(e, rank_of(e.pid)));
  });
}

void RdmaSources::trace_data_path(int32_t pid, uint64_t qp, uint32_t qp_num) {
  auto rank = by_pid_.find(pid);
  if (rank == by_pid_.end()) return;
  if (!data_path_) data_path_ = std::make_unique<VerbsDataPathTracer>(*verbs_, proc_root_);
  auto status = data_path_->saw_qp(pid, qp, qp_num, rank->second);
  if (!status) return;
  attached_ += status->state == ProbeState::attached;
  statuses_.push_back(*status);
  new_statuses_.push_back(*status);
}

void RdmaSources::report_slow(const std::vector<IbConnectionStats>& stats, uint64_t now_ns) {
  for (const IbConnectionView& v : analyze_ib_connections(stats, [this](uint32_t pid) { return rank_of(pid); })) {
    if (!v.slow || !reported_slow_.insert({v.stats->tgid, static_cast<int>(v.stats->direction), v.stats->comm}).second)
      continue;
    IbSlowConnection c = slow_connection_of(v);
    std::optional<DeviceEventBuilder::QpPath> path;
    if (c.direction == IbDirection::qp)
      if (auto q = inventory_.last_known(c.pid, static_cast<uint32_t>(c.comm)))
        path = DeviceEventBuilder::QpPath::of(*q);
    pending_.push_back(builder_.slow_connection(c, v.rank, now_ns, path));
  }
}

std::vector<DeviceEvent> RdmaSources::poll(uint64_t now_ns, bool final) {
  if ((ib_ || (data_path_ && data_path_->any())) && (final || now_ns >= next_ib_check_ns_)) {
    next_ib_check_ns_ = now_ns + 1'000'000'000;
    if (ib_) report_slow(ib_->stats(), now_ns);
    if (data_path_ && data_path_->any()) report_slow(verbs_->qp_stats(), now_ns);
  }
  return std::exchange(pending_, {});
}

std::vector<HistogramReport> ib_histograms(const std::vector<IbConnectionView>& views,
                                           const std::map<int32_t, RankIdentity>& ranks) {
  std::vector<HistogramReport> out;
  for (const IbConnectionView& v : views) {
    HistogramReport h;
    if (auto it = ranks.find(static_cast<int32_t>(v.stats->tgid)); it != ranks.end()) h.rank = it->second;
    h.pid = static_cast<int32_t>(v.stats->tgid);
    h.probe = (v.stats->direction == IbDirection::qp ? "verbs " : "nccl.ib ") + ib_connection_label(v);
    h.hist = v.stats->latency;
    h.total_ns = v.stats->total_ns;
    out.push_back(std::move(h));
  }
  return out;
}

std::vector<HistogramReport> RdmaSources::ib_histograms() const {
  std::vector<IbConnectionStats> stats;
  if (ib_) stats = ib_->stats();
  if (data_path_ && data_path_->any())
    for (IbConnectionStats& s : verbs_->qp_stats()) stats.push_back(std::move(s));
  return slowburn::ib_histograms(analyze_ib_connections(stats, [this](uint32_t pid) { return rank_of(pid); }), by_pid_);
}

std::vector<std::string> RdmaSources::qp_lifecycles() const {
  std::vector<std::string> lines;
  for (const auto& [pid, totals] : inventory_.totals()) {
    auto rank = rank_of(pid);
    lines.push_back(fmt::format("{}pid {} libibverbs: {}", rank ? fmt::format("rank {} ", *rank) : "", pid,
                                qp_totals_text(totals)));
  }
  if (data_path_)
    for (std::string& line : data_path_->summary_lines([this](uint32_t pid) { return rank_of(pid); }))
      lines.push_back(std::move(line));
  return lines;
}

uint64_t RdmaSources::lost() const {
  if (!verbs_) return 0;
  VerbsCounters c = verbs_->counters();
  return c.ringbuf_drops + c.state_failures + decoder_.stats().rejected();
}

}  // namespace slowburn
