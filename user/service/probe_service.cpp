#include "service/probe_service.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "detect/aggregate_detector.h"
#include "engine/finding_explainer.h"
#include "engine/node_sources.h"
#include "engine/periodic.h"
#include "loader/collagg_program.h"
#include "loader/privileges.h"
#include "probes/catalog.h"
#include "service/budget_keeper.h"
#include "service/calibrate.h"
#include "service/counts_baseline.h"
#include "service/event_log.h"
#include "service/hang_snapshot.h"
#include "service/hang_watch.h"
#include "service/health_watch.h"
#include "service/metrics_endpoint.h"
#include "service/metrics_view.h"
#include "service/probe_state.h"
#include "service/rank_tracker.h"
#include "service/self_stats.h"
#include "service/service_comms.h"

namespace slowburn {

namespace {

using json = nlohmann::json;

constexpr const char* kVersion = "0.1.0";
constexpr int kSourcesPollMs = 100;
// An event this old explains nothing the detector sees now: it is history.
constexpr uint64_t kCauseKeepNs = 600'000'000'000;
constexpr size_t kCauseMaxEvents = 10000;
// Where --call-cost-ns skipped the calibration: a toggle's charge within
// what this VM's calibration measured (wall time, service/calibrate.h:
// 20-104 ms a link set; bench/RESULTS.md section 8d).
constexpr double kAssumedToggleCostNs = 50'000'000;

json identity_json(const RankIdentity& id) {
  json j{{"pid", id.pid}, {"rank", id.rank}, {"job", id.job}};
  j["local_rank"] = id.local_rank ? json(*id.local_rank) : json(nullptr);
  j["world_size"] = id.world_size ? json(*id.world_size) : json(nullptr);
  return j;
}

class ProbeService {
 public:
  ProbeService(const ProbeServiceOptions& options, std::ostream& console)
      : o_(options), console_(console), health_(o_.health_interval_s, o_.node.roots) {}
  Result<void> run(const std::atomic<bool>& stop, std::atomic<bool>& reopen_log);

 private:
  Result<void> start();
  Result<void> start_program();
  Result<BudgetConfig> budget_config();
  Result<void> start_outputs();
  Result<void> start_sources();
  void say_started();
  void interval(uint64_t now_ns, bool close_window);
  void on_tracker_changes(const TrackerChanges& changes);
  void on_rank_start(const RankIdentity& id);
  void on_rank_end(const RankIdentity& id, const std::vector<AggStats>* final_stats);
  void apply_budget(uint64_t interval_ns, const std::vector<AggStats>& stats, const std::vector<AggCounts>& deltas);
  void throttle(const std::string& probe, bool throttled, double estimated_ratio);
  std::vector<AggWindowInput> detector_inputs(const std::vector<AggStats>& stats,
                                              const std::vector<AggCounts>& deltas) const;
  void report_findings(std::vector<Finding>& findings);
  void check_hangs(uint64_t now_ns, const std::vector<AggStats>& stats);
  void close_window(uint64_t now_ns, const std::vector<AggStats>& stats);
  void poll_sources(uint64_t now_ns);
  void add_device_event(DeviceEvent e);
  void watch_health(uint64_t now_ns);
  void reopen_log_if_asked(std::atomic<bool>& reopen_log);
  void publish(const std::vector<AggStats>& stats);
  MetricsView view(const std::vector<AggStats>& stats);
  void write_textfile(const std::vector<AggStats>& stats);
  void shutdown(uint64_t started_ns);
  void log_status(const ProbeStatus& s);
  void note(const std::string& text);

  // Declared in the order they are built; destroyed in reverse: the
  // endpoint's thread first, the node's sources, then the links (the
  // tracker's) before the program they run.
  ProbeServiceOptions o_;
  std::ostream& console_;
  std::string host_ = hostname();
  double start_unix_ = unix_now_s();
  std::vector<const ProbeSpec*> probes_;
  std::unique_ptr<EventLog> log_;
  std::unique_ptr<CollaggProgram> program_;
  std::unique_ptr<BudgetKeeper> budget_;
  std::unique_ptr<AggregateDetector> detector_;
  std::unique_ptr<ServiceComms> comms_;
  std::unique_ptr<RankTracker> tracker_;
  std::unique_ptr<HangWatch> hangs_;
  uint64_t restored_ns_ = 0;  // a probe's latest restore: calls in flight from before it are stale
  std::unique_ptr<NodeSources> sources_;
  FindingExplainer explainer_{{.keep_ns = kCauseKeepNs, .max_events = kCauseMaxEvents, .by_node = false}};
  HealthWatch health_;
  ServiceTotals totals_;
  std::vector<WindowReport> last_windows_;
  CountsBaseline interval_base_, window_base_;  // the budget's and the sequential test's, the windows'
  uint64_t window_start_ns_ = 0;
  uint64_t interval_start_ns_ = 0;
  uint64_t last_read_ns_ = 0;  // rates are per read-to-read time
  ProbeStateKeeper state_{o_.state_file, o_.node.roots.proc_root};
  std::unique_ptr<MetricsEndpoint> endpoint_;
};

Result<void> ProbeService::start_program() {
  if (auto ok = check_tracing_privileges(); !ok) return ok.error();
  auto probes = select_probes(o_.probe_patterns);
  if (!probes) return probes.error();
  // Communicator lifecycles are trace's (it names communicators from them); here memory names them.
  for (const ProbeSpec* spec : *probes)
    if (spec->kind != CallKind::comm_lifecycle) probes_.push_back(spec);
  std::vector<ProbeInfo> infos;
  for (const ProbeSpec* spec : probes_) infos.push_back({spec->id, spec->name, spec->kind});
  auto program = CollaggProgram::load(std::nullopt, o_.detector.sequential_lead_share);
  if (!program) return program.error();
  program_ = std::move(*program);
  auto budget = budget_config();
  if (!budget) return budget.error();
  budget_ = std::make_unique<BudgetKeeper>(probes_, *budget);
  detector_ = std::make_unique<AggregateDetector>(o_.detector, infos);
  comms_ = std::make_unique<ServiceComms>(o_.node.roots.proc_root);
  tracker_ = std::make_unique<RankTracker>(*program_, probes_, o_.node.roots.proc_root, o_.pids);
  std::map<uint32_t, const ProbeSpec*> by_id;
  for (const ProbeSpec* spec : probes_) by_id[spec->id] = spec;
  hangs_ = std::make_unique<HangWatch>(o_.detector.hang_ns, o_.node.roots.proc_root, by_id);
  return {};
}

// The budget, with the costs calibrated on this machine unless given.
Result<BudgetConfig> ProbeService::budget_config() {
  BudgetConfig budget;
  if (o_.call_cost_ns) {
    budget.call_cost_ns = *o_.call_cost_ns;
    budget.toggle_cost_ns = kAssumedToggleCostNs;
  } else {
    auto costs = calibrate_probe_costs(*program_);
    if (!costs) return costs.error();
    budget.call_cost_ns = costs->call_ns;
    budget.toggle_cost_ns = costs->toggle_ns;
  }
  if (o_.toggle_cost_ns) budget.toggle_cost_ns = *o_.toggle_cost_ns;
  budget.budget_ratio = o_.overhead_budget;
  budget.select = o_.sampling;
  budget.window_intervals = static_cast<int>(
      std::max<double>(1, std::round(static_cast<double>(o_.detector.window_ns) / 1e9 / std::max(o_.interval_s, 0.1))));
  budget.max_dark_windows = std::max(o_.detector.persistence_n - 2, 1);
  return budget;
}

Result<void> ProbeService::start_outputs() {
  auto log = EventLog::open(o_.log_dir, o_.log_max_bytes, o_.log_keep, host_);
  if (!log) return log.error();
  log_ = std::move(*log);
  if (o_.listen.empty()) return {};
  auto endpoint = MetricsEndpoint::start(o_.listen);
  if (!endpoint) return endpoint.error();
  endpoint_ = std::move(*endpoint);
  return {};
}

// The node's sources run from the start; the host's side starts with the
// first rank (the sched programs run on every context switch of the node,
// for ranks only).
Result<void> ProbeService::start_sources() {
  auto sources = NodeSources::start(o_.node);
  if (!sources) return sources.error();
  sources_ = std::move(*sources);
  explainer_.set_topology(sources_->topology());
  for (const ProbeStatus& s : sources_->take_statuses()) log_status(s);
  return {};
}

Result<void> ProbeService::start() {
  if (auto ok = start_program(); !ok) return ok;
  if (auto ok = start_outputs(); !ok) return ok;
  if (auto ok = start_sources(); !ok) return ok;
  state_.restore(*detector_, [this](const std::string& t) { note(t); });
  say_started();
  return {};
}

void ProbeService::say_started() {
  const BudgetConfig& b = budget_->config();
  console_ << fmt::format(
      "slowburn probe: {} probes, one traced call costs {:.1f} us here (a toggle {:.1f} ms), budget {}; metrics {}; "
      "event log {}\n",
      probes_.size(), b.call_cost_ns / 1000, b.toggle_cost_ns / 1e6,
      o_.overhead_budget > 0 ? fmt::format("{:.2f}% of a CPU", o_.overhead_budget * 100) : std::string("off"),
      endpoint_ ? fmt::format("http://{}:{}/metrics", endpoint_->host(), endpoint_->port()) : std::string("off"),
      log_ ? log_->file().path().string() : std::string("off"));
  console_.flush();
}

void ProbeService::note(const std::string& text) {
  console_ << "slowburn probe: " << text << '\n';
  console_.flush();
  if (log_) log_->sink().note(text);
}

void ProbeService::log_status(const ProbeStatus& s) {
  if (log_) log_->sink().probe_status(s);
}

void ProbeService::on_rank_start(const RankIdentity& id) {
  comms_->add_rank(id);
  hangs_->add_rank(id);
  if (!log_) return;
  json j{{"kind", "rank"}, {"event", "start"}, {"command", id.command}};
  j.update(identity_json(id));
  log_->line(std::move(j));
}

void ProbeService::on_rank_end(const RankIdentity& id, const std::vector<AggStats>* final_stats) {
  detector_->remove_rank(id.pid);
  comms_->remove_rank(id.pid);
  hangs_->remove_rank(id.pid);
  json calls = json::object();
  if (final_stats)
    for (const AggStats& s : *final_stats) {
      const std::string& name = budget_->name_of(s.probe_id);
      calls[name] = calls.value(name, uint64_t{0}) + s.calls;
      // Its calls since the last interval still count in the probe totals.
      budget_->count_calls(s.probe_id, interval_base_.since(s).calls);
    }
  if (log_) {
    json j{{"kind", "rank"}, {"event", "end"}, {"calls", calls}};
    j.update(identity_json(id));
    log_->line(std::move(j));
  }
  interval_base_.forget(id.pid);
  window_base_.forget(id.pid);
  for (WindowReport& w : last_windows_)  // its window gauges go with it
    std::erase_if(w.ranks, [&](const RankWindowStats& r) { return r.identity.pid == id.pid; });
}

void ProbeService::on_tracker_changes(const TrackerChanges& changes) {
  for (const ProbeStatus& s : changes.statuses) log_status(s);
  for (const RankIdentity& id : changes.started) on_rank_start(id);
  for (const RankIdentity& id : changes.ended) {
    auto it = changes.final_stats.find(id.pid);
    on_rank_end(id, it == changes.final_stats.end() ? nullptr : &it->second);
  }
  for (const std::string& job : changes.jobs_ended)
    std::erase_if(totals_.findings, [&](const auto& kv) { return std::get<0>(kv.first) == job; });
  if (!changes.started.empty() || !changes.ended.empty()) {
    sources_->set_ranks(tracker_->identities());
    for (const ProbeStatus& s : sources_->take_statuses()) log_status(s);
  }
}

void ProbeService::throttle(const std::string& probe, bool throttled, double estimated_ratio) {
  for (const ProbeStatus& s : tracker_->set_throttled(probe, throttled)) log_status(s);
  if (!throttled) restored_ns_ = monotonic_ns();
  if (log_)
    log_->line({{"kind", "budget"},
                {"event", throttled ? "throttle" : "restore"},
                {"probe", probe},
                {"estimated_cpu_ratio", estimated_ratio},
                {"budget_ratio", o_.overhead_budget}});
}

void ProbeService::apply_budget(uint64_t interval_ns, const std::vector<AggStats>& stats,
                                const std::vector<AggCounts>& deltas) {
  BudgetOutcome out = budget_->update(interval_ns, stats, deltas);
  for (const std::string& msg : out.notes) note(msg);
  for (const std::string& probe : out.throttle) throttle(probe, true, out.estimated_ratio);
  for (const std::string& probe : out.restore) throttle(probe, false, out.estimated_ratio);
}

std::vector<AggWindowInput> ProbeService::detector_inputs(const std::vector<AggStats>& stats,
                                                          const std::vector<AggCounts>& deltas) const {
  std::vector<AggWindowInput> inputs;
  for (size_t i = 0; i < stats.size(); ++i) {
    auto rank = tracker_->ranks().find(static_cast<int32_t>(stats[i].tgid));
    if (rank == tracker_->ranks().end()) continue;
    AggWindowInput in;
    static_cast<AggCounts&>(in) = deltas[i];
    in.identity = rank->second.identity;
    in.probe_id = stats[i].probe_id;
    in.comm = comms_->slot(stats[i].comm_slot);
    inputs.push_back(std::move(in));
  }
  return inputs;
}

void ProbeService::close_window(uint64_t now, const std::vector<AggStats>& stats) {
  std::vector<AggCounts> deltas = window_base_.advance(stats);
  DetectorOutput out = detector_->evaluate(window_start_ns_, now, detector_inputs(stats, deltas));
  window_start_ns_ = now;
  last_windows_ = out.windows;
  if (log_ && o_.log_windows)
    for (const WindowReport& w : out.windows) log_->sink().window(w);
  for (const std::string& msg : out.notes) note(msg);
  report_findings(out.findings);
}

void ProbeService::report_findings(std::vector<Finding>& findings) {
  for (Finding& f : findings) {
    explainer_.explain(f, monotonic_ns());
    totals_.findings[{f.culprit.job, f.culprit.rank, f.type}] += 1;
    note(f.summary);
    if (log_) log_->sink().finding(f);
  }
}

// Ranks that stop their job while the others wait (service/hang_watch.h).
void ProbeService::check_hangs(uint64_t now_ns, const std::vector<AggStats>& stats) {
  std::set<int32_t> stepping;
  for (const AggStats& s : stats) stepping.insert(static_cast<int32_t>(s.tgid));
  bool complete = std::none_of(probes_.begin(), probes_.end(), [&](const ProbeSpec* spec) {
    return (spec->kind == CallKind::synchronizing || spec->kind == CallKind::rooted) && tracker_->throttled(spec->name);
  });
  std::vector<InFlightCall> calls = program_->in_flight();
  std::erase_if(calls, [&](const InFlightCall& c) { return c.entry_ns < restored_ns_; });
  std::vector<Finding> found = hangs_->check(now_ns, calls, stepping, complete);
  report_findings(found);
  snapshot_hung_jobs(
      found, tracker_->identities(),
      [this](nlohmann::json line) {
        if (log_) log_->line(std::move(line));
      },
      [this](const std::string& text) { note(text); });
}

// Waits for the kernel's records up to kSourcesPollMs: the loop's pace.
void ProbeService::poll_sources(uint64_t now_ns) {
  auto events = sources_->poll(kSourcesPollMs, now_ns);
  if (!events) {
    note(fmt::format("hardware events stopped: {}", events.error().message));
    sources_->stop_hardware();
    return;
  }
  for (DeviceEvent& e : *events) add_device_event(std::move(e));
  for (const std::string& n : sources_->take_notes()) note(n);
}

void ProbeService::add_device_event(DeviceEvent e) {
  totals_.device_events[{e.type, e.device.empty() ? e.label : e.device, e.role, std::string(event_severity(e))}] += 1;
  if (log_) log_->sink().device_event(e);
  // What slows a rank's own data, or its own cgroup throttling it: judged as trace does.
  detector_->device_event(e, tracker_->identities(), concerns_through(sources_->topology()));
  explainer_.add(std::move(e));
}

// The rows whose state changed are logged; a failing one is said on the console.
void ProbeService::watch_health(uint64_t now_ns) {
  HealthWatch::Reading r = health_.poll(now_ns, tracker_->identities(), sources_->topology());
  if (r.error) note(*r.error);
  for (const CheckRow& c : r.changed) {
    if (log_) log_->line(health_check_json(c));
    if (c.state == CheckState::fail)
      console_ << fmt::format("slowburn probe: health {}{}{} fails: {}\n", c.check, c.device.empty() ? "" : " ",
                              c.device, c.detail);
  }
  console_.flush();
  explainer_.set_sdc_activity(health_.sdc_activity());
}

void ProbeService::interval(uint64_t now, bool window_due) {
  on_tracker_changes(tracker_->refresh(now));
  comms_->name_new(*program_, now);
  for (const std::string& n : comms_->take_notes()) note(n);
  std::vector<AggStats> stats = program_->read();
  uint64_t read_ns = monotonic_ns();
  std::vector<AggCounts> deltas = interval_base_.advance(stats);
  // The first reading has no interval behind it: it only sets the base.
  apply_budget(last_read_ns_ ? read_ns - last_read_ns_ : 0, stats, deltas);
  // Every interval, not every window: the sequential test names a strong
  // straggler as soon as the kernel has counted its instances.
  if (last_read_ns_) {
    DetectorOutput out = detector_->observe_interval(interval_start_ns_, now, detector_inputs(stats, deltas));
    report_findings(out.findings);
  }
  last_read_ns_ = read_ns;
  interval_start_ns_ = now;
  if (window_due) close_window(now, stats);
  check_hangs(read_ns, stats);
  publish(stats);
  state_.keep(now, false, *detector_, [this](const std::string& t) { note(t); });
}

void ProbeService::reopen_log_if_asked(std::atomic<bool>& reopen_log) {
  if (!reopen_log.exchange(false) || !log_) return;
  if (auto ok = log_->file().reopen(); !ok)
    console_ << "slowburn probe: " << ok.error().message << '\n';
  else
    note("event log reopened (SIGHUP)");
}

Result<void> ProbeService::run(const std::atomic<bool>& stop, std::atomic<bool>& reopen_log) {
  if (auto ok = start(); !ok) return ok;
  const uint64_t interval_ns = static_cast<uint64_t>(std::max(o_.interval_s, 0.1) * 1e9);
  const uint64_t window_ns = std::max<uint64_t>(o_.detector.window_ns, interval_ns);
  const uint64_t start_ns = monotonic_ns();
  const uint64_t end_ns = o_.duration_s > 0 ? start_ns + static_cast<uint64_t>(o_.duration_s * 1e9) : 0;
  window_start_ns_ = start_ns;
  Periodic intervals(interval_ns, start_ns), windows(window_ns, start_ns);
  interval(start_ns, false);
  while (!stop.load()) {
    poll_sources(monotonic_ns());
    reopen_log_if_asked(reopen_log);
    uint64_t now = monotonic_ns();
    if (end_ns && now >= end_ns) break;
    watch_health(now);
    if (!intervals.due(now)) continue;
    interval(now, windows.due(now));
  }
  shutdown(start_ns);
  return {};
}

// node_exporter's textfile-collector format, written whole and renamed into
// place: the last word, readable after the service is gone.
void ProbeService::write_textfile(const std::vector<AggStats>& stats) {
  auto prom = o_.log_dir / "slowburn.prom";
  {
    std::ofstream out(prom.string() + ".tmp", std::ios::trunc);
    MetricsView v = view(stats);
    v.self = read_self_stats(o_.node.roots.proc_root);
    out << render_metrics(v);
  }
  std::error_code ec;
  std::filesystem::rename(prom.string() + ".tmp", prom, ec);
  if (ec) console_ << "slowburn probe: cannot write " << prom.string() << ": " << ec.message() << '\n';
}

// SIGTERM: the last partial window, the final metrics, everything flushed;
// nothing attached or detached any more.
void ProbeService::shutdown(uint64_t started_ns) {
  uint64_t now = monotonic_ns();
  std::vector<AggStats> stats = program_->read();
  if (now > window_start_ns_) close_window(now, stats);
  publish(stats);
  state_.keep(now, true, *detector_, [this](const std::string& t) { note(t); });
  if (log_) {
    log_->line({{"kind", "status"},
                {"event", "stop"},
                {"uptime_s", static_cast<double>(now - started_ns) / 1e9},
                {"ranks", tracker_->ranks().size()}});
    write_textfile(stats);
    log_->file().flush();
  }
  console_ << fmt::format("slowburn probe: stopped after {:.0f} s; {} finding(s)\n",
                          static_cast<double>(now - started_ns) / 1e9, detector_->findings().size());
}

// The page is rendered when scraped (metrics_endpoint.h), from a view taken
// now; the service's own CPU and memory are read then, too.
void ProbeService::publish(const std::vector<AggStats>& stats) {
  if (!endpoint_) return;
  endpoint_->publish([v = std::make_shared<MetricsView>(view(stats)), root = o_.node.roots.proc_root] {
    v->self = read_self_stats(root);
    return render_metrics(*v);
  });
}

MetricsView ProbeService::view(const std::vector<AggStats>& stats) {
  // Standing findings, with the causes known now.
  std::map<int32_t, Finding> active;
  for (auto [pid, f] : detector_->active()) {  // copies, given their causes
    explainer_.explain(f, monotonic_ns());
    active.emplace(pid, std::move(f));
  }
  ServiceParts parts{host_,          kVersion,       start_unix_,    budget_.get(), tracker_.get(),
                     comms_.get(),   program_.get(), sources_.get(), log_.get(),    &health_,
                     &last_windows_, &totals_,       hangs_.get()};
  MetricsView v = gather_metrics(parts, stats, std::move(active));
  if (endpoint_) v.endpoint = endpoint_->stats();
  return v;
}

}  // namespace

DetectorConfig ProbeServiceOptions::probe_detector_defaults() {
  DetectorConfig c;
  c.window_ns = 5'000'000'000;
  return c;
}

Result<void> run_probe_service(const ProbeServiceOptions& options, const std::atomic<bool>& stop,
                               std::atomic<bool>& reopen_log, std::ostream& console) {
  return ProbeService(options, console).run(stop, reopen_log);
}

}  // namespace slowburn
