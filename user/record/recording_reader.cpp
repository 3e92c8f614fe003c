#include "record/recording_reader.h"

#include <SQLiteCpp/SQLiteCpp.h>

#include <cerrno>

#include "core/strings.h"
#include "probes/catalog.h"
#include "record/schema.h"

namespace slowburn {

namespace {

CommBackend backend_named(const std::string& name) {
  for (CommBackend b : {CommBackend::mpi, CommBackend::nccl, CommBackend::gloo})
    if (comm_backend_name(b) == name) return b;
  return CommBackend::none;
}

CommSource source_named(const std::string& name) {
  for (CommSource s : {CommSource::memory, CommSource::creation, CommSource::inferred})
    if (comm_source_name(s) == name) return s;
  return CommSource::job;
}

std::vector<int> ints(const std::string& text) {
  std::vector<int> out;
  for (const std::string& part : split(text, ','))
    if (!part.empty()) out.push_back(std::stoi(part));
  return out;
}

Error damaged(const std::filesystem::path& path, const std::exception& e) {
  // Out of descriptors is no damage: a merge holds every node's recording open.
  if (errno == EMFILE || errno == ENFILE)
    return make_error(
        "{}: cannot open it: too many open files (a merge keeps each node's recording open: raise the limit, "
        "ulimit -n, above the number of recordings plus 64)",
        path.string());
  return make_error("{}: cannot read it as a slowburn recording: {}", path.string(), e.what());
}

// Opens and checks it is a recording this slowburn reads.
Result<std::unique_ptr<SQLite::Database>> open_checked(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return make_error("{}: no such recording (give files written by 'slowburn trace --record', or their directory)",
                      path.string());
  try {
    auto db = std::make_unique<SQLite::Database>(path.string(), SQLite::OPEN_READONLY);
    auto app = db->execAndGet("PRAGMA application_id").getInt();
    if (app != recording::kApplicationId)
      return make_error("{}: not a slowburn recording (SQLite application id {:#x}, expected {:#x})", path.string(),
                        static_cast<uint32_t>(app), static_cast<uint32_t>(recording::kApplicationId));
    int version = db->execAndGet("PRAGMA user_version").getInt();
    if (version > recording::kSchemaVersion)
      return make_error(
          "{}: recorded by a newer slowburn (schema {}; this one reads up to {}): analyze it with that one",
          path.string(), version, recording::kSchemaVersion);
    // slowburn writes tables only. A view is a query the file brings along,
    // and a recursive one never ends: a crafted file would hang analyze.
    if (db->execAndGet("SELECT count(*) FROM sqlite_master WHERE type = 'view'").getInt() > 0)
      return make_error("{}: not a slowburn recording (it defines views; a recording holds tables only)",
                        path.string());
    return db;
  } catch (const std::exception& e) {
    return damaged(path, e);
  }
}

}  // namespace

Result<RecordingInfo> read_recording_info(const std::filesystem::path& path) {
  auto opened = open_checked(path);
  if (!opened) return opened.error();
  SQLite::Database& db = **opened;
  RecordingInfo info;
  info.path = path;
  try {
    SQLite::Statement meta(db, "SELECT key, value FROM meta");
    while (meta.executeStep()) {
      std::string key = meta.getColumn(0).getString();
      std::string value = meta.getColumn(1).getString();
      if (key == "host") info.host = value;
      if (key == "clock_anchor_monotonic_ns") info.anchor_monotonic_ns = std::stoll(value);
      if (key == "clock_anchor_realtime_ns") info.anchor_realtime_ns = std::stoll(value);
      if (key == "in_flight_read_ns") info.in_flight_read_ns = std::stoull(value);
      if (key == "closed_monotonic_ns") info.closed = true;
    }
    // Before schema 6 nothing said so: such a recording is taken as closed.
    if (db.execAndGet("PRAGMA user_version").getInt() < 6) info.closed = true;
    if (info.anchor_monotonic_ns == 0) return make_error("{}: its clock anchor is missing", path.string());

    SQLite::Statement ranks(db,
                            "SELECT pid, rank, local_rank, world_size, job, launcher, host, command FROM ranks "
                            "ORDER BY rank, pid");
    while (ranks.executeStep()) {
      RankIdentity id;
      id.pid = ranks.getColumn(0).getInt();
      id.rank = ranks.getColumn(1).getInt();
      if (!ranks.getColumn(2).isNull()) id.local_rank = ranks.getColumn(2).getInt();
      if (!ranks.getColumn(3).isNull()) id.world_size = ranks.getColumn(3).getInt();
      id.job = ranks.getColumn(4).getString();
      id.launcher = ranks.getColumn(5).getString();
      id.host = info.host;  // the node as the recording names it
      id.command = ranks.getColumn(7).getString();
      info.ranks.push_back(std::move(id));
    }

    SQLite::Statement probes(db, "SELECT id, name FROM probes");
    while (probes.executeStep())
      info.probes[static_cast<uint32_t>(probes.getColumn(0).getInt64())] = probes.getColumn(1).getString();

    SQLite::Statement comms(db,
                            "SELECT id, key, label, backend, source, size, members, local_pids, seq_from_creation "
                            "FROM communicators");
    while (comms.executeStep()) {
      RecordedCommunicator c;
      c.id = static_cast<uint32_t>(comms.getColumn(0).getInt64());
      c.key = comms.getColumn(1).getString();
      c.label = comms.getColumn(2).getString();
      c.backend = backend_named(comms.getColumn(3).getString());
      c.source = source_named(comms.getColumn(4).getString());
      if (!comms.getColumn(5).isNull()) c.size = comms.getColumn(5).getInt();
      c.members = ints(comms.getColumn(6).getString());
      if (!comms.getColumn(7).isNull()) {
        std::vector<int32_t> pids;
        for (int p : ints(comms.getColumn(7).getString())) pids.push_back(p);
        c.local_pids = std::move(pids);
      }
      c.seq_from_creation = comms.getColumn(8).getInt() != 0;
      info.communicators[c.id] = std::move(c);
    }

    SQLite::Statement sources(db, "SELECT probe, state, library, detail FROM probe_states WHERE pid = 0");
    while (sources.executeStep()) {
      ProbeStatus s;
      s.probe = sources.getColumn(0).getString();
      s.state = probe_state_named(sources.getColumn(1).getString());
      s.library = sources.getColumn(2).getString();
      s.detail = sources.getColumn(3).getString();
      info.sources.push_back(std::move(s));
    }
    SQLite::Statement attached(db, "SELECT DISTINCT probe, pid FROM probe_states WHERE state = 'attached' AND pid > 0");
    while (attached.executeStep())
      info.attached.emplace_back(attached.getColumn(0).getString(), attached.getColumn(1).getInt());

    info.calls = static_cast<uint64_t>(db.execAndGet("SELECT count(*) FROM calls").getInt64());
    if (info.calls) {
      auto first = db.execAndGet("SELECT exit_ns FROM calls ORDER BY rowid LIMIT 1").getInt64();
      auto last = db.execAndGet("SELECT exit_ns FROM calls ORDER BY rowid DESC LIMIT 1").getInt64();
      info.exit_span_ns = {static_cast<uint64_t>(std::min(first, last)), static_cast<uint64_t>(std::max(first, last))};
    }
    SQLite::Statement counters(db, "SELECT key, value FROM counters");
    while (counters.executeStep())
      info.counters[counters.getColumn(0).getString()] = static_cast<uint64_t>(counters.getColumn(1).getInt64());
    bool ranked = db.execAndGet("PRAGMA user_version").getInt() >= 3;
    SQLite::Statement events(db, ranked
                                     ? "SELECT ts_ns, type, device, ranks, summary, cause_rank, pid FROM device_events"
                                     : "SELECT ts_ns, type, device, ranks, summary FROM device_events");
    while (events.executeStep()) {
      DeviceEvent e;
      e.ts_ns = static_cast<uint64_t>(events.getColumn(0).getInt64());
      e.type = events.getColumn(1).getString();
      e.device = events.getColumn(2).getString();
      e.ranks = ints(events.getColumn(3).getString());
      e.summary = events.getColumn(4).getString();
      // The process stays in the fields: pids are renumbered when nodes merge,
      // so a recorded cause is joined to its culprit by rank.
      if (ranked) {
        e.cause_rank = events.getColumn(5).getInt();
        if (!events.getColumn(6).isNull()) e.fields["pid"] = events.getColumn(6).getInt();
      }
      info.device_events.push_back(std::move(e));
    }
    SQLite::Statement flight(db, "SELECT pid, tid, probe_id, entry_ns, comm_id FROM in_flight");
    while (flight.executeStep())
      info.in_flight.push_back({flight.getColumn(0).getInt(), static_cast<uint32_t>(flight.getColumn(1).getInt64()),
                                static_cast<uint32_t>(flight.getColumn(2).getInt64()),
                                static_cast<uint64_t>(flight.getColumn(3).getInt64()),
                                static_cast<uint32_t>(flight.getColumn(4).getInt64())});
    if (db.execAndGet("PRAGMA user_version").getInt() >= 4) {
      SQLite::Statement states(db,
                               "SELECT pid, state, syscall, waits_on, wchan, threads, since_ns, on_cpu_ns, off_cpu_ns, "
                               "signal, exit_code, kernel_stack FROM process_states");
      while (states.executeStep()) {
        ProcessView v;
        v.state = process_state_named(states.getColumn(1).getString());
        v.syscall = states.getColumn(2).getString();
        v.waits_on = states.getColumn(3).getString();
        v.wchan = states.getColumn(4).getString();
        v.threads = states.getColumn(5).getInt();
        v.since_ns = static_cast<uint64_t>(states.getColumn(6).getInt64());
        v.on_cpu_ns = static_cast<uint64_t>(states.getColumn(7).getInt64());
        v.off_cpu_ns = static_cast<uint64_t>(states.getColumn(8).getInt64());
        if (!states.getColumn(9).isNull()) v.signal = states.getColumn(9).getInt();
        if (!states.getColumn(10).isNull()) v.exit_code = states.getColumn(10).getInt();
        v.kernel_stack = states.getColumn(11).getString();
        info.process_states[states.getColumn(0).getInt()] = std::move(v);
      }
      SQLite::Statement ends(db,
                             "SELECT pid, ts_ns, signal, exit_code, core_dumped, oom_killed, sender_pid, sender_comm "
                             "FROM process_ends");
      while (ends.executeStep()) {
        ProcessEnd e;
        e.ts_ns = static_cast<uint64_t>(ends.getColumn(1).getInt64());
        if (!ends.getColumn(2).isNull()) e.signal = ends.getColumn(2).getInt();
        if (!ends.getColumn(3).isNull()) e.exit_code = ends.getColumn(3).getInt();
        e.core_dumped = ends.getColumn(4).getInt() != 0;
        e.oom_killed = ends.getColumn(5).getInt() != 0;
        e.sender_pid = static_cast<uint32_t>(ends.getColumn(6).getInt64());
        e.sender_comm = ends.getColumn(7).getString();
        info.process_ends[ends.getColumn(0).getInt()] = std::move(e);
      }
    }
  } catch (const std::exception& e) {
    return damaged(path, e);
  }
  return info;
}

struct CallCursor::State {
  std::filesystem::path path;
  std::unique_ptr<SQLite::Database> db;
  std::unique_ptr<SQLite::Statement> select;
};

CallCursor::CallCursor(std::unique_ptr<State> state) : state_(std::move(state)) {}
CallCursor::CallCursor(CallCursor&&) noexcept = default;
CallCursor& CallCursor::operator=(CallCursor&&) noexcept = default;
CallCursor::~CallCursor() = default;

Result<CallCursor> CallCursor::open(const std::filesystem::path& path) {
  auto opened = open_checked(path);
  if (!opened) return opened.error();
  auto state = std::make_unique<State>();
  state->path = path;
  state->db = std::move(*opened);
  try {
    int version = state->db->execAndGet("PRAGMA user_version").getInt();
    bool numbered = version >= 2;
    bool cpu_times = version >= 5;
    // One pass in rowid order needs no page cache to speak of: a small one
    // keeps analyze's memory from growing by SQLite's default 2 MiB per node.
    state->db->exec("PRAGMA cache_size = -128");
    state->select = std::make_unique<SQLite::Statement>(
        *state->db,
        "SELECT pid, tid, probe_id, entry_ns, exit_ns, comm_id, "
        "comm_rank, seq, seq_absolute, " +
            std::string(numbered ? "thread_seq" : "NULL") +
            (cpu_times ? ", oncpu_ns, runq_ns, size_arg" : ", NULL, NULL, 0") + " FROM calls ORDER BY rowid");
  } catch (const std::exception& e) {
    return damaged(path, e);
  }
  return CallCursor(std::move(state));
}

Result<bool> CallCursor::next(RecordedCall& call) {
  try {
    SQLite::Statement& s = *state_->select;
    if (!s.executeStep()) return false;
    call.pid = s.getColumn(0).getInt();
    call.tid = static_cast<uint32_t>(s.getColumn(1).getInt64());
    call.probe_id = static_cast<uint32_t>(s.getColumn(2).getInt64());
    call.entry_ns = static_cast<uint64_t>(s.getColumn(3).getInt64());
    call.exit_ns = static_cast<uint64_t>(s.getColumn(4).getInt64());
    call.comm_id = static_cast<uint32_t>(s.getColumn(5).getInt64());
    call.comm_rank = s.getColumn(6).isNull() ? std::nullopt : std::optional<int>(s.getColumn(6).getInt());
    call.seq = static_cast<uint64_t>(s.getColumn(7).getInt64());
    call.seq_absolute = s.getColumn(8).getInt() != 0;
    call.thread_seq =
        s.getColumn(9).isNull() ? std::nullopt : std::optional(static_cast<uint64_t>(s.getColumn(9).getInt64()));
    auto optional_u64 = [&](int column) {
      return s.getColumn(column).isNull() ? std::nullopt
                                          : std::optional(static_cast<uint64_t>(s.getColumn(column).getInt64()));
    };
    call.oncpu_ns = optional_u64(10);
    call.runq_ns = optional_u64(11);
    call.size_arg = static_cast<uint64_t>(s.getColumn(12).getInt64());
    return true;
  } catch (const std::exception& e) {
    return damaged(state_->path, e);
  }
}

}  // namespace slowburn
