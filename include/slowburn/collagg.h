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

/* A value not known (a since-release without a previous release). */
#define SB_AGG_UNKNOWN (~0ULL)

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
	__u32 _pad;
};

/* Per process: where its next compute gap and its own delay begin. */
struct sb_agg_process {
	__u64 last_exit_ns;    /* its latest traced return */
	__u64 last_release_ns; /* when its latest collective let it go: the first return, plus its
				* usual time to leave that collective (sb_leave_allowance) */
};

/*
 * The sequential test's event (user/stats/sequential.h; the per-call side is
 * StragglerDetector::sequential_test): an instance of 3 or more ranks whose
 * last arrival leads the second-to-last, by its own delay, by at least
 * seq_lead_share_pct of the step (release to release on that communicator),
 * a lead not owed mostly (SB_SEQ_MOSTLY_LEAVING_PCT, kMostlyLeaving) to
 * leaving its previous collective later than usual.
 */
#define SB_SEQ_MIN_RANKS	  3
#define SB_SEQ_MOSTLY_LEAVING_PCT 50

/*
 * A rank's time to leave a collective after it released its members (its
 * return - the first return) is mostly not its own doing: a rank a few hops
 * from the last arrival in the algorithm leaves later every time, and on a
 * busy machine the ranks waiting inside are descheduled and leave a time
 * slice or two late. Arriving late at the next collective because of that is
 * not a delay of its own; leaving later than it usually does (descheduled
 * for long, its CPU quota ran out in bursts) is. "Usually" is a running 80th
 * percentile per (process, probe, communicator): a frugal quantile estimate
 * that steps up by 4/5 and down by 1/5 of a step of 1/16 of itself (at least
 * 32 us), so it learns a structural delay in ~100 instances and a burst in
 * fewer than one instance of five does not move it. Returns the part of
 * delay_ns within the usual time and updates *usual_ns. The one rule of both
 * sides: collagg.bpf.c and user/detect/straggler.cpp.
 */
#define SB_LEAVE_MIN_STEP_NS 32768ULL

static inline __u64 sb_leave_allowance(__u64 *usual_ns, __u64 delay_ns)
{
	__u64 usual = *usual_ns;
	__u64 allowance = delay_ns < usual ? delay_ns : usual;
	__u64 step = usual >> 4;

	if (step < SB_LEAVE_MIN_STEP_NS)
		step = SB_LEAVE_MIN_STEP_NS;
	if (delay_ns > usual)
		*usual_ns = usual + step - step / 5;
	else if (delay_ns < usual)
		*usual_ns = usual > step / 5 ? usual - step / 5 : 0;
	return allowance;
}

/* One collective instance in flight per (job, probe, communicator), and the
 * previous one: a fast rank may enter the next instance before a slow one
 * has returned from this one. */
struct sb_agg_instance_key {
	__u32 job_slot;
	__u32 probe_id;
	__u32 comm_slot;
	__u32 _pad;
};

struct sb_agg_instance {
	__u64 first_entry_ns;  /* the current instance's first arrival */
	__u64 last_entry_ns;   /* its latest arrival so far */
	__u64 second_entry_ns; /* the arrival before that */
	__u64 last_since_ns;   /* the latest arrival's time since its previous release */
	__u64 second_since_ns; /* the same for the arrival before it */
	__u64 closed_ns;       /* its first return: it released its members; 0 while open */
	__u64 prev_first_entry_ns;
	__u64 prev_closed_ns;
	__u64 last_excess_ns;	/* the latest arrival's lateness leaving its previous collective */
	__u64 second_excess_ns; /* the same for the arrival before it */
	__u32 last_tgid;	/* who arrived last */
	__u32 arrivals;
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
	__u64 wait_ns;		    /* sum of exit - entry */
	__u64 gaps;		    /* calls with a previous traced return in the process */
	__u64 gap_ns;		    /* sum of entry - that return */
	__u64 arrivals;		    /* synchronizing calls placed in an instance */
	__u64 lateness_ns;	    /* sum of entry - the instance's first arrival */
	__u64 lasts;		    /* instances this process arrived last in */
	__u64 blame_ns;		    /* when last: sum of the lead over the second-to-last its own delay explains */
	__u64 instances;	    /* instances closed by one of this process's returns */
	__u64 seq_events;	    /* instances it arrived last in with the sequential test's event */
	__u64 slots[SB_HIST_SLOTS]; /* log2 of the wait in microseconds */
};

struct sb_collagg_counters {
	__u64 orphan_returns; /* return without its entry (attached mid-call) */
	__u64 state_failures; /* entry state could not be stored */
	__u64 stats_full;     /* the statistics table was full: a call not counted */
	__u64 unplaced;	      /* a synchronizing return older than the last two instances */
};

#endif /* SLOWBURN_COLLAGG_H */
