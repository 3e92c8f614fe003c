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
                   comm_rank INTEGER, seq INTEGER NOT NULL, seq_absolute INTEGER NOT NULL, thread_seq INTEGER);
CREATE TABLE in_flight(read_ns INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL,
                       probe_id INTEGER NOT NULL, entry_ns INTEGER NOT NULL, comm_id INTEGER NOT NULL);
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
INSERT INTO meta VALUES('host','node-a'),('clock_anchor_monotonic_ns','123456789'),('clock_anchor_realtime_ns','1733140000000000000'),('in_flight_read_ns','223456789');
INSERT INTO ranks VALUES(102,2,0,4,'42','openmpi','node-a','./rank'),(103,3,NULL,NULL,'42','openmpi','node-a','./rank');
INSERT INTO probes VALUES(1,'mpi.allreduce','uprobe');
INSERT INTO probe_states VALUES('mpi.allreduce',102,'attached','/usr/lib/libmpi.so.40',''),('nvidia.xid',0,'off','','no driver');
INSERT INTO communicators VALUES(3,'mpi:42:cid=3:ranks=2,3','cid 3','mpi','memory',2,'2,3','102,103',0);
INSERT INTO calls VALUES(102,102,1,1000,1500,3,0,1,0,2),(103,103,1,1100,1500,3,1,1,0,2);
INSERT INTO in_flight VALUES(223456789,102,102,1,2000,3);
INSERT INTO device_events VALUES(5000,'pcie.aer','0000:3b:00.0','2,3','RxErr x2',1,NULL);
INSERT INTO counters VALUES('lost_events',0);
