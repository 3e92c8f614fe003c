/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Collective aggregation for the continuous probe mode: the same
 * entry/return pair as callpair.h, but nothing per call leaves the kernel.
 * Per (process, probe) the kernel keeps cumulative sums (calls, wait, compute
 * gap, arrival lateness, blame) and a log2 histogram; user space reads them
 * once per window and differences them. Cookies: cookie.h (SB_COOKIE_SYNC
 * marks the collectives that release all ranks together).
 */
#ifndef SLOWBURN_COLLAGG_H
#define SLOWBURN_COLLAGG_H

#include "callpair.h"
#include "instance_rules.h"

/* Which job a traced process belongs to; processes absent from the map are
 * ignored (the probe mode attaches per process, this is the backstop). */
struct sb_agg_target {
	__u32 job_slot;
	__u32 _pad;
	__u64 since_ns; /* returns before this are not the start of a compute gap (a reused
			 * thread id, or the set of traced probes changed) */
};

/* A communicator handle of a process (MPI_Comm, gloo::Context*): user space
 * names it and gives it a slot, the same on every member. */
struct sb_agg_comm_key {
	__u32 tgid;
	__u32 _pad;
	__u64 handle;
};

/* A handle the kernel saw with no slot yet: user space resolves it. */
struct sb_agg_new_comm {
	__u32 probe_id;
	__u32 _pad;
	__u64 first_ns;
};

struct sb_agg_call_state {
	__u64 entry_ns;
	__u64 since_release_ns; /* entry - the process's previous release, SB_AGG_UNKNOWN */
	__u32 comm_slot;
	__u32 tgid;	   /* its process: user space reads the calls in flight per rank (hangs) */
	__u64 oncpu_at_ns; /* the thread's CPU time at entry (cputimes.bpf.h) */
	__u64 runq_at_ns;  /* its run-queue wait at entry */
	__u32 cpu_flags;   /* SB_CALL_HAS_CPU, SB_CALL_HAS_RUNQ */
	__u32 _pad;
};

/* Per process: where its next compute gap and its own delay begin. */
struct sb_agg_process {
	__u64 last_exit_ns;    /* its latest traced return */
	__u64 last_release_ns; /* when its latest collective let it go: the first return, plus its
				* usual time to leave that collective (sb_leave_allowance) */
};

/* The instance record of a (job, probe, communicator): struct
 * sb_agg_instance and the rules that fill it are in instance_rules.h. */
struct sb_agg_instance_key {
	__u32 job_slot;
	__u32 probe_id;
	__u32 comm_slot;
	__u32 _pad;
};

struct sb_agg_key {
	__u32 tgid;
	__u32 probe_id;
	__u32 comm_slot; /* 0: no communicator told apart */
	__u32 _pad;
};

/* Cumulative since the process was first seen, per CPU. */
struct sb_agg_stats {
	__u64 calls;
	__u64 wait_ns;		/* sum of exit - entry */
	__u64 gaps;		/* calls with a previous traced return in the process */
	__u64 gap_ns;		/* sum of entry - that return */
	__u64 arrivals;		/* synchronizing calls placed in an instance */
	__u64 lateness_ns;	/* sum of entry - the instance's first arrival */
	__u64 lasts;		/* instances this process arrived last in */
	__u64 blame_ns;		/* when last: sum of the lead over the second-to-last its own delay explains */
	__u64 blame_leaving_ns; /* of that: what leaving its previous collective later than usual explains */
	__u64 instances;	/* instances closed by one of this process's returns */
	__u64 seq_events;	/* instances it arrived last in with the sequential test's event */
	/* Synchronizing calls with the thread's CPU times (cputimes.bpf.h):
	 * their count and wait, and the time on a CPU and waiting for one
	 * inside them (runq_calls: those whose run-queue wait was read). */
	__u64 cpu_calls;
	__u64 cpu_wait_ns;
	__u64 oncpu_ns;
	__u64 runq_calls;
	__u64 runq_ns;
	__u64 slots[SB_HIST_SLOTS]; /* log2 of the wait in microseconds */
};

struct sb_collagg_counters {
	__u64 orphan_returns; /* return without its entry (attached mid-call) */
	__u64 state_failures; /* entry state could not be stored */
	__u64 stats_full;     /* the statistics table was full: a call not counted */
	__u64 unplaced;	      /* a synchronizing return older than the last two instances */
	__u64 open_races;     /* an arrival that may be lost: it joined while another opened its instance */
};

#endif /* SLOWBURN_COLLAGG_H */
