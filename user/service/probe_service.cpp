#include "service/probe_service.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/clock.h"
#include "detect/aggregate_detector.h"
#include "detect/causes.h"
#include "hw/hw_monitor.h"
#include "loader/collagg_program.h"
#include "loader/privileges.h"
#include "probes/catalog.h"
#include "service/calibrate.h"
#include "service/metrics_endpoint.h"
#include "service/overhead_budget.h"
#include "service/probe_metrics.h"
#include "service/rank_tracker.h"
#include "service/self_stats.h"
#include "session/trace_session.h"
#include "sinks/json_sink.h"
#include "sinks/rotating_log.h"

namespace slowburn {

namespace {

using json = nlohmann::json;

constexpr const char* kVersion = "0.1.0";
constexpr int kHardwarePollMs = 100;
// Events kept for joining to findings as causes: a cause older than this is
// history, not an explanation of what the detector sees now.
constexpr uint64_t kCauseMemoryNs = 600'000'000'000;

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// The JSON-lines event log: the trace's JSON sink over a rotating file, plus
// the service's own lines (ranks starting and ending, budget actions).
class EventLog {
 public:
  static Result<std::unique_ptr<EventLog>> open(const ProbeServiceOptions& o, const std::string& host) {
    if (o.log_dir.empty()) return std::unique_ptr<EventLog>();
    auto log = RotatingLog::open(o.log_dir, o.log_max_bytes, o.log_keep);
    if (!log) return log.error();
    return std::unique_ptr<EventLog>(new EventLog(std::move(*log), host));
  }
  Sink& sink() { return sink_; }
  void line(json j) {
    j["ts"] = unix_now_s();
    j["host"] = host_;
    out_ << j.dump() << '\n';
  }
  RotatingLog& file() { return *file_; }

 private:
  EventLog(std::unique_ptr<RotatingLog> file, const std::string& host)
      : file_(std::move(file)), buf_(*file_), out_(&buf_), sink_(out_, host, wall_offset_ns()), host_(host) {}
  std::unique_ptr<RotatingLog> file_;
  LogLineBuf buf_;
  std::ostream out_;
  JsonSink sink_;
  std::string host_;
};

json identity_json(const RankIdentity& id) {
  json j{{"pid", id.pid}, {"rank", id.rank}, {"job", id.job}};
  j["local_rank"] = id.local_rank ? json(*id.local_rank) : json(nullptr);
  j["world_size"] = id.world_size ? json(*id.world_size) : json(nullptr);
  return j;
}

class ProbeService {
 public:
  ProbeService(const ProbeServiceOptions& options, std::ostream& console) : o_(options), console_(console) {}
  Result<void> run(const std::atomic<bool>& stop, std::atomic<bool>& reopen_log);

 private:
  Result<void> start();
  void log_status(const ProbeStatus& s);
  void on_tracker_changes(const TrackerChanges& changes);
  void apply_budget(uint64_t interval_ns, const std::vector<AggStats>& stats);
  void close_window(uint64_t now, const std::vector<AggStats>& stats);
  void on_device_event(DeviceEvent event);
  // The events recent enough to explain what the detector sees now.
  std::vector<DeviceEvent> causes_now();
  void publish(const std::vector<AggStats>& stats);
  void note(const std::string& text);

  ProbeServiceOptions o_;
  std::ostream& console_;
  std::string host_ = hostname();
  double start_unix_ = unix_now_s();
  std::vector<const ProbeSpec*> probes_;
  std::map<uint32_t, std::string> probe_names_;
  std::unique_ptr<CollaggProgram> program_;
  std::unique_ptr<RankTracker> tracker_;
  std::unique_ptr<AggregateDetector> detector_;
  std::unique_ptr<OverheadBudget> budget_;
  std::shared_ptr<Topology> topology_;
  std::unique_ptr<HwMonitor> hw_;
  std::unique_ptr<MetricsEndpoint> endpoint_;
  std::unique_ptr<EventLog> log_;
  double call_cost_ns_ = 0;

  using Key = std::pair<uint32_t, uint32_t>;  // (tgid, probe)
  std::map<Key, AggStats> interval_base_, window_base_;
  uint64_t window_start_ns_ = 0;
  std::vector<WindowReport> last_windows_;
  std::deque<DeviceEvent> recent_events_;
  MetricsView view_;
};

DetectorConfig default_probe_detector() {
  DetectorConfig c;
  c.window_ns = 5'000'000'000;
  return c;
}

Result<void> ProbeService::start() {
  if (auto ok = check_tracing_privileges(); !ok) return ok.error();
  auto probes = select_probes(o_.probe_patterns);
  if (!probes) return probes.error();
  probes_ = *probes;
  std::vector<ProbeInfo> infos;
  for (const ProbeSpec* spec : probes_) {
    probe_names_[spec->id] = spec->name;
    infos.push_back({spec->id, spec->name, spec->kind});
    view_.probe_states[spec->name] = "unavailable";
  }
  auto program = CollaggProgram::load();
  if (!program) return program.error();
  program_ = std::move(*program);

  if (o_.call_cost_ns) {
    call_cost_ns_ = *o_.call_cost_ns;
  } else {
    auto cost = calibrate_call_cost_ns(*program_);
    if (!cost) return cost.error();
    call_cost_ns_ = *cost;
  }
  BudgetConfig budget;
  budget.budget_ratio = o_.overhead_budget;
  budget.call_cost_ns = call_cost_ns_;
  budget_ = std::make_unique<OverheadBudget>(budget);

  auto log = EventLog::open(o_, host_);
  if (!log) return log.error();
  log_ = std::move(*log);

  DetectorConfig detector = o_.detector;
  detector_ = std::make_unique<AggregateDetector>(detector, infos);
  tracker_ = std::make_unique<RankTracker>(*program_, probes_, o_.proc_root, o_.pids);

  if (o_.hardware_events) {
    topology_ = std::make_shared<Topology>(Topology::read(o_.sysfs_root, o_.proc_root));
    HwMonitorOptions hw;
    hw.fabric = o_.fabric;
    hw.sysfs_root = o_.sysfs_root;
    hw.procfs_root = o_.proc_root;
    auto started = HwMonitor::start(hw, topology_);
    if (!started) return started.error();
    hw_ = std::move(*started);
    for (const ProbeStatus& s : hw_->statuses()) {
      log_status(s);
      view_.probe_states[s.probe] = std::string(probe_state_name(s.state));
    }
  }
  if (!o_.listen.empty()) {
    auto endpoint = MetricsEndpoint::start(o_.listen);
    if (!endpoint) return endpoint.error();
    endpoint_ = std::move(*endpoint);
  }
  view_.node = host_;
  view_.version = kVersion;
  view_.budget_ratio = o_.overhead_budget;
  view_.call_cost_ns = call_cost_ns_;
  view_.start_time_seconds = start_unix_;
  view_.probe_names = probe_names_;
  console_ << fmt::format(
      "slowburn probe: {} probes, one traced call costs {:.1f} us here, budget {}; metrics {}; event log {}\n",
      probes_.size(), call_cost_ns_ / 1000,
      o_.overhead_budget > 0 ? fmt::format("{:.2f}% of a CPU", o_.overhead_budget * 100) : std::string("off"),
      endpoint_ ? fmt::format("http://{}:{}/metrics", endpoint_->host(), endpoint_->port()) : std::string("off"),
      log_ ? log_->file().path().string() : std::string("off"));
  console_.flush();
  return {};
}

void ProbeService::note(const std::string& text) {
  console_ << "slowburn probe: " << text << '\n';
  console_.flush();
  if (log_) log_->sink().note(text);
}

void ProbeService::log_status(const ProbeStatus& s) {
  if (log_) log_->sink().probe_status(s);
}

void ProbeService::on_tracker_changes(const TrackerChanges& changes) {
  for (const ProbeStatus& s : changes.statuses) log_status(s);
  for (const RankIdentity& id : changes.started) {
    if (log_) {
      json j{{"kind", "rank"}, {"event", "start"}, {"command", id.command}};
      j.update(identity_json(id));
      log_->line(std::move(j));
    }
  }
  for (const RankIdentity& id : changes.ended) {
    detector_->remove_rank(id.pid);
    json calls = json::object();
    auto it = changes.final_stats.find(id.pid);
    if (it != changes.final_stats.end())
      for (const AggStats& s : it->second) calls[probe_names_[s.probe_id]] = s.calls;
    if (log_) {
      json j{{"kind", "rank"}, {"event", "end"}, {"calls", calls}};
      j.update(identity_json(id));
      log_->line(std::move(j));
    }
    // Its calls since the last interval still count in the probe totals.
    if (it != changes.final_stats.end())
      for (const AggStats& s : it->second) {
        auto base = interval_base_.find({s.tgid, s.probe_id});
        uint64_t counted = base == interval_base_.end() ? 0 : std::min(base->second.calls, s.calls);
        view_.probe_calls_total[probe_names_[s.probe_id]] += s.calls - counted;
      }
    std::erase_if(interval_base_, [&](const auto& kv) { return kv.first.first == static_cast<uint32_t>(id.pid); });
    std::erase_if(window_base_, [&](const auto& kv) { return kv.first.first == static_cast<uint32_t>(id.pid); });
  }
  if (!changes.ended.empty()) {  // their window gauges go with them
    std::set<int32_t> ended;
    for (const RankIdentity& id : changes.ended) ended.insert(id.pid);
    for (WindowReport& w : last_windows_)
      std::erase_if(w.ranks, [&](const RankWindowStats& r) { return ended.contains(r.identity.pid); });
  }
  for (const std::string& job : changes.jobs_ended) {
    view_.jobs.erase(job);
    std::erase_if(view_.findings_total, [&](const auto& kv) { return std::get<0>(kv.first) == job; });
  }
  if (topology_ && (!changes.started.empty() || !changes.ended.empty()))
    topology_->assign_ranks(tracker_->identities());
}

void ProbeService::apply_budget(uint64_t interval_ns, const std::vector<AggStats>& stats) {
  std::map<std::string, uint64_t> calls;
  view_.probe_cpu_ratio.clear();
  for (const AggStats& s : stats) {
    auto base = interval_base_.find({s.tgid, s.probe_id});
    uint64_t delta = s.calls - (base == interval_base_.end() ? 0 : std::min(base->second.calls, s.calls));
    const std::string& name = probe_names_[s.probe_id];
    calls[name] += delta;
    view_.probe_calls_total[name] += delta;
  }
  interval_base_.clear();
  for (const AggStats& s : stats) interval_base_[{s.tgid, s.probe_id}] = s;
  if (interval_ns == 0) return;
  if (o_.overhead_budget <= 0) {
    view_.estimated_cpu_ratio = 0;
    for (const auto& [probe, n] : calls) {
      double r = static_cast<double>(n) * call_cost_ns_ / static_cast<double>(interval_ns);
      view_.probe_cpu_ratio[probe] = r;
      view_.estimated_cpu_ratio += r;
    }
    return;
  }
  BudgetDecision d = budget_->update(interval_ns, calls);
  view_.estimated_cpu_ratio = d.estimated_ratio;
  view_.probe_cpu_ratio = d.probe_ratio;
  for (const std::string& msg : d.messages) note(msg);
  auto act = [&](const std::string& probe, bool throttle) {
    for (const ProbeStatus& s : tracker_->set_throttled(probe, throttle)) log_status(s);
    view_.probe_throttles_total[probe] = budget_->throttle_count(probe);
    if (log_)
      log_->line({{"kind", "budget"},
                  {"event", throttle ? "throttle" : "restore"},
                  {"probe", probe},
                  {"estimated_cpu_ratio", d.estimated_ratio},
                  {"budget_ratio", o_.overhead_budget}});
  };
  for (const std::string& probe : d.throttle) act(probe, true);
  for (const std::string& probe : d.restore) act(probe, false);
}

void ProbeService::close_window(uint64_t now, const std::vector<AggStats>& stats) {
  std::vector<AggWindowInput> inputs;
  for (const AggStats& s : stats) {
    auto rank = tracker_->ranks().find(static_cast<int32_t>(s.tgid));
    if (rank == tracker_->ranks().end()) continue;
    auto base = window_base_.find({s.tgid, s.probe_id});
    AggWindowInput in;
    static_cast<AggCounts&>(in) = s.since(base == window_base_.end() ? AggCounts{} : base->second);
    in.identity = rank->second.identity;
    in.probe_id = s.probe_id;
    inputs.push_back(std::move(in));
  }
  window_base_.clear();
  for (const AggStats& s : stats) window_base_[{s.tgid, s.probe_id}] = s;

  DetectorOutput out = detector_->evaluate(window_start_ns_, now, inputs);
  window_start_ns_ = now;
  last_windows_ = out.windows;
  if (log_ && o_.log_windows)
    for (const WindowReport& w : out.windows) log_->sink().window(w);
  std::vector<DeviceEvent> events = causes_now();
  for (Finding& f : out.findings) {
    attach_likely_causes(f, events);
    view_.findings_total[{f.culprit.job, f.culprit.rank, f.type}] += 1;
    note(f.summary);
    if (log_) log_->sink().finding(f);
  }
}

void ProbeService::on_device_event(DeviceEvent event) {
  view_.device_events_total[{event.type, event.device.empty() ? event.label : event.device, event.role,
                             std::string(event_severity(event))}] += 1;
  if (log_) log_->sink().device_event(event);
  recent_events_.push_back(std::move(event));
  while (recent_events_.size() > 10000) recent_events_.pop_front();
}

std::vector<DeviceEvent> ProbeService::causes_now() {
  uint64_t now = monotonic_ns();
  while (!recent_events_.empty() && now - std::min(now, recent_events_.front().ts_ns) > kCauseMemoryNs)
    recent_events_.pop_front();
  return {recent_events_.begin(), recent_events_.end()};
}

void ProbeService::publish(const std::vector<AggStats>& stats) {
  view_.rank_stats.clear();
  for (const AggStats& s : stats) {
    auto rank = tracker_->ranks().find(static_cast<int32_t>(s.tgid));
    if (rank != tracker_->ranks().end()) view_.rank_stats.emplace_back(rank->second.identity, s);
  }
  view_.windows = last_windows_;
  // Standing findings, with the causes known now.
  view_.active_findings.clear();
  std::vector<DeviceEvent> events = causes_now();
  for (const auto& [pid, f] : detector_->active()) {
    Finding with_cause = f;
    attach_likely_causes(with_cause, events);
    view_.active_findings.emplace(pid, std::move(with_cause));
  }
  view_.jobs.clear();
  for (const auto& [pid, rank] : tracker_->ranks()) {
    auto& job = view_.jobs[rank.identity.job];
    job.first = std::max(job.first, rank.identity.world_size.value_or(0));
    job.second += 1;
  }
  for (const ProbeSpec* spec : probes_) {
    bool attached = false, failed = false;
    for (const auto& [pid, rank] : tracker_->ranks())
      for (const TrackedProbe& p : rank.probes)
        if (p.spec == spec) {
          attached |= p.state == ProbeState::attached;
          failed |= p.state == ProbeState::failed;
        }
    view_.probe_states[spec->name] = tracker_->throttled(spec->name) ? "throttled"
                                     : attached                      ? "attached"
                                     : failed                        ? "failed"
                                                                     : "unavailable";
  }
  CollaggCounters kc = program_->counters();
  view_.kernel_orphan_returns = kc.orphan_returns;
  view_.kernel_stats_full = kc.stats_full;
  if (hw_) {
    HwCounters hc = hw_->counters();
    view_.ringbuf_drops_total["kmsg_xid"] = hc.kmsg_drops;
    view_.ringbuf_drops_total["tracepoints"] = hc.tp_drops;
    view_.decode_errors_total = hc.unparsed;
  }
  if (log_) {
    view_.log_lines_total = log_->file().lines();
    view_.log_rotations_total = log_->file().rotations();
    view_.log_errors_total = log_->file().errors();
  }
  view_.self = read_self_stats(o_.proc_root);
  if (endpoint_) endpoint_->publish(render_metrics(view_));
}

Result<void> ProbeService::run(const std::atomic<bool>& stop, std::atomic<bool>& reopen_log) {
  if (auto ok = start(); !ok) return ok;
  const uint64_t interval_ns = static_cast<uint64_t>(std::max(o_.interval_s, 0.1) * 1e9);
  const uint64_t window_ns = std::max<uint64_t>(o_.detector.window_ns, interval_ns);
  const uint64_t start_ns = monotonic_ns();
  const uint64_t end_ns = o_.duration_s > 0 ? start_ns + static_cast<uint64_t>(o_.duration_s * 1e9) : 0;
  window_start_ns_ = start_ns;
  uint64_t last_interval = start_ns, next_window = start_ns + window_ns;
  uint64_t last_read_ns = 0;  // when the kernel's sums were last read: rates are per read-to-read time
  std::vector<AggStats> stats;

  auto interval = [&](uint64_t now) {
    on_tracker_changes(tracker_->refresh(now));
    stats = program_->read();
    uint64_t read_ns = monotonic_ns();
    // The first reading has no interval behind it: it only sets the base.
    apply_budget(last_read_ns ? read_ns - last_read_ns : 0, stats);
    last_read_ns = read_ns;
    last_interval = now;
    if (now >= next_window) {
      close_window(now, stats);
      next_window = now + window_ns;
    }
    publish(stats);
  };
  interval(start_ns);

  while (!stop.load()) {
    if (hw_) {
      auto events = hw_->poll(kHardwarePollMs, monotonic_ns());
      if (!events) {
        note(fmt::format("hardware events stopped: {}", events.error().message));
        hw_.reset();
      } else {
        for (DeviceEvent& e : *events) on_device_event(std::move(e));
        for (const std::string& n : hw_->take_notes()) note(n);
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(kHardwarePollMs));
    }
    if (reopen_log.exchange(false) && log_) {
      if (auto ok = log_->file().reopen(); !ok)
        console_ << "slowburn probe: " << ok.error().message << '\n';
      else
        note("event log reopened (SIGHUP)");
    }
    uint64_t now = monotonic_ns();
    if (end_ns && now >= end_ns) break;
    if (now - last_interval >= interval_ns) interval(now);
  }

  // SIGTERM: the last partial window, the final metrics, everything flushed;
  // nothing attached or detached any more.
  uint64_t now = monotonic_ns();
  stats = program_->read();
  if (now > window_start_ns_) close_window(now, stats);
  publish(stats);
  std::string final_metrics = render_metrics(view_);
  if (log_) {
    log_->line({{"kind", "status"},
                {"event", "stop"},
                {"uptime_s", static_cast<double>(now - start_ns) / 1e9},
                {"ranks", tracker_->ranks().size()}});
    // node_exporter's textfile-collector format, written whole and renamed
    // into place: the last word, readable after the service is gone.
    auto prom = o_.log_dir / "slowburn.prom";
    {
      std::ofstream out(prom.string() + ".tmp", std::ios::trunc);
      out << final_metrics;
    }
    std::error_code ec;
    std::filesystem::rename(prom.string() + ".tmp", prom, ec);
    if (ec) console_ << "slowburn probe: cannot write " << prom.string() << ": " << ec.message() << '\n';
    log_->file().flush();
  }
  console_ << fmt::format("slowburn probe: stopped after {:.0f} s; {} finding(s)\n",
                          static_cast<double>(now - start_ns) / 1e9, detector_->findings().size());
  return {};
}

}  // namespace

DetectorConfig ProbeServiceOptions::probe_detector_defaults() { return default_probe_detector(); }

Result<void> run_probe_service(const ProbeServiceOptions& options, const std::atomic<bool>& stop,
                               std::atomic<bool>& reopen_log, std::ostream& console) {
  ProbeService service(options, console);
  return service.run(stop, reopen_log);
}

}  // namespace slowburn
