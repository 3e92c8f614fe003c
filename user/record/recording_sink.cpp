#include "record/recording_sink.h"

#include <SQLiteCpp/SQLiteCpp.h>

#include "core/strings.h"
#include "detect/causes.h"

namespace slowburn {

namespace {

void bind_optional(SQLite::Statement& s, int index, const std::optional<double>& value) {
  if (value)
    s.bind(index, *value);
  else
    s.bind(index);
}

void bind_comm(SQLite::Statement& s, int index, const CommunicatorRef& comm) {
  if (comm)
    s.bind(index, static_cast<int64_t>(comm->id));
  else
    s.bind(index);
}

}  // namespace

void RecordingSink::probe_status(const ProbeStatus& status) {
  r_.write([status](SQLite::Database& db) {
    if (status.rank) {
      const RankIdentity& id = *status.rank;
      SQLite::Statement s(
          db,
          "INSERT OR IGNORE INTO ranks(pid, rank, local_rank, world_size, job, launcher, host, command) "
          "VALUES(?,?,?,?,?,?,?,?)");
      s.bind(1, id.pid);
      s.bind(2, id.rank);
      if (id.local_rank)
        s.bind(3, *id.local_rank);
      else
        s.bind(3);
      if (id.world_size)
        s.bind(4, *id.world_size);
      else
        s.bind(4);
      s.bind(5, id.job);
      s.bind(6, id.launcher);
      s.bind(7, id.host);
      s.bind(8, id.command);
      s.exec();
    }
    if (const ProbeSpec* spec = find_probe(status.probe)) {
      SQLite::Statement p(db, "INSERT OR IGNORE INTO probes(id, name, kind) VALUES(?,?,?)");
      p.bind(1, static_cast<int64_t>(spec->id));
      p.bind(2, spec->name);
      p.bind(3, std::string(call_kind_name(spec->kind)));
      p.exec();
    }
    SQLite::Statement s(db, "INSERT INTO probe_states(probe, pid, state, library, detail) VALUES(?,?,?,?,?)");
    s.bind(1, status.probe);
    s.bind(2, status.pid);
    s.bind(3, std::string(probe_state_name(status.state)));
    s.bind(4, status.library);
    s.bind(5, status.detail);
    s.exec();
  });
}

void RecordingSink::device_event(const DeviceEvent& event) {
  std::optional<int32_t> pid = event.pid;
  r_.write([ts = event.ts_ns, type = event.type, device = event.device, ranks = join_numbers(event.ranks),
            summary = event.summary, rank = cause_rank(event), pid](SQLite::Database& db) {
    SQLite::Statement s(db,
                        "INSERT INTO device_events(ts_ns, type, device, ranks, summary, cause_rank, pid) "
                        "VALUES(?,?,?,?,?,?,?)");
    s.bind(1, static_cast<int64_t>(ts));
    s.bind(2, type);
    s.bind(3, device);
    s.bind(4, ranks);
    s.bind(5, summary);
    s.bind(6, rank);
    if (pid)
      s.bind(7, *pid);
    else
      s.bind(7);
    s.exec();
  });
}

void RecordingSink::window(const WindowReport& report) {
  if (!report.aligned) return;
  r_.write([report](SQLite::Database& db) {
    SQLite::Statement s(db,
                        "INSERT INTO windows(start_ns, probe, comm_id, pid, rank, calls, lateness_median_ns, "
                        "gap_median_ns, blame_ns, last_fraction, flagged) VALUES(?,?,?,?,?,?,?,?,?,?,?)");
    for (const RankWindowStats& r : report.ranks) {
      s.bind(1, static_cast<int64_t>(report.start_ns));
      s.bind(2, report.probe);
      bind_comm(s, 3, report.comm);
      s.bind(4, r.identity.pid);
      s.bind(5, r.identity.rank);
      s.bind(6, static_cast<int64_t>(r.calls));
      bind_optional(s, 7, r.lateness_median_ns);
      bind_optional(s, 8, r.gap_median_ns);
      s.bind(9, r.blame_ns);
      s.bind(10, r.last_fraction);
      s.bind(11, r.flagged ? 1 : 0);
      s.exec();
      s.reset();
    }
  });
}

void RecordingSink::finding(const Finding& f) {
  r_.write([f](SQLite::Database& db) {
    SQLite::Statement s(db,
                        "INSERT INTO findings(detected_ns, type, detector, rank, pid, probe, comm_id, blame_share, "
                        "cost_ns, summary) VALUES(?,?,?,?,?,?,?,?,?,?)");
    s.bind(1, static_cast<int64_t>(f.detected_ns));
    s.bind(2, f.type);
    s.bind(3, f.detector);
    s.bind(4, f.culprit.rank);
    s.bind(5, f.culprit.pid);
    s.bind(6, f.probe);
    bind_comm(s, 7, f.comm);
    s.bind(8, f.blame_share);
    s.bind(9, static_cast<int64_t>(f.cost_ns));
    s.bind(10, f.summary);
    s.exec();
  });
}

void RecordingSink::summary(const SessionSummary& summary) {
  std::vector<std::pair<const char*, uint64_t>> counters = {
      {"calls", summary.detector.calls},
      {"ringbuf_drops", summary.ringbuf_drops},
      {"decode_rejected", summary.decode_rejected},
      {"orphan_returns", summary.orphan_returns},
      {"untimed_calls", summary.untimed_calls},
      {"unknown_process", summary.detector.unknown_process},
      {"late_calls", summary.detector.late_calls},
      {"sequence_gaps", summary.detector.sequence_gaps},
      {"discarded_calls", summary.detector.discarded_calls},
      {"instances", summary.detector.instances},
      {"aligned_by_sequence", summary.detector.aligned_by_sequence},
      {"order_mismatches", summary.detector.order_mismatches},
      {"traced_ms", static_cast<uint64_t>(summary.traced_seconds * 1000)},
  };
  r_.write([counters](SQLite::Database& db) {
    SQLite::Statement s(db, "INSERT OR REPLACE INTO counters(key, value) VALUES(?,?)");
    for (const auto& [key, value] : counters) {
      s.bind(1, key);
      s.bind(2, static_cast<int64_t>(value));
      s.exec();
      s.reset();
    }
  });
}

void RecordingSink::verdict(const SessionVerdict& v) {
  std::vector<int> named;
  std::string summary;
  for (const Finding& f : v.stragglers) {
    named.push_back(f.culprit.rank);
    summary += (summary.empty() ? "" : "\n") + f.summary;
  }
  for (const Finding& f : v.hangs) summary += (summary.empty() ? "" : "\n") + f.summary;
  r_.write([judged = v.judged, reason = v.reason, named = join_numbers(named), summary](SQLite::Database& db) {
    SQLite::Statement s(db, "INSERT INTO verdict(judged, reason, stragglers, summary) VALUES(?,?,?,?)");
    s.bind(1, judged ? 1 : 0);
    s.bind(2, reason);
    s.bind(3, named);
    s.bind(4, summary);
    s.exec();
  });
}

}  // namespace slowburn
