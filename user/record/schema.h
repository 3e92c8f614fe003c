// The recording's file format: an SQLite database any user can open
// (`sqlite3 node-a.sbr 'select ...'`), versioned by PRAGMA user_version and
// marked as slowburn's by PRAGMA application_id. docs/across-nodes.md "Recordings"
// documents every table; a change of meaning bumps kSchemaVersion, and the
// reader refuses versions it does not know.
//
// Times are the node's CLOCK_MONOTONIC in ns (the kernel's timestamps, as
// traced); meta's clock_anchor_* pair one CLOCK_MONOTONIC instant with the
// node's CLOCK_REALTIME, so wall time = t - clock_anchor_monotonic_ns +
// clock_anchor_realtime_ns. `slowburn analyze` never trusts that anchor
// across nodes: it estimates each node's offset from the collectives.
#pragma once

#include <cstdint>

namespace slowburn::recording {

// 2: calls.thread_seq (the kernel's per-thread number; v1 recorded only the
// communicator's in seq, and is still read, without sequence-gap counting).
// 3: device_events.cause_rank and .pid (how strong a cause the event is, the
// process a host cause is about: what analyze needs to name likely causes;
// v2 events are judged by their type alone).
// 4: process_states (the kernel's view of each rank at the last reading of
// the calls in flight: what analyze judges a hang's culprit by; v3 hangs
// are judged by position alone) and process_ends (how each rank ended, where
// the kernel said: analyze's failures).
// 5: calls.oncpu_ns, runq_ns and size_arg (the calling thread's CPU time and
// run-queue wait during the call, the message size: analyze's straggler
// inside the collective; v4 calls have none, and nobody is named inside).
// 6: meta's closed_monotonic_ns, written when the tracer ends the session
// (Recorder::finish): a recording without it was cut short (its tracer
// killed, its node lost), which analyze says; v5 recordings are taken as
// closed.
inline constexpr int kSchemaVersion = 6;
inline constexpr int32_t kApplicationId = 0x53425231;  // "SBR1"

inline constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ranks(pid INTEGER PRIMARY KEY, rank INTEGER NOT NULL, local_rank INTEGER, world_size INTEGER,
                   job TEXT NOT NULL, launcher TEXT NOT NULL, host TEXT NOT NULL, command TEXT NOT NULL);
CREATE TABLE probes(id INTEGER PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL);
CREATE TABLE probe_states(probe TEXT NOT NULL, pid INTEGER NOT NULL, state TEXT NOT NULL, library TEXT NOT NULL,
                          detail TEXT NOT NULL);
CREATE TABLE communicators(id INTEGER PRIMARY KEY, key TEXT NOT NULL, label TEXT NOT NULL, backend TEXT NOT NULL,
                           source TEXT NOT NULL, size INTEGER, members TEXT NOT NULL, local_pids TEXT,
                           seq_from_creation INTEGER NOT NULL);
CREATE TABLE calls(pid INTEGER NOT NULL, tid INTEGER NOT NULL, probe_id INTEGER NOT NULL,
                   entry_ns INTEGER NOT NULL, exit_ns INTEGER NOT NULL, comm_id INTEGER NOT NULL,
                   comm_rank INTEGER, seq INTEGER NOT NULL, seq_absolute INTEGER NOT NULL, thread_seq INTEGER,
                   oncpu_ns INTEGER, runq_ns INTEGER, size_arg INTEGER NOT NULL DEFAULT 0);
CREATE TABLE in_flight(read_ns INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL,
                       probe_id INTEGER NOT NULL, entry_ns INTEGER NOT NULL, comm_id INTEGER NOT NULL);
CREATE TABLE process_states(read_ns INTEGER NOT NULL, pid INTEGER NOT NULL, state TEXT NOT NULL,
                            syscall TEXT NOT NULL, waits_on TEXT NOT NULL, wchan TEXT NOT NULL,
                            threads INTEGER NOT NULL, since_ns INTEGER NOT NULL, on_cpu_ns INTEGER NOT NULL,
                            off_cpu_ns INTEGER NOT NULL, signal INTEGER, exit_code INTEGER,
                            kernel_stack TEXT NOT NULL);
CREATE TABLE process_ends(pid INTEGER NOT NULL, ts_ns INTEGER NOT NULL, signal INTEGER, exit_code INTEGER,
                          core_dumped INTEGER NOT NULL, oom_killed INTEGER NOT NULL, sender_pid INTEGER NOT NULL,
                          sender_comm TEXT NOT NULL);
CREATE TABLE windows(start_ns INTEGER NOT NULL, probe TEXT NOT NULL, comm_id INTEGER, pid INTEGER NOT NULL,
                     rank INTEGER NOT NULL, calls INTEGER NOT NULL, lateness_median_ns REAL, gap_median_ns REAL,
                     blame_ns REAL NOT NULL, last_fraction REAL NOT NULL, flagged INTEGER NOT NULL);
CREATE TABLE findings(detected_ns INTEGER NOT NULL, type TEXT NOT NULL, detector TEXT NOT NULL,
                      rank INTEGER NOT NULL, pid INTEGER NOT NULL, probe TEXT NOT NULL, comm_id INTEGER,
                      blame_share REAL NOT NULL, cost_ns INTEGER NOT NULL, summary TEXT NOT NULL);
CREATE TABLE device_events(ts_ns INTEGER NOT NULL, type TEXT NOT NULL, device TEXT NOT NULL, ranks TEXT NOT NULL,
                           summary TEXT NOT NULL, cause_rank INTEGER NOT NULL, pid INTEGER);
CREATE TABLE counters(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE verdict(judged INTEGER NOT NULL, reason TEXT NOT NULL, stragglers TEXT NOT NULL, summary TEXT NOT NULL);
)sql";

}  // namespace slowburn::recording
