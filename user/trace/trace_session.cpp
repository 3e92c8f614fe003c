#include "trace/trace_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "comm/comm_registry.h"
#include "detect/causes.h"
#include "engine/call_stream.h"
#include "engine/cause_join.h"
#include "engine/discover.h"
#include "engine/job_judges.h"
#include "loader/attach_probes.h"
#include "loader/callpair_program.h"
#include "loader/privileges.h"
#include "probes/resolver.h"
#include "procfs/ranks.h"
#include "sources/host_monitor.h"
#include "sources/hw_monitor.h"
#include "sources/node_sdc.h"
#include "sources/rdma_sources.h"

namespace slowburn {

namespace {

constexpr int kPollTimeoutMs = 100;
constexpr uint64_t kAdvancePeriodNs = 100'000'000;
constexpr uint64_t kLivenessPeriodNs = 1'000'000'000;

// Work due every period.
struct Every {
  uint64_t period_ns;
  uint64_t next_ns;
  bool due(uint64_t now_ns) {
    if (now_ns < next_ns) return false;
    next_ns += period_ns;
    if (next_ns <= now_ns) next_ns = now_ns + period_ns;  // late: no burst to catch up
    return true;
  }
};

bool is_collective(const ProbeSpec& spec) {
  return spec.backend != CommBackend::none && spec.kind != CallKind::comm_lifecycle;
}

class TraceSession {
 public:
  TraceSession(const TraceOptions& options, Sink& sink) : o_(options), sink_(sink) {}
  ~TraceSession();
  Result<void> start();
  Result<void> run(const std::atomic<bool>& stop);
  TraceResult finish();

 private:
  Result<void> start_hardware();
  void attach_rank(const RankIdentity& rank, SymbolCache& symbols);
  Result<void> start_rdma(SymbolCache& symbols);
  Result<void> open_stream();
  Result<void> poll_hardware(uint64_t now_ns, bool final = false);
  // False once every traced rank has exited.
  Result<bool> check_ranks(uint64_t now_ns);
  void emit(const DetectorOutput& out, uint64_t now_ns);
  void report_histograms();
  void report_summary(uint64_t now_ns);
  // Sets a finding's likely causes from every device event of the session.
  void explain(Finding& finding) const {
    attach_likely_causes(finding, result_.device_events, concerns_through(hw_ ? &hw_->topology() : nullptr));
    attach_sdc_activity(finding, sdc_activity_);
  }
  // The second SDC reading, before the session's last findings are explained.
  void read_sdc_activity();

  const TraceOptions& o_;
  Sink& sink_;
  TraceResult result_;
  std::vector<const ProbeSpec*> probes_;
  std::unique_ptr<CallpairProgram> program_;
  std::unique_ptr<HwMonitor> hw_;
  std::unique_ptr<HostMonitor> host_;
  std::optional<NodeSdcWatch> sdc_;
  std::optional<std::string> sdc_activity_;
  std::unique_ptr<RdmaSources> rdma_;
  std::unique_ptr<JobJudges> judges_;
  std::unique_ptr<CallStream> stream_;
  std::map<int32_t, bool> alive_;
  uint64_t start_ns_ = 0;
};

// Consumers before producers: the stream reads the programs' maps, the
// links run the programs.
TraceSession::~TraceSession() {
  stream_.reset();
  rdma_.reset();
  host_.reset();
  hw_.reset();
  program_.reset();
}

Result<void> TraceSession::start() {
  if (auto ok = check_tracing_privileges(); !ok) return ok.error();
  auto ranks = find_ranks(o_.pids, o_.proc_root);
  if (!ranks) return ranks.error();
  result_.ranks = *ranks;
  auto probes = select_probes(o_.probe_patterns);
  if (!probes) return probes.error();
  probes_ = *probes;
  auto program = CallpairProgram::load(CallpairConfig{});
  if (!program) return program.error();
  program_ = std::move(*program);
  judges_ = std::make_unique<JobJudges>(o_.detector, probes_, result_.ranks, CommRegistry::for_processes(o_.proc_root));
  if (o_.on_call) judges_->set_call_tap(o_.on_call);
  if (o_.on_in_flight) judges_->set_in_flight_tap(o_.on_in_flight);
  if (auto ok = start_hardware(); !ok) return ok;
  if (o_.host_signals) {
    HostMonitorOptions host;
    host.files = {o_.proc_root, o_.cgroup_root};
    host.topology = result_.topology;
    host.sysfs_root = o_.sysfs_root;
    host_ = std::make_unique<HostMonitor>(host);
    for (const RankIdentity& rank : result_.ranks) host_->add_rank(rank);
  }
  SymbolCache symbols;
  for (const RankIdentity& rank : result_.ranks) attach_rank(rank, symbols);
  if (auto ok = start_rdma(symbols); !ok) return ok;
  if (hw_)
    for (const ProbeStatus& status : hw_->statuses()) sink_.probe_status(status);
  if (host_)
    for (const ProbeStatus& status : host_->statuses()) sink_.probe_status(status);
  sink_.probes_done(result_.attached + (rdma_ ? rdma_->attached() : 0), result_.ranks.size());
  // No collective probe, even with verbs probes attached (libibverbs in a
  // PyTorch rank), is no straggler verdict: say what the ranks do load.
  if (result_.collectives_attached == 0 && !o_.library) return nothing_traced_error(result_.ranks, o_.proc_root);
  if (result_.attached == 0)
    return make_error("no probe could be attached to any of the {} rank process(es); see the reasons above",
                      result_.ranks.size());
  return open_stream();
}

// The hardware side: which device is whose, and what goes wrong with it.
Result<void> TraceSession::start_hardware() {
  if (!o_.hardware_events) return {};
  auto topology = std::make_shared<Topology>(Topology::read(o_.sysfs_root, o_.proc_root));
  topology->assign_ranks(result_.ranks);
  result_.topology = topology;
  HwMonitorOptions hw_options;
  hw_options.fabric = o_.rdma;
  hw_options.sysfs_root = o_.sysfs_root;
  hw_options.proc_root = o_.proc_root;
  auto started = HwMonitor::start(hw_options, std::move(topology));
  if (!started) return started.error();
  hw_ = std::move(*started);
  HealthSources sources;
  sources.sysfs_root = o_.sysfs_root;
  sources.proc_root = o_.proc_root;
  if (auto sdc = NodeSdcWatch::start(sources))
    sdc_ = std::move(*sdc);
  else
    sink_.note("node ECC/EDAC/MCE activity will not be read: " + sdc.error().message);
  return {};
}

void TraceSession::read_sdc_activity() {
  if (!sdc_) return;
  auto activity = sdc_->finish(&hw_->topology(), result_.ranks);
  if (!activity)
    sink_.note("node ECC/EDAC/MCE activity could not be read: " + activity.error().message);
  else
    sdc_activity_ = *activity;
}

void TraceSession::attach_rank(const RankIdentity& rank, SymbolCache& symbols) {
  auto maps = read_process_maps(o_.proc_root, rank.pid);
  std::vector<ProbeResolution> resolutions;
  for (const ProbeSpec* spec : probes_) {
    ProbeResolution where;
    where.spec = spec;
    if (o_.library)
      where = resolve_in_file(*spec, *o_.library, symbols);
    else if (maps)
      where = resolve_in_process(*spec, o_.proc_root, rank.pid, *maps, symbols);
    else
      where.reason = maps.error().message;
    resolutions.push_back(std::move(where));
  }
  auto statuses = attach_probes(*program_, rank.pid, rank, resolutions);
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (statuses[i].state == ProbeState::attached) {
      ++result_.attached;
      result_.collectives_attached += is_collective(*resolutions[i].spec);
      judges_->attached(resolutions[i].spec->id, rank.pid);
    }
    sink_.probe_status(statuses[i]);
  }
}

Result<void> TraceSession::start_rdma(SymbolCache& symbols) {
  if (!o_.rdma) return {};
  auto started = RdmaSources::start(result_.ranks, o_.proc_root, symbols, hw_ ? &hw_->topology() : nullptr);
  if (!started) return started.error();
  rdma_ = std::move(*started);
  for (const ProbeStatus& status : rdma_->statuses()) sink_.probe_status(status);
  return {};
}

Result<void> TraceSession::open_stream() {
  auto stream = CallStream::open(program_->events_fd(), [this](const CallEvent& call) { judges_->on_call(call); });
  if (!stream) return stream.error();
  stream_ = std::move(*stream);
  if (rdma_)
    if (auto added = rdma_->add_to(
            [this](int fd, RingBufferReader::Handler handler) { return stream_->add(fd, std::move(handler)); });
        !added)
      return added.error();
  for (const RankIdentity& rank : result_.ranks) alive_[rank.pid] = true;
  start_ns_ = monotonic_ns();
  return {};
}

void TraceSession::emit(const DetectorOutput& out, uint64_t now_ns) {
  for (const std::string& note : judges_->take_notes()) sink_.note(note);
  for (const std::string& note : out.notes) sink_.note(note);
  for (const WindowReport& window : out.windows) sink_.window(window);
  for (Finding finding : out.findings) {
    if (!result_.first_finding_after_s) result_.first_finding_after_s = static_cast<double>(now_ns - start_ns_) / 1e9;
    explain(finding);
    sink_.finding(finding);
  }
}

Result<void> TraceSession::poll_hardware(uint64_t now_ns, bool final) {
  std::vector<DeviceEvent> events;
  if (hw_ && !final) {
    auto polled = hw_->poll(0, now_ns);
    if (!polled) return polled.error();
    events = std::move(*polled);
    for (const std::string& note : hw_->take_notes()) sink_.note(note);
  }
  if (host_) {
    for (DeviceEvent& e : final ? host_->finish(now_ns) : host_->poll(now_ns)) events.push_back(std::move(e));
    for (const std::string& note : host_->take_notes()) sink_.note(note);
  }
  // At the end, the per-connection view as it ended, for the findings.
  if (rdma_)
    for (DeviceEvent& e : rdma_->poll(now_ns, final)) events.push_back(std::move(e));
  for (DeviceEvent& e : events) {
    sink_.device_event(e);
    result_.device_events.push_back(std::move(e));
  }
  return {};
}

Result<bool> TraceSession::check_ranks(uint64_t now_ns) {
  emit(judges_->check_in_flight(now_ns, program_->in_flight()), now_ns);
  size_t alive_count = 0;
  for (auto& [pid, is_alive] : alive_) {
    if (is_alive && !process_alive(o_.proc_root, pid)) {
      // Its last records first, while it still counts as a rank.
      auto drained = stream_->drain();
      if (!drained) return drained.error();
      is_alive = false;
      if (host_) host_->rank_exited(pid);
      emit(judges_->retire(pid, *drained), now_ns);
    }
    alive_count += is_alive;
  }
  if (alive_count == 0) sink_.note("every traced rank has exited");
  return alive_count > 0;
}

Result<void> TraceSession::run(const std::atomic<bool>& stop) {
  const uint64_t end_ns = o_.duration_s > 0 ? start_ns_ + static_cast<uint64_t>(o_.duration_s * 1e9) : 0;
  const uint64_t interval_ns = static_cast<uint64_t>(std::max(o_.interval_s, 0.1) * 1e9);
  Every advance{kAdvancePeriodNs, start_ns_ + kAdvancePeriodNs};
  Every table{interval_ns, start_ns_ + interval_ns};
  Every liveness{kLivenessPeriodNs, start_ns_ + kLivenessPeriodNs};
  while (!stop.load()) {
    if (auto polled = stream_->poll(kPollTimeoutMs); !polled) return polled;
    uint64_t now = monotonic_ns();
    if (auto ok = poll_hardware(now); !ok) return ok;
    if (end_ns && now >= end_ns) break;
    if (advance.due(now)) emit(judges_->advance(now), now);
    if (table.due(now)) sink_.tick(now);
    if (liveness.due(now)) {
      auto any_alive = check_ranks(now);
      if (!any_alive) return any_alive.error();
      if (!*any_alive) break;
    }
    if (o_.stop_on_finding && result_.first_finding_after_s) break;
  }
  return {};
}

void TraceSession::report_histograms() {
  std::map<int32_t, RankIdentity> by_pid;
  for (const RankIdentity& rank : result_.ranks) by_pid[rank.pid] = rank;
  std::map<uint32_t, const ProbeSpec*> specs;
  for (const ProbeSpec* spec : probes_) specs[spec->id] = spec;
  auto hists = program_->histograms("usecs");
  auto rank_of = [&](uint32_t tgid) {
    auto it = by_pid.find(static_cast<int32_t>(tgid));
    return it == by_pid.end() ? -1 : it->second.rank;
  };
  std::sort(hists.begin(), hists.end(), [&](const KernelHistogram& a, const KernelHistogram& b) {
    return std::make_tuple(a.probe_id, a.comm, rank_of(a.tgid), a.tgid) <
           std::make_tuple(b.probe_id, b.comm, rank_of(b.tgid), b.tgid);
  });
  for (KernelHistogram& h : hists) {
    HistogramReport report;
    report.pid = static_cast<int32_t>(h.tgid);
    if (auto rank = by_pid.find(report.pid); rank != by_pid.end()) report.rank = rank->second;
    auto spec = specs.find(h.probe_id);
    report.probe = spec != specs.end() ? spec->second->name : fmt::format("probe {}", h.probe_id);
    if (spec != specs.end() && h.comm)
      report.comm = judges_->communicator_of(report.pid, spec->second->backend, h.comm);
    report.hist = std::move(h.hist);
    report.total_ns = h.total_ns;
    sink_.histogram(report);
  }
  if (rdma_) {
    for (const HistogramReport& h : rdma_->ib_histograms()) sink_.histogram(h);
    for (const std::string& lifecycle : rdma_->qp_lifecycles()) sink_.note(lifecycle);
    if (uint64_t lost = rdma_->lost())
      sink_.note(fmt::format("{} libibverbs call record(s) lost or undecodable", lost));
  }
}

void TraceSession::report_summary(uint64_t now_ns) {
  CallpairCounters kernel = program_->counters();
  DetectorCounters c = judges_->counters();
  SessionSummary& summary = result_.summary;
  summary.traced_seconds = static_cast<double>(now_ns - start_ns_) / 1e9;
  summary.ringbuf_drops = kernel.ringbuf_drops;
  summary.orphan_returns = kernel.orphan_returns;
  summary.untimed_calls = kernel.state_failures;
  summary.decode_rejected = stream_->decode_stats().rejected();
  summary.calls = c.calls;
  summary.sequence_gaps = c.sequence_gaps;
  summary.discarded_calls = c.discarded_calls;
  summary.instances = c.instances;
  summary.unknown_process = c.unknown_process;
  summary.late_calls = c.late_calls;
  summary.aligned_by_sequence = c.aligned_by_sequence;
  summary.order_mismatches = c.order_mismatches;
  result_.communicators = judges_->communicators();
  summary.communicators = result_.communicators.size();
  for (Finding& f : judges_->findings()) {
    explain(f);  // events that came after the finding count too
    summary.findings.push_back(std::move(f));
  }
  sink_.communicators(result_.communicators);
  sink_.summary(summary);
}

TraceResult TraceSession::finish() {
  // Records already in the ring buffer still count.
  if (auto drained = stream_->drain(); !drained) sink_.note(drained.error().message);
  uint64_t now = monotonic_ns();
  if (auto ok = poll_hardware(now, true); !ok) sink_.note(ok.error().message);
  read_sdc_activity();
  emit(judges_->finish(now), now);
  sink_.tick(now);
  report_histograms();
  report_summary(now);
  result_.verdict = judges_->verdict(now);
  for (Finding& f : result_.verdict.stragglers) explain(f);
  for (Finding& f : result_.verdict.hangs) explain(f);
  sink_.verdict(result_.verdict);
  return std::move(result_);
}

}  // namespace

Result<TraceResult> run_trace(const TraceOptions& options, Sink& sink, const std::atomic<bool>& stop) {
  TraceSession session(options, sink);
  if (auto started = session.start(); !started) return started.error();
  if (auto ran = session.run(stop); !ran) return ran.error();
  return session.finish();
}

}  // namespace slowburn
