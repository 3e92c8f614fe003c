#include "service/metrics_view.h"

#include <algorithm>

#include "sources/hw_monitor.h"

namespace slowburn {

namespace {

// attached, failed, unavailable, throttled or sampled, across the ranks.
std::string probe_state(const ServiceParts& p, const ProbeSpec* spec) {
  bool attached = false, failed = false;
  for (const auto& [pid, rank] : p.tracker->ranks())
    for (const TrackedProbe& probe : rank.probes)
      if (probe.spec == spec) {
        attached |= probe.state == ProbeState::attached;
        failed |= probe.state == ProbeState::failed;
      }
  if (p.tracker->throttled(spec->name)) return p.budget->sampled(spec->name) ? "sampled" : "throttled";
  return attached ? "attached" : failed ? "failed" : "unavailable";
}

void add_ranks(const ServiceParts& p, const std::vector<AggStats>& stats, MetricsView& v) {
  for (const AggStats& s : stats) {
    auto rank = p.tracker->ranks().find(static_cast<int32_t>(s.tgid));
    if (rank != p.tracker->ranks().end())
      v.rank_stats.push_back({rank->second.identity, s, p.comms->slot(s.comm_slot)});
  }
  for (const auto& [pid, rank] : p.tracker->ranks()) {
    auto& job = v.jobs[rank.identity.job];
    job.first = std::max(job.first, rank.identity.world_size.value_or(0));
    job.second += 1;
  }
}

void add_probes(const ServiceParts& p, MetricsView& v) {
  v.probe_names = p.budget->probe_names();
  if (p.sources && p.sources->hardware())
    for (const ProbeStatus& s : p.sources->hardware()->statuses())
      v.probe_states[s.probe] = std::string(probe_state_name(s.state));
  for (const auto& [id, name] : p.budget->probe_names())
    if (const ProbeSpec* spec = find_probe(name)) v.probe_states[name] = probe_state(p, spec);
  v.probe_duty = p.budget->duty();
  v.probe_calls_total = p.budget->calls_total();
  v.probe_throttles_total = p.budget->throttles_total();
  v.probe_cpu_ratio = p.budget->cpu_ratio();
  v.estimated_cpu_ratio = p.budget->estimated_cpu_ratio();
  v.budget_ratio = p.budget->config().budget_ratio;
  v.call_cost_ns = p.budget->config().call_cost_ns;
  v.toggle_cost_ns = p.budget->config().toggle_cost_ns;
}

void add_losses(const ServiceParts& p, MetricsView& v) {
  CollaggCounters kc = p.program->counters();
  v.kernel_orphan_returns = kc.orphan_returns;
  v.kernel_stats_full = kc.stats_full;
  v.kernel_unplaced_returns = kc.unplaced;
  v.kernel_open_races = kc.open_races;
  if (p.sources && p.sources->hardware()) {
    HwCounters hc = p.sources->hardware()->counters();
    v.ringbuf_drops_total["kmsg_xid"] = hc.kmsg_drops;
    v.ringbuf_drops_total["tracepoints"] = hc.tp_drops;
    v.decode_errors_total = hc.unparsed;
  }
  if (p.log) {
    v.log_lines_total = p.log->file().lines();
    v.log_rotations_total = p.log->file().rotations();
    v.log_errors_total = p.log->file().errors();
  }
}

}  // namespace

MetricsView gather_metrics(const ServiceParts& p, const std::vector<AggStats>& stats,
                           std::map<int32_t, Finding> active_findings) {
  MetricsView v;
  v.node = p.node;
  v.version = p.version;
  v.start_time_seconds = p.start_time_seconds;
  add_ranks(p, stats, v);
  v.windows = *p.windows;
  v.active_findings = std::move(active_findings);
  add_probes(p, v);
  v.findings_total = p.totals->findings;
  v.device_events_total = p.totals->device_events;
  add_losses(p, v);
  v.health = p.health->rows();
  if (p.hangs) {
    v.hangs = p.hangs->hangs();
    v.job_waiting_s = p.hangs->job_waiting_s();
  }
  return v;
}

}  // namespace slowburn
