#include "record/recorder.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <time.h>

#include <chrono>

#include "core/strings.h"
#include "record/schema.h"

namespace slowburn {

namespace {

constexpr auto kCommitPeriod = std::chrono::milliseconds(100);
constexpr size_t kCommitCalls = 8192;
// About 80 MiB of queued calls: a disk this far behind loses calls, counted,
// rather than the tracer's memory.
constexpr size_t kMaxQueuedCalls = 1 << 20;

int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// CLOCK_REALTIME at a CLOCK_MONOTONIC instant: the monotonic reading taken
// midway between two of the tightest bracketing pair of five tries.
std::pair<int64_t, int64_t> clock_anchor() {
  int64_t best_width = INT64_MAX, mono = 0, real = 0;
  for (int i = 0; i < 5; ++i) {
    int64_t before = clock_ns(CLOCK_MONOTONIC);
    int64_t r = clock_ns(CLOCK_REALTIME);
    int64_t after = clock_ns(CLOCK_MONOTONIC);
    if (after - before < best_width) {
      best_width = after - before;
      mono = before + (after - before) / 2;
      real = r;
    }
  }
  return {mono, real};
}

void write_communicator(SQLite::Database& db, const CommunicatorInfo& c) {
  SQLite::Statement s(
      db,
      "INSERT OR REPLACE INTO communicators(id, key, label, backend, source, size, members, local_pids, "
      "seq_from_creation) VALUES(?,?,?,?,?,?,?,?,?)");
  s.bind(1, static_cast<int64_t>(c.id));
  s.bind(2, c.key);
  s.bind(3, c.label);
  s.bind(4, std::string(comm_backend_name(c.backend)));
  s.bind(5, std::string(comm_source_name(c.source)));
  if (c.size) s.bind(6, *c.size);
  s.bind(7, join_numbers(c.members));
  if (c.local_pids) s.bind(8, join_numbers(std::vector<int>(c.local_pids->begin(), c.local_pids->end())));
  s.bind(9, c.seq_from_creation ? 1 : 0);
  s.exec();
}

}  // namespace

Result<std::unique_ptr<Recorder>> Recorder::create(const std::filesystem::path& path, const RecordingHeader& header) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec))
    return make_error("{} exists: a recording is never appended to; remove it or record to another path",
                      path.string());
  std::unique_ptr<Recorder> r(new Recorder);
  r->path_ = path;
  try {
    r->db_ = std::make_unique<SQLite::Database>(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    SQLite::Database& db = *r->db_;
    db.exec("PRAGMA journal_mode=WAL");
    db.exec("PRAGMA synchronous=NORMAL");  // WAL: a crash loses at most the last batch, never the file
    db.exec(fmt::format("PRAGMA application_id={}", recording::kApplicationId));
    db.exec(fmt::format("PRAGMA user_version={}", recording::kSchemaVersion));
    SQLite::Transaction t(db);
    db.exec(recording::kSchema);
    auto [mono, real] = clock_anchor();
    SQLite::Statement meta(db, "INSERT INTO meta(key, value) VALUES(?, ?)");
    auto put = [&](const char* key, const std::string& value) {
      meta.bind(1, key);
      meta.bind(2, value);
      meta.exec();
      meta.reset();
    };
    put("schema_version", std::to_string(recording::kSchemaVersion));
    put("host", header.host);
    put("clock_anchor_monotonic_ns", std::to_string(mono));
    put("clock_anchor_realtime_ns", std::to_string(real));
    t.commit();
  } catch (const std::exception& e) {
    std::filesystem::remove(path, ec);
    return make_error("cannot create the recording {}: {} (is its directory writable, and the disk not full?)",
                      path.string(), e.what());
  }
  r->writer_ = std::thread([raw = r.get()] { raw->writer_loop(); });
  return r;
}

Recorder::~Recorder() {
  if (writer_.joinable()) (void)finish();
}

void Recorder::call(const CallEvent& call, const CallComm& comm) {
  uint32_t comm_id = comm.comm ? comm.comm->id : 0;
  if (comm.comm) {
    auto& written = written_[comm_id];
    if (written != comm.comm.get()) {
      written = comm.comm.get();
      kept_.push_back(comm.comm);
      // A copy: the writer thread must not read what the registry owns.
      write([info = *comm.comm](SQLite::Database& db) { write_communicator(db, info); });
    }
  }
  std::lock_guard lock(mutex_);
  if (calls_.size() >= kMaxQueuedCalls) {
    ++dropped_;
    return;
  }
  calls_.push_back({call, comm_id, comm.comm_rank, comm.seq, comm.seq_absolute});
  if (calls_.size() >= kCommitCalls) wake_.notify_one();
}

size_t Recorder::queued_calls() {
  std::lock_guard lock(mutex_);
  return calls_.size();
}

void Recorder::in_flight(uint64_t read_ns, const std::vector<InFlightCall>& calls) {
  write([read_ns, calls](SQLite::Database& db) {
    db.exec("DELETE FROM in_flight");
    SQLite::Statement s(db,
                        "INSERT INTO in_flight(read_ns, pid, tid, probe_id, entry_ns, comm_id) VALUES(?,?,?,?,?,?)");
    for (const InFlightCall& c : calls) {
      s.bind(1, static_cast<int64_t>(read_ns));
      s.bind(2, static_cast<int64_t>(c.tgid));
      s.bind(3, static_cast<int64_t>(c.tid));
      s.bind(4, static_cast<int64_t>(c.probe_id));
      s.bind(5, static_cast<int64_t>(c.entry_ns));
      s.bind(6, static_cast<int64_t>(c.communicator ? c.communicator->id : 0));
      s.exec();
      s.reset();
    }
    // An empty reading still says when it was taken.
    SQLite::Statement when(db, "INSERT OR REPLACE INTO meta(key, value) VALUES('in_flight_read_ns', ?)");
    when.bind(1, std::to_string(read_ns));
    when.exec();
  });
}

void Recorder::process_views(uint64_t read_ns, const std::map<int32_t, ProcessView>& views) {
  write([read_ns, views](SQLite::Database& db) {
    db.exec("DELETE FROM process_states");
    SQLite::Statement s(db,
                        "INSERT INTO process_states(read_ns, pid, state, syscall, waits_on, wchan, threads, since_ns, "
                        "on_cpu_ns, off_cpu_ns, signal, exit_code, kernel_stack) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)");
    for (const auto& [pid, v] : views) {
      s.bind(1, static_cast<int64_t>(read_ns));
      s.bind(2, pid);
      s.bind(3, std::string(process_state_name(v.state)));
      s.bind(4, v.syscall);
      s.bind(5, v.waits_on);
      s.bind(6, v.wchan);
      s.bind(7, v.threads);
      s.bind(8, static_cast<int64_t>(v.since_ns));
      s.bind(9, static_cast<int64_t>(v.on_cpu_ns));
      s.bind(10, static_cast<int64_t>(v.off_cpu_ns));
      if (v.signal)
        s.bind(11, *v.signal);
      else
        s.bind(11);
      if (v.exit_code)
        s.bind(12, *v.exit_code);
      else
        s.bind(12);
      s.bind(13, v.kernel_stack);
      s.exec();
      s.reset();
    }
  });
}

void Recorder::process_end(int32_t pid, const ProcessEnd& end) {
  write([pid, end](SQLite::Database& db) {
    SQLite::Statement s(db,
                        "INSERT INTO process_ends(pid, ts_ns, signal, exit_code, core_dumped, oom_killed, sender_pid, "
                        "sender_comm) VALUES(?,?,?,?,?,?,?,?)");
    s.bind(1, pid);
    s.bind(2, static_cast<int64_t>(end.ts_ns));
    if (end.signal)
      s.bind(3, *end.signal);
    else
      s.bind(3);
    if (end.exit_code)
      s.bind(4, *end.exit_code);
    else
      s.bind(4);
    s.bind(5, end.core_dumped ? 1 : 0);
    s.bind(6, end.oom_killed ? 1 : 0);
    s.bind(7, static_cast<int64_t>(end.sender_pid));
    s.bind(8, end.sender_comm);
    s.exec();
  });
}

void Recorder::write(Rows rows) {
  std::lock_guard lock(mutex_);
  rows_.push_back(std::move(rows));
}

void Recorder::writer_loop() {
  std::vector<CallRow> calls;
  std::vector<Rows> rows;
  for (;;) {
    bool stop;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, kCommitPeriod, [&] { return stopping_ || calls_.size() >= kCommitCalls; });
      calls.swap(calls_);
      rows.swap(rows_);
      stop = stopping_;
    }
    commit(calls, rows);
    calls.clear();
    rows.clear();
    if (stop) return;
  }
}

void Recorder::commit(std::vector<CallRow>& calls, std::vector<Rows>& rows) {
  if (error_ || (calls.empty() && rows.empty())) return;
  try {
    SQLite::Transaction t(*db_);
    SQLite::Statement insert(
        *db_,
        "INSERT INTO calls(pid, tid, probe_id, entry_ns, exit_ns, comm_id, comm_rank, seq, "
        "seq_absolute, thread_seq, oncpu_ns, runq_ns, size_arg) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)");
    for (const CallRow& r : calls) {
      insert.bind(1, static_cast<int64_t>(r.call.pid));
      insert.bind(2, static_cast<int64_t>(r.call.tid));
      insert.bind(3, static_cast<int64_t>(r.call.probe_id));
      insert.bind(4, static_cast<int64_t>(r.call.entry_ns));
      insert.bind(5, static_cast<int64_t>(r.call.exit_ns));
      insert.bind(6, static_cast<int64_t>(r.comm_id));
      if (r.comm_rank)
        insert.bind(7, *r.comm_rank);
      else
        insert.bind(7);
      insert.bind(8, static_cast<int64_t>(r.seq));
      insert.bind(9, r.seq_absolute ? 1 : 0);
      insert.bind(10, static_cast<int64_t>(r.call.seq));
      auto bind_optional = [&](int column, const std::optional<uint64_t>& value) {
        if (value)
          insert.bind(column, static_cast<int64_t>(*value));
        else
          insert.bind(column);
      };
      bind_optional(11, r.call.oncpu_ns);
      bind_optional(12, r.call.runq_ns);
      insert.bind(13, static_cast<int64_t>(r.call.size_arg));
      insert.exec();
      insert.reset();
    }
    for (Rows& write_rows : rows) write_rows(*db_);
    t.commit();
  } catch (const std::exception& e) {
    error_ = e.what();
  }
}

Result<void> Recorder::finish() {
  if (!writer_.joinable()) return {};
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  writer_.join();
  try {
    SQLite::Statement counter(*db_, "INSERT OR REPLACE INTO counters(key, value) VALUES('record_dropped_calls', ?)");
    counter.bind(1, static_cast<int64_t>(dropped_.load()));
    counter.exec();
    // The session ended here, by its tracer: a recording without this row
    // was cut short (analyze says what that leaves out), as is one whose
    // writer failed on the way.
    if (!error_) {
      SQLite::Statement closed(*db_, "INSERT OR REPLACE INTO meta(key, value) VALUES('closed_monotonic_ns', ?)");
      closed.bind(1, std::to_string(clock_anchor().first));
      closed.exec();
    }
    db_->exec("PRAGMA wal_checkpoint(TRUNCATE)");
    db_->exec("PRAGMA journal_mode=DELETE");  // one file to copy off the node
  } catch (const std::exception& e) {
    if (!error_) error_ = e.what();
  }
  db_.reset();
  if (error_)
    return make_error("recording {} stopped early: {} (what was written before is readable)", path_.string(), *error_);
  return {};
}

}  // namespace slowburn
