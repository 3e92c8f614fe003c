#include "trace/trace_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "comm/comm_registry.h"
#include "engine/call_stream.h"
#include "engine/discover.h"
#include "engine/finding_explainer.h"
#include "engine/job_judges.h"
#include "engine/periodic.h"
#include "engine/rank_watch.h"
#include "engine/stuck_at_attach.h"
#include "loader/attach_probes.h"
#include "loader/callpair_program.h"
#include "loader/privileges.h"
#include "probes/resolver.h"
#include "procfs/ranks.h"
#include "sources/rdma_sources.h"
#include "symbols/elf_symbols.h"

namespace slowburn {

namespace {

constexpr int kPollTimeoutMs = 100;
constexpr uint64_t kAdvancePeriodNs = 100'000'000;
constexpr uint64_t kLivenessPeriodNs = 1'000'000'000;
// No call completed on any rank this long after attaching: the ranks may
// have been stuck before slowburn came (their waits began unobserved), so
// their stacks are read then, not only at the session's end. Longer than a
// gap between collectives of a running job (a step's compute, a data
// loader's pause) mostly is; a snapshot of a job that merely paused names
// nobody (stacks/stuck.h) and holds each rank ~15-50 ms a read.
constexpr uint64_t kQuietBeforeStacksNs = 3'000'000'000;

bool is_collective(const ProbeSpec& spec) {
  return spec.backend != CommBackend::none && spec.kind != CallKind::comm_lifecycle;
}

class TraceSession {
 public:
  TraceSession(const TraceOptions& options, Sink& sink) : o_(options), sink_(sink) {}
  Result<void> start(const std::atomic<bool>& stop);
  Result<void> run(const std::atomic<bool>& stop);
  TraceResult finish();

 private:
  Result<void> start_sources();
  void attach_rank(const RankIdentity& rank, SymbolCache& symbols);
  // No rank has loaded a collective library yet (PyTorch loads libnccl at
  // init_process_group): waits for one, within the session's duration, and
  // attaches then.
  void wait_for_libraries(const std::atomic<bool>& stop, SymbolCache& symbols);
  Result<void> open_stream();
  void report_sources();
  Result<void> poll_sources(uint64_t now_ns);
  void add_events(std::vector<DeviceEvent> events);
  // False once every traced rank has exited.
  Result<bool> check_ranks(uint64_t now_ns);
  void emit(const DetectorOutput& out, uint64_t now_ns);
  // The ranks' stacks (engine/stuck_at_attach.h): the stuck ranks they
  // name become hang findings at once, and the verdict's if it has no other.
  void take_stacks(const std::vector<RankIdentity>& ranks, uint64_t now_ns);
  // 3 s in with no call completed: the jobs whose every rank is traced and
  // none of whose calls began since attaching (a rank still starting up
  // while others wait in their first collective is not a job stuck before).
  void stacks_if_stuck_before(uint64_t now_ns);
  void report_histograms();
  void report_summary(uint64_t now_ns);

  const TraceOptions& o_;
  Sink& sink_;
  TraceResult result_;
  std::vector<const ProbeSpec*> probes_;
  FindingExplainer explainer_;
  // Declared in the order they are built; destroyed in reverse: the stream
  // that reads the programs' maps before the sources and programs.
  std::unique_ptr<CallpairProgram> program_;
  std::unique_ptr<NodeSources> sources_;
  std::unique_ptr<JobJudges> judges_;
  std::unique_ptr<RankWatch> watch_;  // its ring buffer is read by the stream: outlives it
  std::unique_ptr<CallStream> stream_;
  std::map<int32_t, bool> alive_;
  std::set<std::pair<int32_t, uint32_t>> attached_;  // (pid, probe): never attached twice
  uint64_t start_ns_ = 0;
  bool stacks_taken_ = false;
  std::vector<Finding> stuck_;  // hangs the stacks named
};

Result<void> TraceSession::start(const std::atomic<bool>& stop) {
  if (auto ok = check_tracing_privileges(); !ok) return ok.error();
  auto ranks = find_ranks(o_.pids, o_.node.roots.proc_root);
  if (!ranks) return ranks.error();
  result_.ranks = *ranks;
  auto probes = select_probes(o_.probe_patterns);
  if (!probes) return probes.error();
  probes_ = *probes;
  auto program = CallpairProgram::load(CallpairConfig{});
  if (!program) return program.error();
  program_ = std::move(*program);
  judges_ = std::make_unique<JobJudges>(o_.detector, probes_, result_.ranks,
                                        CommRegistry::for_processes(o_.node.roots.proc_root));
  if (o_.on_call) judges_->set_call_tap(o_.on_call);
  if (o_.on_in_flight) judges_->set_in_flight_tap(o_.on_in_flight);
  if (auto ok = start_sources(); !ok) return ok;
  SymbolCache symbols;
  for (const RankIdentity& rank : result_.ranks) attach_rank(rank, symbols);
  if (result_.collectives_attached == 0 && !o_.library) wait_for_libraries(stop, symbols);
  if (auto ok = sources_->attach_rdma(result_.ranks, symbols); !ok) return ok;
  report_sources();
  sink_.probes_done(result_.attached + sources_->rdma_attached(), result_.ranks.size());
  // No collective probe, even with verbs probes attached (libibverbs in a
  // PyTorch rank), is no straggler verdict: say what the ranks do load.
  if (result_.collectives_attached == 0 && !o_.library)
    return nothing_traced_error(result_.ranks, o_.node.roots.proc_root);
  if (result_.attached == 0)
    return make_error("no probe could be attached to any of the {} rank process(es); see the reasons above",
                      result_.ranks.size());
  return open_stream();
}

// The node's side: which device is whose, and what goes wrong with it.
Result<void> TraceSession::start_sources() {
  NodeSourcesOptions node = o_.node;
  node.sdc = true;
  auto sources = NodeSources::start(node);
  if (!sources) return sources.error();
  sources_ = std::move(*sources);
  sources_->set_ranks(result_.ranks);
  result_.topology = sources_->shared_topology();
  explainer_.set_topology(sources_->topology());
  for (const std::string& note : sources_->take_notes()) sink_.note(note);
  return {};
}

void TraceSession::report_sources() {
  for (const ProbeStatus& status : sources_->take_statuses()) sink_.probe_status(status);
  for (const std::string& note : sources_->take_notes()) sink_.note(note);
}

void TraceSession::wait_for_libraries(const std::atomic<bool>& stop, SymbolCache& symbols) {
  auto none_loaded = [&] {
    return std::all_of(result_.ranks.begin(), result_.ranks.end(), [&](const RankIdentity& r) {
      return communication_libraries(o_.node.roots.proc_root, r.pid).empty();
    });
  };
  if (!none_loaded()) return;  // loaded, and not attachable: the error says why
  sink_.note(
      "no rank has loaded a collective library yet (MPI, NCCL, gloo; PyTorch loads libnccl at "
      "init_process_group): waiting for one, within the session's duration (Ctrl-C to stop)");
  const uint64_t began = monotonic_ns();
  const uint64_t limit_ns = o_.duration_s > 0 ? static_cast<uint64_t>(o_.duration_s * 1e9) : UINT64_MAX;
  while (!stop.load() && monotonic_ns() - began < limit_ns) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    bool any_alive = std::any_of(result_.ranks.begin(), result_.ranks.end(), [&](const RankIdentity& r) {
      return std::filesystem::exists(o_.node.roots.proc_root / std::to_string(r.pid));
    });
    if (!any_alive) return;
    if (none_loaded()) continue;
    for (const RankIdentity& rank : result_.ranks) attach_rank(rank, symbols);
    sink_.note(fmt::format("a collective library was loaded after {:.1f} s: attached",
                           static_cast<double>(monotonic_ns() - began) / 1e9));
    return;
  }
}

void TraceSession::attach_rank(const RankIdentity& rank, SymbolCache& symbols) {
  auto maps = read_process_maps(o_.node.roots.proc_root, rank.pid);
  std::vector<ProbeResolution> resolutions;
  for (const ProbeSpec* spec : probes_) {
    if (attached_.contains({rank.pid, spec->id})) continue;
    ProbeResolution where;
    where.spec = spec;
    if (o_.library)
      where = resolve_in_file(*spec, *o_.library, symbols);
    else if (maps)
      where = resolve_in_process(*spec, o_.node.roots.proc_root, rank.pid, *maps, symbols);
    else
      where.reason = maps.error().message;
    resolutions.push_back(std::move(where));
  }
  auto statuses = attach_probes(*program_, rank.pid, rank, resolutions);
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (statuses[i].state == ProbeState::attached) {
      attached_.insert({rank.pid, resolutions[i].spec->id});
      ++result_.attached;
      result_.collectives_attached += is_collective(*resolutions[i].spec);
      judges_->attached(resolutions[i].spec->id, rank.pid);
    }
    sink_.probe_status(statuses[i]);
  }
}

Result<void> TraceSession::open_stream() {
  auto stream = CallStream::open(program_->events_fd(), [this](const CallEvent& call) { judges_->on_call(call); });
  if (!stream) return stream.error();
  stream_ = std::move(*stream);
  auto added = sources_->add_rdma_to(
      [this](int fd, RingBufferReader::Handler handler) { return stream_->add(fd, std::move(handler)); });
  if (!added) return added.error();
  watch_ = std::make_unique<RankWatch>(o_.node.roots.proc_root);
  for (const RankIdentity& rank : result_.ranks) {
    alive_[rank.pid] = true;
    watch_->follow(rank.pid);
  }
  sink_.probe_status(watch_->attach_lifecycle(
      [this](int fd, RingBufferReader::Handler handler) { return stream_->add(fd, std::move(handler)); }));
  start_ns_ = monotonic_ns();
  return {};
}

void TraceSession::emit(const DetectorOutput& out, uint64_t now_ns) {
  for (const std::string& note : judges_->take_notes()) sink_.note(note);
  for (const std::string& note : out.notes) sink_.note(note);
  for (const WindowReport& window : out.windows) sink_.window(window);
  for (Finding finding : out.findings) {
    if (!result_.first_finding_after_s) result_.first_finding_after_s = static_cast<double>(now_ns - start_ns_) / 1e9;
    explainer_.explain(finding, now_ns);
    sink_.finding(finding);
  }
}

void TraceSession::add_events(std::vector<DeviceEvent> events) {
  for (DeviceEvent& e : events) {
    sink_.device_event(e);
    // A rank's data path set apart: the inside test's evidence (detect/inside.h).
    judges_->device_event(e, e.ts_ns, concerns_through(sources_->topology()));
    explainer_.add(std::move(e));
  }
  report_sources();
}

Result<void> TraceSession::poll_sources(uint64_t now_ns) {
  auto events = sources_->poll(0, now_ns);
  if (!events) return events.error();
  add_events(std::move(*events));
  return {};
}

Result<bool> TraceSession::check_ranks(uint64_t now_ns) {
  watch_->sample(now_ns);
  std::vector<InFlightCall> in_flight = program_->in_flight();
  if (o_.on_process_views) {
    uint64_t since = now_ns;
    for (const InFlightCall& call : in_flight) since = std::min(since, call.entry_ns);
    std::map<int32_t, ProcessView> views;
    for (const auto& [pid, is_alive] : alive_)
      if (auto v = watch_->view(pid, since, now_ns)) views[pid] = *v;
    o_.on_process_views(now_ns, views);
  }
  emit(judges_->check_in_flight(now_ns, std::move(in_flight), watch_->lookup(now_ns)), now_ns);
  // The ranks that exited, in the order they ended (the first failure is the one that matters).
  std::vector<std::pair<uint64_t, int32_t>> ended;
  for (const auto& [pid, is_alive] : alive_)
    if (is_alive && !process_alive(o_.node.roots.proc_root, pid)) {
      auto end = watch_->end_of(pid);
      ended.emplace_back(end ? end->ts_ns : now_ns, pid);
    }
  std::sort(ended.begin(), ended.end());
  if (!ended.empty()) {
    // Their last records first, while they still count as ranks.
    auto drained = stream_->drain();
    if (!drained) return drained.error();
    for (const auto& [ts, pid] : ended) {
      alive_[pid] = false;
      sources_->rank_exited(pid);
      std::optional<ProcessEnd> end = watch_->end_of(pid);
      if (end && o_.on_rank_end) o_.on_rank_end(pid, *end);
      emit(judges_->retire(pid, *drained, end), now_ns);
    }
  }
  size_t alive_count = 0;
  for (const auto& [pid, is_alive] : alive_) alive_count += is_alive;
  if (alive_count == 0) sink_.note("every traced rank has exited");
  return alive_count > 0;
}

Result<void> TraceSession::run(const std::atomic<bool>& stop) {
  const uint64_t end_ns = o_.duration_s > 0 ? start_ns_ + static_cast<uint64_t>(o_.duration_s * 1e9) : 0;
  const uint64_t interval_ns = static_cast<uint64_t>(std::max(o_.interval_s, 0.1) * 1e9);
  Periodic advance(kAdvancePeriodNs, start_ns_);
  Periodic table(interval_ns, start_ns_);
  Periodic liveness(kLivenessPeriodNs, start_ns_);
  while (!stop.load()) {
    if (auto polled = stream_->poll(kPollTimeoutMs); !polled) return polled;
    uint64_t now = monotonic_ns();
    if (auto ok = poll_sources(now); !ok) return ok;
    if (end_ns && now >= end_ns) break;
    if (advance.due(now)) emit(judges_->advance(now), now);
    if (table.due(now)) sink_.tick(now);
    if (liveness.due(now)) {
      auto any_alive = check_ranks(now);
      if (!any_alive) return any_alive.error();
      if (!*any_alive) break;
    }
    if (!stacks_taken_ && now >= start_ns_ + kQuietBeforeStacksNs) stacks_if_stuck_before(now);
    if (o_.stop_on_finding && result_.first_finding_after_s) break;
  }
  return {};
}

void TraceSession::stacks_if_stuck_before(uint64_t now_ns) {
  stacks_taken_ = true;        // looked once, whatever it finds
  std::set<uint32_t> entered;  // processes with a call begun since attaching
  for (const InFlightCall& c : program_->in_flight()) entered.insert(c.tgid);
  std::map<std::string, std::vector<RankIdentity>> by_job;
  for (const RankIdentity& r : result_.ranks) by_job[r.job].push_back(r);
  for (const auto& [job, ranks] : by_job) {
    if (ranks.size() < 2 || judges_->counters(job).calls > 0) continue;
    // The whole job here, alive: ranks 0 to world_size - 1 of one world
    // size, once each (a rank left out may be the one the others wait
    // for; ranks of two jobs that share a job id, or none, are not one).
    std::set<int> seen;
    bool whole = true;
    for (const RankIdentity& r : ranks) {
      whole = whole && r.world_size == ranks.front().world_size && r.rank >= 0 &&
              r.rank < ranks.front().world_size.value_or(0) && seen.insert(r.rank).second &&
              !entered.contains(static_cast<uint32_t>(r.pid)) && alive_[r.pid];
    }
    if (whole && seen.size() == static_cast<size_t>(ranks.front().world_size.value_or(0))) take_stacks(ranks, now_ns);
  }
}

void TraceSession::take_stacks(const std::vector<RankIdentity>& ranks, uint64_t now_ns) {
  std::vector<std::string> notes;
  std::vector<Finding> found = stuck_before_attach(ranks, notes);
  for (const std::string& n : notes) sink_.note(n);
  // Not the detectors' first finding (first_finding_after_s): said here as it is.
  for (Finding& f : found) {
    explainer_.explain(f, now_ns);
    sink_.finding(f);
    stuck_.push_back(std::move(f));
  }
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
  if (const RdmaSources* rdma = sources_->rdma()) {
    for (const HistogramReport& h : rdma->ib_histograms()) sink_.histogram(h);
    for (const std::string& lifecycle : rdma->qp_lifecycles()) sink_.note(lifecycle);
    if (uint64_t lost = rdma->lost()) sink_.note(fmt::format("{} libibverbs call record(s) lost or undecodable", lost));
  }
}

void TraceSession::report_summary(uint64_t now_ns) {
  CallpairCounters kernel = program_->counters();
  SessionSummary& summary = result_.summary;
  summary.traced_seconds = static_cast<double>(now_ns - start_ns_) / 1e9;
  summary.ringbuf_drops = kernel.ringbuf_drops;
  summary.orphan_returns = kernel.orphan_returns;
  summary.untimed_calls = kernel.state_failures;
  summary.decode_rejected = stream_->decode_stats().rejected();
  summary.detector = judges_->counters();
  result_.communicators = judges_->communicators();
  summary.communicators = result_.communicators.size();
  std::vector<Finding> findings = judges_->findings();
  findings.insert(findings.end(), stuck_.begin(), stuck_.end());  // the stacks' hangs
  for (Finding& f : findings) {
    explainer_.explain(f, now_ns);  // events that came after the finding count too
    summary.findings.push_back(std::move(f));
  }
  sink_.communicators(result_.communicators);
  sink_.summary(summary);
}

TraceResult TraceSession::finish() {
  // Records already in the ring buffer still count.
  if (auto drained = stream_->drain(); !drained) sink_.note(drained.error().message);
  uint64_t now = monotonic_ns();
  // The host's whole session, the last per-connection view and the second
  // SDC reading, before the session's last findings are explained.
  add_events(sources_->finish(now));
  explainer_.set_sdc_activity(sources_->sdc_activity());
  emit(judges_->finish(now), now);
  SessionVerdict verdict = judges_->verdict(now);
  // Calls completed in a job after the stacks named one of its ranks: the
  // job moved (its finding line stays written; this note withdraws it).
  std::erase_if(stuck_, [&](const Finding& f) {
    uint64_t calls = judges_->counters(f.culprit.job).calls;
    if (calls == 0) return false;
    sink_.note(
        fmt::format("the hang of {} the ranks' stacks named {} s in no longer holds: {} call(s) of its job "
                    "completed since",
                    rank_label(f.culprit), kQuietBeforeStacksNs / 1'000'000'000, calls));
    return true;
  });
  // No verdict and nobody hung or failed under the trace: the job may have
  // stopped before we came (its waits began unobserved); its stacks say,
  // read again at the end for the jobs they named no rank of while it ran.
  if (!verdict.judged && verdict.hangs.empty() && verdict.failures.empty() && result_.ranks.size() >= 2) {
    std::set<std::string> named;
    for (const Finding& f : stuck_) named.insert(f.culprit.job);
    std::vector<RankIdentity> rest;
    for (const RankIdentity& r : result_.ranks)
      if (!named.contains(r.job)) rest.push_back(r);
    if (rest.size() >= 2) take_stacks(rest, now);
    verdict.hangs = stuck_;
    if (!verdict.hangs.empty()) verdict.judged = true;
  }
  sink_.tick(now);
  report_histograms();
  report_summary(now);
  result_.verdict = std::move(verdict);
  explainer_.explain(result_.verdict, now);
  result_.device_events = explainer_.events();
  sink_.verdict(result_.verdict);
  return std::move(result_);
}

}  // namespace

Result<TraceResult> run_trace(const TraceOptions& options, Sink& sink, const std::atomic<bool>& stop) {
  TraceSession session(options, sink);
  if (auto started = session.start(stop); !started) return started.error();
  if (auto ran = session.run(stop); !ran) return ran.error();
  return session.finish();
}

}  // namespace slowburn
