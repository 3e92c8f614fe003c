#include "sinks/text_sink.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "core/format.h"
#include "core/strings.h"
#include "sinks/hist_printer.h"

namespace slowburn {

namespace {
std::string who(const std::optional<RankIdentity>& rank, int32_t pid) {  // for one histogram
  if (rank) return rank_label(*rank);
  return pid > 0 ? fmt::format("pid {}", pid) : std::string("all processes");
}

std::string format_z(const std::optional<double>& z) { return z ? fmt::format("{:.1f}", *z) : "-"; }

std::string wall_clock() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%H:%M:%S", &local);
  return buf;
}
}  // namespace

void TextSink::probe_status(const ProbeStatus& s) { statuses_.push_back(s); }

// One line per (probe, state, where/why), with the ranks it applies to:
// 4 ranks x 17 probes would otherwise be 68 lines before the first table.
void TextSink::probes_done(size_t attached, size_t processes) {
  struct Group {
    std::string probe;
    ProbeState state;
    std::string where;  // attach sites, or why not
    std::vector<std::string> who;
  };
  std::vector<Group> groups;
  for (const ProbeStatus& s : statuses_) {
    std::string where;
    if (s.state == ProbeState::attached && !s.sites.empty()) {
      for (const AttachSite& site : s.sites)
        where += fmt::format("{}{}+0x{:x}", where.empty() ? "" : ", ", site.symbol, site.file_offset);
      where = fmt::format("{} [{}]", s.library, where);
    } else {
      where = s.state == ProbeState::attached ? s.library : s.detail;
    }
    // Who it applies to: ranks, a process, or nothing to say (node-wide sources).
    std::string id = s.rank ? std::to_string(s.rank->rank) : (s.pid > 0 ? fmt::format("pid {}", s.pid) : "");
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.probe == s.probe && g.state == s.state && g.where == where;
    });
    if (it == groups.end())
      groups.push_back({s.probe, s.state, std::move(where), {id}});
    else
      it->who.push_back(id);
  }
  for (const Group& g : groups) {
    std::string who = join(g.who, ",");
    bool ranks = !statuses_.empty() && statuses_.front().rank.has_value();
    if (!who.empty()) who = (ranks ? "ranks " : "") + who + ": ";
    out_ << fmt::format("{:<24} {:<11} {}{}\n", g.probe, probe_state_name(g.state), who, g.where);
  }
  statuses_.clear();
  if (attached)
    out_ << fmt::format("Tracing {} probe attachment(s){}... Hit Ctrl-C to end.\n", attached,
                        processes ? fmt::format(" in {} process(es)", processes) : "");
  out_.flush();
}

void TextSink::note(const std::string& text) { out_ << "note: " << text << '\n'; }

void TextSink::device_event(const DeviceEvent& event) {
  out_ << fmt::format("{} EVENT {}\n", wall_clock(), event.summary);
  out_.flush();
}

void TextSink::window(const WindowReport& report) {
  latest_[{report.probe, report.comm ? report.comm->id : 0}] = report;
}

std::string format_window_table(const WindowReport& r) {
  bool aligned = r.aligned;
  bool named_comm = r.comm && r.comm->source != CommSource::job;
  std::string out =
      fmt::format("{} {}{} {:.2f} s window", wall_clock(), r.probe, named_comm ? " on " + r.comm->label : "",
                  static_cast<double>(r.end_ns - r.start_ns) / 1e9);
  out += aligned ? fmt::format(", {} aligned calls\n", r.instances) : fmt::format(" ({})\n", call_kind_name(r.kind));
  out += fmt::format("{:>5} {:>8}{} {:>7} {:>10} {:>10}", "RANK", "PID", named_comm ? fmt::format(" {:>5}", "IN") : "",
                     "CALLS", "P50 WAIT", "P99 WAIT");
  if (aligned)
    out += fmt::format(" {:>11} {:>10} {:>6} {:>5} {:>7} {:>7}", "LATENESS", "GAP", "BLAME", "LAST", "Z LATE", "Z GAP");
  out += '\n';
  for (const RankWindowStats& s : r.ranks) {
    out += fmt::format("{:>5} {:>8}{} {:>7} {:>10} {:>10}", s.identity.rank, s.identity.pid,
                       named_comm ? fmt::format(" {:>5}", s.comm_rank ? std::to_string(*s.comm_rank) : "-") : "",
                       s.calls, format_ns(s.wait_p50_ns), format_ns(s.wait_p99_ns));
    if (aligned)
      out += fmt::format(" {:>11} {:>10} {:>5.0f}% {:>4.0f}% {:>7} {:>7}{}", format_ns(s.lateness_median_ns, true),
                         format_ns(s.gap_median_ns), s.blame_share * 100, s.last_fraction * 100, format_z(s.z_lateness),
                         format_z(s.z_gap), s.flagged ? " <" : "");
    out += '\n';
  }
  return out;
}

void TextSink::tick(uint64_t) {
  for (const auto& [probe, report] : latest_) out_ << '\n' << format_window_table(report);
  latest_.clear();
  out_.flush();
}

void TextSink::finding(const Finding& f) {
  out_ << fmt::format("\nFINDING {}: {}\n", f.type, f.summary);
  out_.flush();
}

void TextSink::histogram(const HistogramReport& h) {
  uint64_t count = h.hist.count();
  if (count == 0) return;
  bool named_comm = h.comm && h.comm->source != CommSource::job;
  out_ << fmt::format("\n{} {}{}: {} calls, mean {}\n", who(h.rank, h.pid), h.probe,
                      named_comm ? " on " + h.comm->label : "", count,
                      format_ns(static_cast<double>(h.total_ns) / static_cast<double>(count)));
  out_ << format_log2_hist(h.hist);
}

void TextSink::summary(const SessionSummary& s) {
  out_ << fmt::format("\nTraced {:.1f} s: {} calls, {} aligned collective instances.\n", s.traced_seconds,
                      s.detector.calls, s.detector.instances);
  if (s.detector.aligned_by_sequence || s.detector.order_mismatches)
    out_ << fmt::format(
        "Aligned by (communicator, sequence number): {} instances ({} dropped: their clocks disagreed).\n",
        s.detector.aligned_by_sequence, s.detector.order_mismatches);
  out_ << fmt::format(
      "Lost: {} ring-buffer drops, {} undecodable records, {} calls missing by sequence, {} calls unmatched across "
      "ranks, {} returns without entry, {} calls not timed, {} records from untraced processes, {} late for their "
      "window.\n",
      s.ringbuf_drops, s.decode_rejected, s.detector.sequence_gaps, s.detector.discarded_calls, s.orphan_returns,
      s.untimed_calls, s.detector.unknown_process, s.detector.late_calls);
  if (s.recording_dropped)
    out_ << fmt::format(
        "Lost in the recordings: {} calls their writers dropped (the disk fell behind; counted in the calls "
        "missing by sequence too).\n",
        s.recording_dropped);
}

void TextSink::communicators(const std::vector<CommunicatorRef>& comms) {
  bool any =
      std::any_of(comms.begin(), comms.end(), [](const CommunicatorRef& c) { return c->source != CommSource::job; });
  if (!any) return;
  out_ << fmt::format("\n{:>4} {:<8} {:>5} {:<10} {}\n", "ID", "LIBRARY", "SIZE", "FROM", "COMMUNICATOR");
  for (const CommunicatorRef& c : comms)
    out_ << fmt::format("{:>4} {:<8} {:>5} {:<10} {}\n", c->id, comm_backend_name(c->backend),
                        c->size ? std::to_string(*c->size) : "-", comm_source_name(c->source), c->label);
}

void TextSink::node_clock(const NodeClock& n) {
  if (!header_done_nodes_) {
    out_ << fmt::format("{:<16} {:<12} {:>14} {:>10} {:>10} {:>10} {:>8}  {}\n", "NODE", "RANKS", "CLOCK OFFSET",
                        "DRIFT", "SPREAD", "BOUND", "MATCHED", "FROM");
    header_done_nodes_ = true;
  }
  std::string ranks;
  for (int r : n.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  if (n.reference)
    out_ << fmt::format("{:<16} {:<12} {:>14} {:>10} {:>10} {:>10} {:>8}  {}\n", n.host, ranks, "reference", "-", "-",
                        "-", "-", n.recording);
  else if (n.offset_ns)
    out_ << fmt::format("{:<16} {:<12} {:>14} {:>10} {:>10} {:>10} {:>8}  {}\n", n.host, ranks,
                        format_ns(static_cast<double>(*n.offset_ns), true), fmt::format("{:+.1f} ppm", n.drift_ppm),
                        format_ns(static_cast<double>(n.spread_ns)),
                        n.bound_ns > 0 ? format_ns(static_cast<double>(n.bound_ns)) : std::string("-"), n.matched,
                        n.lane);
  else
    out_ << fmt::format("{:<16} {:<12} {:>14} {:>10} {:>10} {:>10} {:>8}  left out: {}\n", n.host, ranks, "unknown",
                        "-", "-", "-", "-", n.unknown_reason);
  out_.flush();
}

void TextSink::verdict(const SessionVerdict& v) {
  if (!v.judged) {
    out_ << fmt::format("Verdict: undetermined: {}.\n", v.reason);
    return;
  }
  if (v.stragglers.empty() && v.hangs.empty() && v.failures.empty())
    out_ << fmt::format("Verdict: no straggler found ({} aligned collective instances in {} judged windows).\n",
                        v.instances, v.windows_judged);
  else
    out_ << "Verdict:\n";
  if (!v.reason.empty()) out_ << fmt::format("  not judged: {}\n", v.reason);
  for (const Finding& f : v.failures) out_ << fmt::format("  failure: {}\n", f.summary);
  for (const Finding& f : v.hangs) out_ << fmt::format("  {}: {}\n", f.type, f.summary);
  for (const PendingHang& p : v.pending_hangs) out_ << fmt::format("  pending hang: {}\n", p.summary);
  for (const Finding& f : v.stragglers)
    out_ << fmt::format("  straggler: {}{}\n", f.summary, f.severity.empty() ? "" : " [" + f.severity + "]");
  for (const Episode& e : v.episodes) out_ << fmt::format("  episode: {}\n", e.summary);
  for (const Withheld& w : v.withheld) out_ << fmt::format("  withheld: {}\n", w.summary);
  if (v.clock_check) out_ << fmt::format("  clocks: {}\n", v.clock_check->summary);
  out_.flush();
}

}  // namespace slowburn
