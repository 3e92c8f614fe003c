#include "session/trace_session.h"

#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "detect/causes.h"
#include "events/decoder.h"
#include "hw/hw_monitor.h"
#include "loader/callpair_program.h"
#include "loader/privileges.h"
#include "loader/ring_buffer.h"
#include "probes/resolver.h"
#include "procfs/ranks.h"
#include "session/attach.h"
#include "session/rdma_sources.h"

namespace slowburn {

namespace {

constexpr int kPollTimeoutMs = 100;
constexpr uint64_t kAdvancePeriodNs = 100'000'000;
constexpr uint64_t kLivenessPeriodNs = 1'000'000'000;

Result<std::vector<RankIdentity>> find_ranks(const TraceOptions& options) {
  std::vector<RankIdentity> ranks;
  if (!options.pids.empty()) {
    for (int32_t pid : options.pids) {
      auto rank = read_rank(options.proc_root, pid);
      if (!rank) return rank.error();
      ranks.push_back(std::move(*rank));
    }
    return ranks;
  }
  ranks = discover_ranks(options.proc_root, getpid());
  if (ranks.empty())
    return make_error(
        "no rank processes found on this node (looked for {} in /proc/*/environ); start the job first, or "
        "name processes with --pid",
        rank_variable_names());
  return ranks;
}

// Routes calls of each job to that job's detector: ranks of different jobs
// on one node never wait for each other.
class JobDetectors {
 public:
  JobDetectors(const DetectorConfig& config, const std::vector<ProbeInfo>& probes,
               const std::vector<RankIdentity>& ranks) {
    for (const RankIdentity& rank : ranks) {
      auto& detector = by_job_[rank.job];
      if (!detector) detector = std::make_unique<StragglerDetector>(config, probes);
      detector->add_rank(rank);
      by_pid_[rank.pid] = detector.get();
    }
  }
  StragglerDetector* for_pid(uint32_t pid) {
    auto it = by_pid_.find(static_cast<int32_t>(pid));
    return it == by_pid_.end() ? nullptr : it->second;
  }
  template <typename F>
  void each(F&& f) {
    for (auto& [job, detector] : by_job_) f(*detector);
  }

 private:
  std::map<std::string, std::unique_ptr<StragglerDetector>> by_job_;
  std::map<int32_t, StragglerDetector*> by_pid_;
};

}  // namespace

Result<TraceResult> run_trace(const TraceOptions& options, Sink& sink, const std::atomic<bool>& stop) {
  if (auto ok = check_tracing_privileges(); !ok) return ok.error();
  auto ranks = find_ranks(options);
  if (!ranks) return ranks.error();
  auto probes = select_probes(options.probe_patterns);
  if (!probes) return probes.error();

  CallpairConfig config;
  config.hist_unit_ns = 1000;
  auto program = CallpairProgram::load(config);
  if (!program) return program.error();

  TraceResult result;
  result.ranks = *ranks;
  SymbolCache symbols;
  std::vector<ProbeInfo> probe_infos;
  for (const ProbeSpec* spec : *probes) probe_infos.push_back({spec->id, spec->name, spec->kind});
  JobDetectors detectors(options.detector, probe_infos, *ranks);

  // The hardware side: which device is whose, and what goes wrong with it.
  std::unique_ptr<HwMonitor> hw;
  if (options.hardware_events) {
    auto topology = std::make_shared<Topology>(Topology::read(options.sysfs_root, options.proc_root));
    topology->assign_ranks(*ranks);
    HwMonitorOptions hw_options;
    hw_options.fabric = options.rdma;
    hw_options.sysfs_root = options.sysfs_root;
    hw_options.procfs_root = options.proc_root;
    auto started = HwMonitor::start(hw_options, std::move(topology));
    if (!started) return started.error();
    hw = std::move(*started);
  }

  for (const RankIdentity& rank : *ranks) {
    auto maps = read_process_maps(options.proc_root, rank.pid);
    std::vector<ProbeResolution> resolutions;
    for (const ProbeSpec* spec : *probes) {
      ProbeResolution where;
      where.spec = spec;
      if (options.library)
        where = resolve_in_file(*spec, *options.library, symbols);
      else if (maps)
        where = resolve_in_process(*spec, options.proc_root, rank.pid, *maps, symbols);
      else
        where.reason = maps.error().message;
      resolutions.push_back(std::move(where));
    }
    auto statuses = attach_probes(**program, rank.pid, rank, resolutions);
    for (size_t i = 0; i < statuses.size(); ++i) {
      if (statuses[i].state == ProbeState::attached) {
        ++result.attached;
        detectors.for_pid(static_cast<uint32_t>(rank.pid))->add_participant(resolutions[i].spec->id, rank.pid);
      }
      sink.probe_status(statuses[i]);
    }
  }
  std::unique_ptr<RdmaSources> rdma;
  if (options.rdma) {
    auto started = RdmaSources::start(*ranks, options.proc_root, symbols, hw ? &hw->topology() : nullptr, sink);
    if (!started) return started.error();
    rdma = std::move(*started);
  }
  if (hw)
    for (const ProbeStatus& status : hw->statuses()) sink.probe_status(status);
  sink.probes_done(result.attached + (rdma ? rdma->attached() : 0), ranks->size());
  if (result.attached == 0)
    return make_error("no probe could be attached to any of the {} rank process(es); see the reasons above",
                      ranks->size());

  EventDecoder decoder;
  auto reader = RingBufferReader::open((*program)->events_fd(), [&](std::span<const std::byte> record) {
    auto call = decoder.decode_call(record);
    if (!call) return;
    if (StragglerDetector* detector = detectors.for_pid(call->pid)) detector->ingest(*call);
  });
  if (!reader) return reader.error();
  if (rdma)
    if (auto added = rdma->add_to(**reader); !added) return added.error();

  const uint64_t start_ns = monotonic_ns();
  const uint64_t end_ns = options.duration_s > 0 ? start_ns + static_cast<uint64_t>(options.duration_s * 1e9) : 0;
  const uint64_t interval_ns = static_cast<uint64_t>(std::max(options.interval_s, 0.1) * 1e9);
  uint64_t next_advance = start_ns + kAdvancePeriodNs;
  uint64_t next_tick = start_ns + interval_ns;
  uint64_t next_liveness = start_ns + kLivenessPeriodNs;
  std::map<int32_t, bool> alive;
  for (const RankIdentity& rank : *ranks) alive[rank.pid] = true;

  auto emit = [&](const DetectorOutput& out, uint64_t now) {
    for (const std::string& note : out.notes) sink.note(note);
    for (const WindowReport& window : out.windows) sink.window(window);
    for (Finding finding : out.findings) {
      if (!result.first_finding_after_s) result.first_finding_after_s = static_cast<double>(now - start_ns) / 1e9;
      attach_likely_causes(finding, result.device_events);
      sink.finding(finding);
    }
  };
  auto poll_hardware = [&](uint64_t now) -> Result<void> {
    std::vector<DeviceEvent> events;
    if (hw) {
      auto polled = hw->poll(0, now);
      if (!polled) return polled.error();
      events = std::move(*polled);
      for (const std::string& note : hw->take_notes()) sink.note(note);
    }
    if (rdma)
      for (DeviceEvent& e : rdma->poll(now)) events.push_back(std::move(e));
    for (DeviceEvent& e : events) {
      sink.device_event(e);
      result.device_events.push_back(std::move(e));
    }
    return {};
  };

  while (!stop.load()) {
    if (auto polled = reader->get()->poll(kPollTimeoutMs); !polled) return polled.error();
    uint64_t now = monotonic_ns();
    if (auto ok = poll_hardware(now); !ok) return ok.error();
    if (end_ns && now >= end_ns) break;
    if (now >= next_advance) {
      detectors.each([&](StragglerDetector& d) { emit(d.advance(now), now); });
      next_advance = now + kAdvancePeriodNs;
    }
    if (now >= next_tick) {
      sink.tick(now);
      next_tick += interval_ns;
    }
    if (now >= next_liveness) {
      next_liveness = now + kLivenessPeriodNs;
      auto in_flight = (*program)->in_flight();
      detectors.each([&](StragglerDetector& d) { emit(d.check_in_flight(now, in_flight), now); });
      size_t alive_count = 0;
      for (auto& [pid, is_alive] : alive) {
        if (is_alive && !process_alive(options.proc_root, pid)) {
          // Its last records first, while it still counts as a rank.
          if (auto drained = reader->get()->drain(); !drained) return drained.error();
          is_alive = false;
          DetectorOutput out;
          if (StragglerDetector* d = detectors.for_pid(static_cast<uint32_t>(pid))) d->remove_rank(pid, out);
          emit(out, now);
        }
        alive_count += is_alive;
      }
      if (alive_count == 0) {
        sink.note("every traced rank has exited");
        break;
      }
    }
    if (options.stop_on_finding && result.first_finding_after_s) break;
  }

  // Records already in the ring buffer still count.
  if (auto drained = reader->get()->drain(); !drained) sink.note(drained.error().message);
  uint64_t now = monotonic_ns();
  if (rdma)  // the per-connection view as it ended, for the findings below
    for (DeviceEvent& e : rdma->poll(now, true)) {
      sink.device_event(e);
      result.device_events.push_back(std::move(e));
    }
  detectors.each([&](StragglerDetector& d) { emit(d.finish(now), now); });
  sink.tick(now);

  std::map<int32_t, RankIdentity> by_pid;
  for (const RankIdentity& rank : *ranks) by_pid[rank.pid] = rank;
  std::map<uint32_t, std::string> probe_names;
  for (const ProbeSpec* spec : *probes) probe_names[spec->id] = spec->name;
  auto hists = (*program)->histograms("usecs");
  auto rank_of = [&](uint32_t tgid) {
    return by_pid.contains(static_cast<int32_t>(tgid)) ? by_pid[static_cast<int32_t>(tgid)].rank : -1;
  };
  std::sort(hists.begin(), hists.end(), [&](const KernelHistogram& a, const KernelHistogram& b) {
    return std::make_tuple(a.probe_id, rank_of(a.tgid), a.tgid) < std::make_tuple(b.probe_id, rank_of(b.tgid), b.tgid);
  });
  for (KernelHistogram& h : hists) {
    HistogramReport report;
    auto rank = by_pid.find(static_cast<int32_t>(h.tgid));
    if (rank != by_pid.end()) report.rank = rank->second;
    report.pid = static_cast<int32_t>(h.tgid);
    report.probe = probe_names.contains(h.probe_id) ? probe_names[h.probe_id] : fmt::format("probe {}", h.probe_id);
    report.hist = std::move(h.hist);
    report.total_ns = h.total_ns;
    sink.histogram(report);
  }

  if (rdma) {
    for (const HistogramReport& h : rdma->ib_histograms()) sink.histogram(h);
    if (uint64_t lost = rdma->lost()) sink.note(fmt::format("{} libibverbs call record(s) lost or undecodable", lost));
  }

  CallpairCounters kernel = (*program)->counters();
  SessionSummary& summary = result.summary;
  summary.traced_seconds = static_cast<double>(now - start_ns) / 1e9;
  summary.ringbuf_drops = kernel.ringbuf_drops;
  summary.orphan_returns = kernel.orphan_returns;
  summary.untimed_calls = kernel.state_failures;
  summary.decode_rejected = decoder.stats().rejected();
  detectors.each([&](StragglerDetector& d) {
    const DetectorCounters& c = d.counters();
    summary.calls += c.calls;
    summary.sequence_gaps += c.sequence_gaps;
    summary.discarded_calls += c.discarded_calls;
    summary.instances += c.instances;
    summary.unknown_process += c.unknown_process;
    summary.late_calls += c.late_calls;
    for (Finding& f : d.findings()) {
      attach_likely_causes(f, result.device_events);  // events that came after the finding count too
      summary.findings.push_back(std::move(f));
    }
  });
  sink.summary(summary);
  return result;
}

}  // namespace slowburn
