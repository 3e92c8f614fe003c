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

/* Which job a traced process belongs to; processes absent from the map are
 * ignored (the probe mode attaches per process, this is the backstop). */
struct sb_agg_target {
	__u32 job_slot;
	__u32 _pad;
	__u64 since_ns; /* returns before this are not the start of a compute gap (a reused
			 * thread id, or the set of traced probes changed) */
};

struct sb_agg_call_state {
	__u64 entry_ns;
};

/* One collective instance in flight per (job, probe), and the previous one:
 * a fast rank may enter the next instance before a slow one has returned
 * from this one. */
struct sb_agg_instance_key {
	__u32 job_slot;
	__u32 probe_id;
};

struct sb_agg_instance {
	__u64 first_entry_ns;  /* the current instance's first arrival */
	__u64 last_entry_ns;   /* its latest arrival so far */
	__u64 second_entry_ns; /* the arrival before that */
	__u64 prev_first_entry_ns;
	__u64 closed;	 /* a rank returned: the next entry opens a new instance */
	__u32 last_tgid; /* who arrived last */
	__u32 arrivals;
};

struct sb_agg_key {
	__u32 tgid;
	__u32 probe_id;
};

/* Cumulative since the process was first seen, per CPU. */
struct sb_agg_stats {
	__u64 calls;
	__u64 wait_ns;		    /* sum of exit - entry */
	__u64 gaps;		    /* calls with a previous traced return in the thread */
	__u64 gap_ns;		    /* sum of entry - that return */
	__u64 arrivals;		    /* synchronizing calls placed in an instance */
	__u64 lateness_ns;	    /* sum of entry - the instance's first arrival */
	__u64 lasts;		    /* instances this process arrived last in */
	__u64 blame_ns;		    /* sum of (last - second-to-last arrival) when last */
	__u64 instances;	    /* instances closed by one of this process's returns */
	__u64 slots[SB_HIST_SLOTS]; /* log2 of the wait in microseconds */
};

struct sb_collagg_counters {
	__u64 orphan_returns; /* return without its entry (attached mid-call) */
	__u64 state_failures; /* entry state could not be stored */
	__u64 stats_full;     /* the statistics table was full: a call not counted */
	__u64 unplaced;	      /* a synchronizing return older than the last two instances */
};

#endif /* SLOWBURN_COLLAGG_H */
