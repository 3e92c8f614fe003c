#include "service/probe_service.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/clock.h"
#include "detect/aggregate_detector.h"
#include "detect/causes.h"
#include "engine/cause_memory.h"
#include "health/health_checks.h"
#include "loader/collagg_program.h"
#include "loader/privileges.h"
#include "probes/catalog.h"
#include "service/calibrate.h"
#include "service/counts_baseline.h"
#include "service/event_log.h"
#include "service/metrics_endpoint.h"
#include "service/overhead_budget.h"
#include "service/probe_metrics.h"
#include "service/rank_tracker.h"
#include "service/self_stats.h"
#include "service/service_comms.h"
#include "sources/host_monitor.h"
#include "sources/hw_monitor.h"

namespace slowburn {

namespace {

using json = nlohmann::json;

constexpr const char* kVersion = "0.1.0";
constexpr int kHardwarePollMs = 100;

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

json identity_json(const RankIdentity& id) {
  json j{{"pid", id.pid}, {"rank", id.rank}, {"job", id.job}};
  j["local_rank"] = id.local_rank ? json(*id.local_rank) : json(nullptr);
  j["world_size"] = id.world_size ? json(*id.world_size) : json(nullptr);
  return j;
}

// What accumulates over the service's life for the metrics (the rest of the
// view is read fresh every interval).
struct ServiceTotals {
  std::map<std::string, uint64_t> probe_calls;
  std::map<std::string, uint64_t> probe_throttles;
  std::map<std::tuple<std::string, int, std::string>, uint64_t> findings;  // (job, rank, type)
  std::map<std::tuple<std::string, std::string, std::string, std::string>, uint64_t> device_events;
  std::map<std::string, double> probe_cpu_ratio;  // last interval
  double estimated_cpu_ratio = 0;
};

// What the service runs on, in the order it is set up; torn down in
// reverse by ~ProbeService: the links and the kernel's maps outlive what
// reads them.
struct ServiceParts {
  std::unique_ptr<CollaggProgram> program;
  std::unique_ptr<RankTracker> tracker;
  std::unique_ptr<AggregateDetector> detector;
  std::unique_ptr<OverheadBudget> budget;
  std::unique_ptr<ServiceComms> comms;
  std::shared_ptr<Topology> topology;
  std::unique_ptr<HwMonitor> hw;
  std::unique_ptr<HostMonitor> host;
  std::unique_ptr<EventLog> log;
  std::unique_ptr<MetricsEndpoint> endpoint;
};

class ProbeService {
 public:
  ProbeService(const ProbeServiceOptions& options, std::ostream& console) : o_(options), console_(console) {}
  ~ProbeService();
  Result<void> run(const std::atomic<bool>& stop, std::atomic<bool>& reopen_log);

 private:
  Result<void> start();
  Result<void> start_program();
  Result<void> start_outputs();
  Result<void> start_hardware();
  void start_host();
  void interval(uint64_t now_ns, bool close_window);
  void on_tracker_changes(const TrackerChanges& changes);
  void on_rank_end(const RankIdentity& id, const std::vector<AggStats>* final_stats);
  void apply_budget(uint64_t interval_ns, const std::vector<AggStats>& stats, const std::vector<AggCounts>& deltas);
  void sequential_check(uint64_t start_ns, uint64_t now_ns, const std::vector<AggStats>& stats,
                        const std::vector<AggCounts>& deltas);
  std::vector<AggWindowInput> detector_inputs(const std::vector<AggStats>& stats,
                                              const std::vector<AggCounts>& deltas) const;
  void report_findings(std::vector<Finding>& findings);
  void throttle(const std::string& probe, bool throttled, const BudgetDecision& d);
  void close_window(uint64_t now_ns, const std::vector<AggStats>& stats);
  void poll_hardware();
  void poll_host(uint64_t now_ns);
  void add_device_event(DeviceEvent e);
  void evaluate_health_checks();
  void publish(const std::vector<AggStats>& stats);
  MetricsView view(const std::vector<AggStats>& stats);
  void shutdown(uint64_t started_ns);
  void log_status(const ProbeStatus& s);
  void note(const std::string& text);

  ProbeServiceOptions o_;
  std::ostream& console_;
  std::string host_ = hostname();
  double start_unix_ = unix_now_s();
  std::vector<const ProbeSpec*> probes_;
  std::map<uint32_t, std::string> probe_names_;
  double call_cost_ns_ = 0;
  double toggle_cost_ns_ = 0;
  // Where --call-cost-ns skipped the calibration: a toggle's charge within
  // what this VM's calibration measured (wall time, service/calibrate.h:
  // 20-104 ms a link set; bench/RESULTS.md section 8d).
  static constexpr double kAssumedToggleCostNs = 50'000'000;
  ServiceParts parts_;
  CountsBaseline interval_base_, window_base_;  // the budget's and the sequential test's, the windows'
  uint64_t window_start_ns_ = 0;
  uint64_t interval_start_ns_ = 0;
  uint64_t last_read_ns_ = 0;  // rates are per read-to-read time
  std::vector<WindowReport> last_windows_;
  CauseMemory causes_;
  ServiceTotals totals_;
  // The health checklist: the last reading (the next one's rises are measured from it) and its rows.
  std::optional<HealthSnapshot> health_last_;
  std::vector<HealthCheck> health_;
  uint64_t next_health_ns_ = 0;
  bool health_error_noted_ = false;
};

ProbeService::~ProbeService() {
  parts_.endpoint.reset();
  parts_.hw.reset();
  parts_.host.reset();
  parts_.tracker.reset();  // the links, then the program they run
  parts_.program.reset();
}

DetectorConfig default_probe_detector() {
  DetectorConfig c;
  c.window_ns = 5'000'000'000;
  return c;
}

Result<void> ProbeService::start_program() {
  if (auto ok = check_tracing_privileges(); !ok) return ok.error();
  auto probes = select_probes(o_.probe_patterns);
  if (!probes) return probes.error();
  // Communicator lifecycles are trace's (it names communicators from them); here memory names them.
  for (const ProbeSpec* spec : *probes)
    if (spec->kind != CallKind::comm_lifecycle) probes_.push_back(spec);
  std::vector<ProbeInfo> infos;
  for (const ProbeSpec* spec : probes_) {
    probe_names_[spec->id] = spec->name;
    infos.push_back({spec->id, spec->name, spec->kind});
  }
  auto program = CollaggProgram::load(std::nullopt, o_.detector.sequential_lead_share);
  if (!program) return program.error();
  parts_.program = std::move(*program);
  if (o_.call_cost_ns) {
    call_cost_ns_ = *o_.call_cost_ns;
    toggle_cost_ns_ = kAssumedToggleCostNs;
  } else {
    auto costs = calibrate_probe_costs(*parts_.program);
    if (!costs) return costs.error();
    call_cost_ns_ = costs->call_ns;
    toggle_cost_ns_ = costs->toggle_ns;
  }
  if (o_.toggle_cost_ns) toggle_cost_ns_ = *o_.toggle_cost_ns;
  BudgetConfig budget;
  budget.budget_ratio = o_.overhead_budget;
  budget.call_cost_ns = call_cost_ns_;
  budget.toggle_cost_ns = toggle_cost_ns_;
  budget.select = o_.sampling;
  budget.window_intervals = static_cast<int>(
      std::max<double>(1, std::round(static_cast<double>(o_.detector.window_ns) / 1e9 / std::max(o_.interval_s, 0.1))));
  budget.max_dark_windows = std::max(o_.detector.persistence_n - 2, 1);
  parts_.budget = std::make_unique<OverheadBudget>(budget);
  parts_.detector = std::make_unique<AggregateDetector>(o_.detector, infos);
  parts_.tracker = std::make_unique<RankTracker>(*parts_.program, probes_, o_.proc_root, o_.pids);
  parts_.comms = std::make_unique<ServiceComms>(o_.proc_root);
  return {};
}

Result<void> ProbeService::start_outputs() {
  auto log = EventLog::open(o_.log_dir, o_.log_max_bytes, o_.log_keep, host_);
  if (!log) return log.error();
  parts_.log = std::move(*log);
  if (o_.listen.empty()) return {};
  auto endpoint = MetricsEndpoint::start(o_.listen);
  if (!endpoint) return endpoint.error();
  parts_.endpoint = std::move(*endpoint);
  return {};
}

Result<void> ProbeService::start_hardware() {
  if (!o_.hardware_events) return {};
  parts_.topology = std::make_shared<Topology>(Topology::read(o_.sysfs_root, o_.proc_root));
  HwMonitorOptions hw;
  hw.fabric = o_.fabric;
  hw.sysfs_root = o_.sysfs_root;
  hw.proc_root = o_.proc_root;
  auto started = HwMonitor::start(hw, parts_.topology);
  if (!started) return started.error();
  parts_.hw = std::move(*started);
  for (const ProbeStatus& s : parts_.hw->statuses()) log_status(s);
  return {};
}

// On the first rank (and again after the last one left): the sched
// programs run on every context switch of the node, for ranks only.
void ProbeService::start_host() {
  if (!o_.host_signals) return;
  HostMonitorOptions host;
  host.files = {o_.proc_root, o_.cgroup_root};
  host.topology = parts_.topology;
  host.sysfs_root = o_.sysfs_root;
  parts_.host = std::make_unique<HostMonitor>(host);
  for (const ProbeStatus& s : parts_.host->statuses()) log_status(s);
}

Result<void> ProbeService::start() {
  if (auto ok = start_program(); !ok) return ok;
  if (auto ok = start_outputs(); !ok) return ok;
  if (auto ok = start_hardware(); !ok) return ok;
  console_ << fmt::format(
      "slowburn probe: {} probes, one traced call costs {:.1f} us here (a toggle {:.1f} ms), budget {}; metrics {}; "
      "event log {}\n",
      probes_.size(), call_cost_ns_ / 1000, toggle_cost_ns_ / 1e6,
      o_.overhead_budget > 0 ? fmt::format("{:.2f}% of a CPU", o_.overhead_budget * 100) : std::string("off"),
      parts_.endpoint ? fmt::format("http://{}:{}/metrics", parts_.endpoint->host(), parts_.endpoint->port())
                      : std::string("off"),
      parts_.log ? parts_.log->file().path().string() : std::string("off"));
  console_.flush();
  return {};
}

void ProbeService::note(const std::string& text) {
  console_ << "slowburn probe: " << text << '\n';
  console_.flush();
  if (parts_.log) parts_.log->sink().note(text);
}

void ProbeService::log_status(const ProbeStatus& s) {
  if (parts_.log) parts_.log->sink().probe_status(s);
}

void ProbeService::on_rank_end(const RankIdentity& id, const std::vector<AggStats>* final_stats) {
  parts_.detector->remove_rank(id.pid);
  if (parts_.host) parts_.host->remove_rank(id.pid);
  parts_.comms->remove_rank(id.pid);
  json calls = json::object();
  if (final_stats)
    for (const AggStats& s : *final_stats) {
      std::string name = probe_names_[s.probe_id];
      calls[name] = calls.value(name, uint64_t{0}) + s.calls;
      // Its calls since the last interval still count in the probe totals.
      totals_.probe_calls[name] += interval_base_.since(s).calls;
    }
  if (parts_.log) {
    json j{{"kind", "rank"}, {"event", "end"}, {"calls", calls}};
    j.update(identity_json(id));
    parts_.log->line(std::move(j));
  }
  interval_base_.forget(id.pid);
  window_base_.forget(id.pid);
  for (WindowReport& w : last_windows_)  // its window gauges go with it
    std::erase_if(w.ranks, [&](const RankWindowStats& r) { return r.identity.pid == id.pid; });
}

void ProbeService::on_tracker_changes(const TrackerChanges& changes) {
  for (const ProbeStatus& s : changes.statuses) log_status(s);
  for (const RankIdentity& id : changes.started) {
    parts_.comms->add_rank(id);
    if (!parts_.host) start_host();
    if (parts_.host) parts_.host->add_rank(id);
    if (!parts_.log) continue;
    json j{{"kind", "rank"}, {"event", "start"}, {"command", id.command}};
    j.update(identity_json(id));
    parts_.log->line(std::move(j));
  }
  for (const RankIdentity& id : changes.ended) {
    auto it = changes.final_stats.find(id.pid);
    on_rank_end(id, it == changes.final_stats.end() ? nullptr : &it->second);
  }
  // The sched programs follow ranks: with none left, nothing stays attached.
  if (parts_.host && parts_.tracker->ranks().empty()) parts_.host.reset();
  for (const std::string& job : changes.jobs_ended)
    std::erase_if(totals_.findings, [&](const auto& kv) { return std::get<0>(kv.first) == job; });
  if (parts_.topology && (!changes.started.empty() || !changes.ended.empty()))
    parts_.topology->assign_ranks(parts_.tracker->identities());
}

void ProbeService::throttle(const std::string& probe, bool throttled, const BudgetDecision& d) {
  for (const ProbeStatus& s : parts_.tracker->set_throttled(probe, throttled)) log_status(s);
  totals_.probe_throttles[probe] = parts_.budget->throttle_count(probe);
  if (parts_.log)
    parts_.log->line({{"kind", "budget"},
                      {"event", throttled ? "throttle" : "restore"},
                      {"probe", probe},
                      {"estimated_cpu_ratio", d.estimated_ratio},
                      {"budget_ratio", o_.overhead_budget}});
}

void ProbeService::apply_budget(uint64_t interval_ns, const std::vector<AggStats>& stats,
                                const std::vector<AggCounts>& deltas) {
  std::map<std::string, uint64_t> calls;
  std::map<std::string, std::vector<double>> gaps;  // each rank's (and communicator's) mean compute gap
  std::map<std::string, std::set<uint32_t>> ranks;
  for (size_t i = 0; i < stats.size(); ++i) {
    const std::string& name = probe_names_[stats[i].probe_id];
    calls[name] += deltas[i].calls;
    totals_.probe_calls[name] += deltas[i].calls;
    if (deltas[i].gaps)
      gaps[name].push_back(static_cast<double>(deltas[i].gap_ns) / static_cast<double>(deltas[i].gaps));
    if (deltas[i].calls) ranks[name].insert(stats[i].tgid);
  }
  totals_.probe_cpu_ratio.clear();
  if (interval_ns == 0) return;
  if (o_.overhead_budget <= 0 && !o_.sampling) {
    totals_.estimated_cpu_ratio = 0;
    for (const auto& [probe, n] : calls) {
      double r = static_cast<double>(n) * call_cost_ns_ / static_cast<double>(interval_ns);
      totals_.probe_cpu_ratio[probe] = r;
      totals_.estimated_cpu_ratio += r;
    }
    return;
  }
  std::map<std::string, ProbeReading> readings;
  for (const ProbeSpec* spec : probes_) {
    ProbeReading& r = readings[spec->name];
    r.calls = calls[spec->name];
    r.synchronizing = spec->kind == CallKind::synchronizing;
    r.ranks = static_cast<int>(ranks[spec->name].size());
    if (auto it = gaps.find(spec->name); it != gaps.end()) {
      std::vector<double>& g = it->second;
      std::nth_element(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(g.size() / 2), g.end());
      r.gap_ns = g[g.size() / 2];
    }
  }
  BudgetDecision d = parts_.budget->update(interval_ns, readings);
  totals_.estimated_cpu_ratio = d.estimated_ratio;
  totals_.probe_cpu_ratio = d.probe_ratio;
  for (const std::string& msg : d.messages) note(msg);
  for (const std::string& probe : d.throttle) throttle(probe, true, d);
  for (const std::string& probe : d.restore) throttle(probe, false, d);
}

std::vector<AggWindowInput> ProbeService::detector_inputs(const std::vector<AggStats>& stats,
                                                          const std::vector<AggCounts>& deltas) const {
  std::vector<AggWindowInput> inputs;
  for (size_t i = 0; i < stats.size(); ++i) {
    auto rank = parts_.tracker->ranks().find(static_cast<int32_t>(stats[i].tgid));
    if (rank == parts_.tracker->ranks().end()) continue;
    AggWindowInput in;
    static_cast<AggCounts&>(in) = deltas[i];
    in.identity = rank->second.identity;
    in.probe_id = stats[i].probe_id;
    in.comm = parts_.comms->slot(stats[i].comm_slot);
    inputs.push_back(std::move(in));
  }
  return inputs;
}

// Every interval, not every window: the sequential test names a strong
// straggler as soon as the kernel has counted its instances.
void ProbeService::sequential_check(uint64_t start_ns, uint64_t now, const std::vector<AggStats>& stats,
                                    const std::vector<AggCounts>& deltas) {
  DetectorOutput out = parts_.detector->observe_interval(start_ns, now, detector_inputs(stats, deltas));
  report_findings(out.findings);
}

void ProbeService::close_window(uint64_t now, const std::vector<AggStats>& stats) {
  std::vector<AggCounts> deltas = window_base_.advance(stats);
  DetectorOutput out = parts_.detector->evaluate(window_start_ns_, now, detector_inputs(stats, deltas));
  window_start_ns_ = now;
  last_windows_ = out.windows;
  if (parts_.log && o_.log_windows)
    for (const WindowReport& w : out.windows) parts_.log->sink().window(w);
  report_findings(out.findings);
}

void ProbeService::report_findings(std::vector<Finding>& findings) {
  for (Finding& f : findings) {
    causes_.explain(f, monotonic_ns(), parts_.topology.get());
    attach_sdc_activity(f, sdc_activity(health_));
    totals_.findings[{f.culprit.job, f.culprit.rank, f.type}] += 1;
    note(f.summary);
    if (parts_.log) parts_.log->sink().finding(f);
  }
}

void ProbeService::poll_hardware() {
  if (!parts_.hw) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kHardwarePollMs));
    return;
  }
  auto events = parts_.hw->poll(kHardwarePollMs, monotonic_ns());
  if (!events) {
    note(fmt::format("hardware events stopped: {}", events.error().message));
    parts_.hw.reset();
    return;
  }
  for (DeviceEvent& e : *events) add_device_event(std::move(e));
  for (const std::string& n : parts_.hw->take_notes()) note(n);
}

void ProbeService::add_device_event(DeviceEvent e) {
  totals_.device_events[{e.type, e.device.empty() ? e.label : e.device, e.role, std::string(event_severity(e))}] += 1;
  if (parts_.log) parts_.log->sink().device_event(e);
  causes_.add(std::move(e));
}

// The host monitor reads the ranks once a second and says a cause when it
// starts and every refresh while it holds: recent enough for CauseMemory.
void ProbeService::poll_host(uint64_t now_ns) {
  if (!parts_.host) return;
  for (DeviceEvent& e : parts_.host->poll(now_ns)) add_device_event(std::move(e));
  for (const std::string& n : parts_.host->take_notes()) note(n);
}

// The `slowburn health` checklist over the last health interval: exported as
// slowburn_health_check, logged when a row's state changes (the first time:
// every row that is not ok), said on the console when one fails.
void ProbeService::evaluate_health_checks() {
  HealthSources sources;
  sources.sysfs_root = o_.sysfs_root;
  sources.proc_root = o_.proc_root;
  auto snapshot = collect_health(sources);
  if (!snapshot) {
    if (!health_error_noted_) note("health checks: " + snapshot.error().message);
    health_error_noted_ = true;
    return;
  }
  HealthContext context;
  context.ranks = parts_.tracker->identities();
  std::optional<Topology> own;  // without the hardware sources there is no shared topology
  if (!parts_.topology) {
    own = Topology::read(o_.sysfs_root, o_.proc_root);
    own->assign_ranks(context.ranks);
  }
  context.topology = parts_.topology ? parts_.topology.get() : &*own;
  std::vector<HealthCheck> checks = evaluate_health(health_last_ ? *health_last_ : *snapshot, *snapshot, context);
  std::map<std::pair<std::string, std::string>, HealthState> previous;
  for (const HealthCheck& c : health_) previous[{c.check, c.device}] = c.state;
  for (const HealthCheck& c : checks) {
    auto was = previous.find({c.check, c.device});
    bool changed = was == previous.end() ? c.state != HealthState::ok : was->second != c.state;
    if (!changed) continue;
    if (parts_.log) parts_.log->line(health_check_json(c));
    if (c.state == HealthState::fail)
      console_ << fmt::format("slowburn probe: health {}{}{} fails: {}\n", c.check, c.device.empty() ? "" : " ",
                              c.device, c.detail);
  }
  console_.flush();
  health_last_ = std::move(*snapshot);
  health_ = std::move(checks);
}

void ProbeService::interval(uint64_t now, bool window_due) {
  on_tracker_changes(parts_.tracker->refresh(now));
  parts_.comms->name_new(*parts_.program, now);
  for (const std::string& n : parts_.comms->take_notes()) note(n);
  std::vector<AggStats> stats = parts_.program->read();
  uint64_t read_ns = monotonic_ns();
  std::vector<AggCounts> deltas = interval_base_.advance(stats);
  // The first reading has no interval behind it: it only sets the base.
  apply_budget(last_read_ns_ ? read_ns - last_read_ns_ : 0, stats, deltas);
  if (last_read_ns_) sequential_check(interval_start_ns_, now, stats, deltas);
  last_read_ns_ = read_ns;
  interval_start_ns_ = now;
  if (window_due) close_window(now, stats);
  publish(stats);
}

Result<void> ProbeService::run(const std::atomic<bool>& stop, std::atomic<bool>& reopen_log) {
  if (auto ok = start(); !ok) return ok;
  const uint64_t interval_ns = static_cast<uint64_t>(std::max(o_.interval_s, 0.1) * 1e9);
  const uint64_t window_ns = std::max<uint64_t>(o_.detector.window_ns, interval_ns);
  const uint64_t start_ns = monotonic_ns();
  const uint64_t end_ns = o_.duration_s > 0 ? start_ns + static_cast<uint64_t>(o_.duration_s * 1e9) : 0;
  window_start_ns_ = start_ns;
  uint64_t last_interval = start_ns, next_window = start_ns + window_ns;
  interval(start_ns, false);
  while (!stop.load()) {
    poll_hardware();
    if (reopen_log.exchange(false) && parts_.log) {
      if (auto ok = parts_.log->file().reopen(); !ok)
        console_ << "slowburn probe: " << ok.error().message << '\n';
      else
        note("event log reopened (SIGHUP)");
    }
    uint64_t now = monotonic_ns();
    if (end_ns && now >= end_ns) break;
    poll_host(now);
    if (o_.health_interval_s > 0 && now >= next_health_ns_) {
      evaluate_health_checks();
      next_health_ns_ = now + static_cast<uint64_t>(o_.health_interval_s * 1e9);
    }
    if (now - last_interval < interval_ns) continue;
    bool window_due = now >= next_window;
    if (window_due) next_window = now + window_ns;
    interval(now, window_due);
    last_interval = now;
  }
  shutdown(start_ns);
  return {};
}

// SIGTERM: the last partial window, the final metrics, everything flushed;
// nothing attached or detached any more.
void ProbeService::shutdown(uint64_t started_ns) {
  uint64_t now = monotonic_ns();
  std::vector<AggStats> stats = parts_.program->read();
  if (now > window_start_ns_) close_window(now, stats);
  publish(stats);
  if (parts_.log) {
    parts_.log->line({{"kind", "status"},
                      {"event", "stop"},
                      {"uptime_s", static_cast<double>(now - started_ns) / 1e9},
                      {"ranks", parts_.tracker->ranks().size()}});
    // node_exporter's textfile-collector format, written whole and renamed
    // into place: the last word, readable after the service is gone.
    auto prom = o_.log_dir / "slowburn.prom";
    {
      std::ofstream out(prom.string() + ".tmp", std::ios::trunc);
      MetricsView v = view(stats);
      v.self = read_self_stats(o_.proc_root);
      out << render_metrics(v);
    }
    std::error_code ec;
    std::filesystem::rename(prom.string() + ".tmp", prom, ec);
    if (ec) console_ << "slowburn probe: cannot write " << prom.string() << ": " << ec.message() << '\n';
    parts_.log->file().flush();
  }
  console_ << fmt::format("slowburn probe: stopped after {:.0f} s; {} finding(s)\n",
                          static_cast<double>(now - started_ns) / 1e9, parts_.detector->findings().size());
}

// The page is rendered when scraped (metrics_endpoint.h), from a view taken
// now; the service's own CPU and memory are read then, too.
void ProbeService::publish(const std::vector<AggStats>& stats) {
  if (!parts_.endpoint) return;
  parts_.endpoint->publish([v = std::make_shared<MetricsView>(view(stats)), root = o_.proc_root] {
    v->self = read_self_stats(root);
    return render_metrics(*v);
  });
}

// Everything the metrics show, gathered in one place from what the service
// holds now.
MetricsView ProbeService::view(const std::vector<AggStats>& stats) {
  MetricsView v;
  v.node = host_;
  v.version = kVersion;
  v.budget_ratio = o_.overhead_budget;
  v.call_cost_ns = call_cost_ns_;
  v.toggle_cost_ns = toggle_cost_ns_;
  v.start_time_seconds = start_unix_;
  v.probe_names = probe_names_;
  if (parts_.endpoint) v.endpoint = parts_.endpoint->stats();
  for (const AggStats& s : stats) {
    auto rank = parts_.tracker->ranks().find(static_cast<int32_t>(s.tgid));
    if (rank != parts_.tracker->ranks().end())
      v.rank_stats.push_back({rank->second.identity, s, parts_.comms->slot(s.comm_slot)});
  }
  v.windows = last_windows_;
  // Standing findings, with the causes known now.
  for (const auto& [pid, f] : parts_.detector->active()) {
    Finding with_cause = f;
    causes_.explain(with_cause, monotonic_ns(), parts_.topology.get());
    attach_sdc_activity(with_cause, sdc_activity(health_));
    v.active_findings.emplace(pid, std::move(with_cause));
  }
  for (const auto& [pid, rank] : parts_.tracker->ranks()) {
    auto& job = v.jobs[rank.identity.job];
    job.first = std::max(job.first, rank.identity.world_size.value_or(0));
    job.second += 1;
  }
  if (parts_.hw)
    for (const ProbeStatus& s : parts_.hw->statuses()) v.probe_states[s.probe] = std::string(probe_state_name(s.state));
  for (const ProbeSpec* spec : probes_) {
    bool attached = false, failed = false;
    for (const auto& [pid, rank] : parts_.tracker->ranks())
      for (const TrackedProbe& p : rank.probes)
        if (p.spec == spec) {
          attached |= p.state == ProbeState::attached;
          failed |= p.state == ProbeState::failed;
        }
    const auto& plans = parts_.budget->plans();
    auto plan = plans.find(spec->name);
    bool sampled = plan != plans.end() && plan->second.role == ProbeRole::redundant && o_.sampling;
    v.probe_states[spec->name] = parts_.tracker->throttled(spec->name) ? (sampled ? "sampled" : "throttled")
                                 : attached                            ? "attached"
                                 : failed                              ? "failed"
                                                                       : "unavailable";
    if (plan != plans.end()) v.probe_duty[spec->name] = {probe_role_name(plan->second.role), plan->second.duty()};
  }
  v.findings_total = totals_.findings;
  v.device_events_total = totals_.device_events;
  v.probe_calls_total = totals_.probe_calls;
  v.probe_throttles_total = totals_.probe_throttles;
  v.probe_cpu_ratio = totals_.probe_cpu_ratio;
  v.estimated_cpu_ratio = totals_.estimated_cpu_ratio;
  CollaggCounters kc = parts_.program->counters();
  v.kernel_orphan_returns = kc.orphan_returns;
  v.kernel_stats_full = kc.stats_full;
  if (parts_.hw) {
    HwCounters hc = parts_.hw->counters();
    v.ringbuf_drops_total["kmsg_xid"] = hc.kmsg_drops;
    v.ringbuf_drops_total["tracepoints"] = hc.tp_drops;
    v.decode_errors_total = hc.unparsed;
  }
  if (parts_.log) {
    v.log_lines_total = parts_.log->file().lines();
    v.log_rotations_total = parts_.log->file().rotations();
    v.log_errors_total = parts_.log->file().errors();
  }
  v.health = health_;  // `self` is read where the page is rendered
  return v;
}

}  // namespace

DetectorConfig ProbeServiceOptions::probe_detector_defaults() { return default_probe_detector(); }

Result<void> run_probe_service(const ProbeServiceOptions& options, const std::atomic<bool>& stop,
                               std::atomic<bool>& reopen_log, std::ostream& console) {
  ProbeService service(options, console);
  return service.run(stop, reopen_log);
}

}  // namespace slowburn
