PRAGMA user_version=1;
CREATE TABLE meta(key, value);
INSERT INTO meta VALUES("clock_anchor_monotonic_ns", "99999999999999999999");
CREATE TABLE calls(pid, tid, probe_id, entry_ns, exit_ns, comm_id, comm_rank, seq, seq_absolute);
INSERT INTO calls VALUES("x", NULL, -1, 1e300, X'00', 0, "r", 0, 0);
