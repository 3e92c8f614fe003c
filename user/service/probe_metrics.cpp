#include "service/probe_metrics.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "detect/session_cost.h"
#include "sinks/metrics_text.h"

namespace slowburn {

namespace {
// Buckets of the kernel's log2 histogram of the wait in microseconds: slot i
// holds [2^i, 2^(i+1)) us, so its upper bound is 2^(i+1) us. A fixed set up
// to ~36 minutes, so rate() over the buckets sees the same series every scrape.
constexpr size_t kExportedSlots = 31;

// Per-rank series: the communicator label is "" where none was told apart.
MetricLabels rank_labels(const RankIdentity& id, const std::string& node, const std::string& probe,
                         const CommunicatorRef& comm) {
  return {
      {"job", id.job},
      {"rank", std::to_string(id.rank)},
      {"local_rank", id.local_rank ? std::to_string(*id.local_rank) : ""},
      {"node", node},
      {"probe", probe},
      {"communicator", comm && comm->source != CommSource::job ? comm->label : ""},
      {"communicator_size", comm && comm->source != CommSource::job && comm->size ? std::to_string(*comm->size) : ""}};
}

std::string probe_name(const MetricsView& v, uint32_t id) {
  auto it = v.probe_names.find(id);
  return it == v.probe_names.end() ? fmt::format("probe{}", id) : it->second;
}

// Per rank, probe and communicator, cumulative: the kernel's histogram and call counts.
void render_rank_series(MetricsText& m, const MetricsView& v) {
  m.family("slowburn_collective_latency_seconds", "histogram",
           "Time inside the collective per call (entry to return), per rank, from the in-kernel histogram");
  for (const RankSeries& r : v.rank_stats) {
    const AggStats& s = r.stats;
    if (!s.calls) continue;
    std::vector<HistogramBucket> buckets;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kExportedSlots; ++i) {
      cumulative += s.wait_us_slots[i];
      buckets.push_back({std::ldexp(1.0, static_cast<int>(i) + 1) * 1e-6, cumulative});
    }
    m.histogram("slowburn_collective_latency_seconds",
                rank_labels(r.identity, v.node, probe_name(v, s.probe_id), r.comm), buckets,
                static_cast<double>(s.wait_ns) / 1e9, s.calls);
  }
  m.family("slowburn_rank_calls_total", "counter", "Calls completed per rank, probe and communicator");
  for (const RankSeries& r : v.rank_stats)
    if (r.stats.calls)
      m.sample("slowburn_rank_calls_total", rank_labels(r.identity, v.node, probe_name(v, r.stats.probe_id), r.comm),
               static_cast<double>(r.stats.calls));
  // Which of the rank's probes count every call and which only a sample:
  // a sampled probe's calls_total grows in its on-phases only.
  m.family("slowburn_rank_probe_duty_ratio", "gauge",
           "Share of the time the rank's probe is attached (1: every call counted; less: sampled on a duty cycle)");
  for (const RankSeries& r : v.rank_stats) {
    auto it = v.probe_duty.find(probe_name(v, r.stats.probe_id));
    if (r.stats.calls && it != v.probe_duty.end())
      m.sample("slowburn_rank_probe_duty_ratio",
               rank_labels(r.identity, v.node, probe_name(v, r.stats.probe_id), r.comm), it->second.second);
  }
}

// The last closed window, per (rank, probe, communicator).
void render_window_gauges(MetricsText& m, const MetricsView& v) {
  struct Gauge {
    const char* name;
    const char* help;
  };
  const Gauge gauges[] = {
      {"slowburn_rank_lateness_seconds", "Mean arrival lateness after the median rank of the job on this node"},
      {"slowburn_rank_wait_seconds", "Mean time inside the collective (the culprit waits least)"},
      {"slowburn_rank_gap_seconds", "Mean compute gap: entry of a call minus the rank's previous return"},
      {"slowburn_rank_lateness_z", "Robust z of the rank's lateness against its peers on this node"},
      {"slowburn_rank_gap_z", "Robust z of the rank's compute gap against its peers on this node"},
      {"slowburn_rank_blame_ratio", "Share of the window the collective waited for this rank to arrive last"},
      {"slowburn_rank_last_arrival_ratio", "Share of the window's instances in which this rank arrived last"},
      {"slowburn_rank_inside_runq_ratio",
       "Share of the rank's time inside the collective its thread waited for a CPU (run queue, cgroup quota)"},
      {"slowburn_rank_inside_cost_ratio",
       "Share of the window the collective waited for this rank's CPU: its run-queue wait inside beyond its peers'"},
  };
  for (size_t g = 0; g < std::size(gauges); ++g) {
    m.family(gauges[g].name, "gauge", gauges[g].help);
    for (const WindowReport& w : v.windows) {
      for (const RankWindowStats& r : w.ranks) {
        std::optional<double> value;
        switch (g) {
          case 0:
            value = r.lateness_median_ns ? std::optional(*r.lateness_median_ns / 1e9) : std::nullopt;
            break;
          case 1:
            value = r.wait_mean_ns ? std::optional(*r.wait_mean_ns / 1e9) : std::nullopt;
            break;
          case 2:
            value = r.gap_median_ns ? std::optional(*r.gap_median_ns / 1e9) : std::nullopt;
            break;
          case 3:
            value = r.z_lateness;
            break;
          case 4:
            value = r.z_gap;
            break;
          case 5:
            value = w.kind == CallKind::synchronizing ? std::optional(r.blame_share) : std::nullopt;
            break;
          case 6:
            value = w.kind == CallKind::synchronizing ? std::optional(r.last_fraction) : std::nullopt;
            break;
          case 7:
            value = r.inside_runq_share;
            break;
          case 8:
            value = r.inside_runq_share ? std::optional(r.inside_cost_share) : std::nullopt;
            break;
        }
        if (value) m.sample(gauges[g].name, rank_labels(r.identity, v.node, w.probe, w.comm), *value);
      }
    }
  }
}

// What the detector and the hardware found, and the jobs it found them in.
void render_findings(MetricsText& m, const MetricsView& v) {
  m.family("slowburn_straggler", "gauge",
           "1 while this node's detector has a standing straggler finding on the rank; cause: the likely cause; "
           "where: arrival (it comes last) or inside (on time, the collective waits for its CPU); cost: major when "
           "it costs the job 10%+ of the traced time, else minor");
  for (const auto& [pid, f] : v.active_findings) {
    MetricLabels labels = rank_labels(f.culprit, v.node, f.probe, f.comm);
    labels.emplace_back("cause", f.likely_cause_type.empty() ? "none" : f.likely_cause_type);
    labels.emplace_back("where", f.where);
    labels.emplace_back("cost", severity_of(f.cost_share));
    m.sample("slowburn_straggler", labels, 1);
  }
  m.family("slowburn_hang_seconds", "gauge",
           "While the rank stops its job (outside every collective, stopped, gone) and its peers on this node wait "
           "inside one past --hang-s: how long they have waited; state: its process's");
  for (const RankHang& h : v.hangs) {
    MetricLabels labels = rank_labels(h.rank, v.node, h.probe, nullptr);
    labels.emplace_back("state", h.state);
    m.sample("slowburn_hang_seconds", labels, h.waited_s);
  }
  m.family("slowburn_job_waiting_seconds", "gauge",
           "The longest a rank of the job on this node has now waited inside one collective (0: none inside)");
  for (const auto& [job, waited] : v.job_waiting_s)
    m.sample("slowburn_job_waiting_seconds", {{"job", job}, {"node", v.node}}, waited);
  m.family("slowburn_findings_total", "counter", "Findings raised by this node's detector");
  for (const auto& [key, n] : v.findings_total) {
    const auto& [job, rank, type] = key;
    m.sample("slowburn_findings_total",
             {{"job", job}, {"rank", std::to_string(rank)}, {"node", v.node}, {"type", type}}, static_cast<double>(n));
  }
  m.family("slowburn_job_world_size", "gauge", "World size of the job as its launcher reports it");
  for (const auto& [job, sizes] : v.jobs)
    if (sizes.first > 0) m.sample("slowburn_job_world_size", {{"job", job}, {"node", v.node}}, sizes.first);
  m.family("slowburn_job_ranks", "gauge", "Ranks of the job on this node");
  for (const auto& [job, sizes] : v.jobs)
    m.sample("slowburn_job_ranks", {{"job", job}, {"node", v.node}}, sizes.second);

  m.family("slowburn_device_events_total", "counter",
           "Link-degradation and fabric events (Xid, AER, PCIe link, pause storms, QP errors) by device");
  for (const auto& [key, n] : v.device_events_total) {
    const auto& [type, device, role, severity] = key;
    m.sample("slowburn_device_events_total",
             {{"node", v.node},
              {"type", type},
              {"device", device},
              {"role", role.empty() ? "other" : role},
              {"severity", severity}},
             static_cast<double>(n));
  }
}

// The probes and what they cost.
void render_probes(MetricsText& m, const MetricsView& v) {
  m.family("slowburn_probe_state", "gauge",
           "1 for the probe's current state: attached, unavailable, failed, throttled (by the overhead budget), "
           "sampled (in the off-phase of its sampling duty cycle)");
  static const char* const kStates[] = {"attached", "unavailable", "failed", "throttled", "sampled"};
  for (const auto& [probe, state] : v.probe_states)
    for (const char* s : kStates) m.sample("slowburn_probe_state", {{"probe", probe}, {"state", s}}, state == s);
  m.family("slowburn_probe_duty_ratio", "gauge",
           "Share of the time the probe is attached under its plan (1: always); role signal (follows compute), "
           "sampled (follows another collective at once), unknown (not synchronising)");
  for (const auto& [probe, rd] : v.probe_duty)
    m.sample("slowburn_probe_duty_ratio", {{"probe", probe}, {"role", rd.first}}, rd.second);
  m.family("slowburn_probe_hits_total", "counter", "Calls the probe timed (an entry and a return each)");
  for (const auto& [probe, n] : v.probe_calls_total)
    m.sample("slowburn_probe_hits_total", {{"probe", probe}}, static_cast<double>(n));
  m.family("slowburn_probe_estimated_cpu_ratio", "gauge", "Estimated share of one CPU the probe cost last interval");
  for (const auto& [probe, r] : v.probe_cpu_ratio)
    m.sample("slowburn_probe_estimated_cpu_ratio", {{"probe", probe}}, r);
  m.family("slowburn_probe_throttles_total", "counter", "Times the overhead budget detached the probe");
  for (const auto& [probe, n] : v.probe_throttles_total)
    m.sample("slowburn_probe_throttles_total", {{"probe", probe}}, static_cast<double>(n));
  m.family("slowburn_overhead_estimated_cpu_ratio", "gauge",
           "Estimated share of one CPU all probes cost last interval");
  m.sample("slowburn_overhead_estimated_cpu_ratio", {}, v.estimated_cpu_ratio);
  m.family("slowburn_overhead_budget_ratio", "gauge", "The overhead budget, as a share of one CPU (0: off)");
  m.sample("slowburn_overhead_budget_ratio", {}, v.budget_ratio);
  m.family("slowburn_probe_call_cost_seconds", "gauge", "Calibrated cost of one traced call on this machine");
  m.sample("slowburn_probe_call_cost_seconds", {}, v.call_cost_ns / 1e9);
  m.family("slowburn_probe_toggle_cost_seconds", "gauge",
           "What detaching a probe and attaching it again is charged, per rank (calibrated wall time)");
  m.sample("slowburn_probe_toggle_cost_seconds", {}, v.toggle_cost_ns / 1e9);
}

// The node's health checklist (slowburn health), one series per check,
// device and state: 1 for the current state, 0 for the others, so a check
// that changes state leaves no stale series.
void render_health(MetricsText& m, const MetricsView& v) {
  m.family("slowburn_health_check", "gauge",
           "1 for the node health check's current state (ok, warn, fail, unavailable); device is \"\" for "
           "node-wide checks");
  for (const CheckRow& c : v.health)
    for (CheckState s : kCheckStates)
      m.sample("slowburn_health_check",
               {{"check", c.check}, {"device", c.device}, {"state", std::string(check_state_name(s))}}, c.state == s);
}

// The service's own health: losses, its log, the process.
void render_self(MetricsText& m, const MetricsView& v) {
  m.family("slowburn_ringbuf_drops_total", "counter", "Ring-buffer records the kernel could not reserve (lost)");
  for (const auto& [program, n] : v.ringbuf_drops_total)
    m.sample("slowburn_ringbuf_drops_total", {{"program", program}}, static_cast<double>(n));
  m.family("slowburn_decode_errors_total", "counter", "Records or lines that could not be decoded");
  m.sample("slowburn_decode_errors_total", {}, static_cast<double>(v.decode_errors_total));
  m.family("slowburn_orphan_returns_total", "counter", "Returns seen without their entry (attached mid-call)");
  m.sample("slowburn_orphan_returns_total", {}, static_cast<double>(v.kernel_orphan_returns));
  m.family("slowburn_uncounted_calls_total", "counter", "Calls not counted: the kernel statistics table was full");
  m.sample("slowburn_uncounted_calls_total", {}, static_cast<double>(v.kernel_stats_full));
  m.family("slowburn_unaligned_calls_total", "counter",
           "Collective calls counted but not in an instance's lateness or blame, by why");
  m.sample("slowburn_unaligned_calls_total", {{"why", "return_too_late"}},
           static_cast<double>(v.kernel_unplaced_returns));
  m.sample("slowburn_unaligned_calls_total", {{"why", "open_race"}}, static_cast<double>(v.kernel_open_races));
  m.family("slowburn_log_lines_total", "counter", "Lines written to the JSON event log");
  m.sample("slowburn_log_lines_total", {}, static_cast<double>(v.log_lines_total));
  m.family("slowburn_log_rotations_total", "counter", "Rotations of the JSON event log");
  m.sample("slowburn_log_rotations_total", {}, static_cast<double>(v.log_rotations_total));
  m.family("slowburn_log_errors_total", "counter", "Event log writes that failed");
  m.sample("slowburn_log_errors_total", {}, static_cast<double>(v.log_errors_total));

  if (v.endpoint) {
    m.family("slowburn_endpoint_requests_total", "counter", "Requests the metrics endpoint answered");
    m.sample("slowburn_endpoint_requests_total", {}, static_cast<double>(v.endpoint->requests));
    m.family("slowburn_endpoint_dropped_total", "counter",
             "Connections the metrics endpoint answered with an error or closed unanswered, by reason");
    m.sample("slowburn_endpoint_dropped_total", {{"reason", "bad_request"}},
             static_cast<double>(v.endpoint->bad_requests));
    m.sample("slowburn_endpoint_dropped_total", {{"reason", "timeout"}}, static_cast<double>(v.endpoint->timed_out));
    m.sample("slowburn_endpoint_dropped_total", {{"reason", "connection_limit"}},
             static_cast<double>(v.endpoint->evicted));
  }

  m.family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds");
  m.sample("process_cpu_seconds_total", {}, v.self.cpu_seconds);
  m.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes");
  m.sample("process_resident_memory_bytes", {}, static_cast<double>(v.self.resident_bytes));
  m.family("process_open_fds", "gauge", "Number of open file descriptors");
  m.sample("process_open_fds", {}, static_cast<double>(v.self.open_fds));
  m.family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds");
  m.sample("process_start_time_seconds", {}, v.start_time_seconds);
}
}  // namespace

std::string render_metrics(const MetricsView& v) {
  MetricsText m;
  m.family("slowburn_build_info", "gauge", "slowburn version; always 1");
  m.sample("slowburn_build_info", {{"version", v.version}}, 1);
  render_rank_series(m, v);
  render_window_gauges(m, v);
  render_findings(m, v);
  render_probes(m, v);
  render_health(m, v);
  render_self(m, v);
  return m.text();
}

}  // namespace slowburn
