/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The rules the kernel (bpf/collagg.bpf.c, the probe mode's aggregation) and
 * user space (user/detect/, a trace's and analyze's detector) apply alike,
 * written once: static inline, compiled into both. tests/unit/
 * instance_rules_test.cpp holds the kernel's streaming placement to user
 * space's CollectiveAligner without root; tests/bpf/conformance_test.cpp
 * checks both sides end to end on real programs.
 *
 *   - Instance placement (exit-time side): a synchronizing collective
 *     releases all its ranks together, so the first return after a run of
 *     entries ends the instance (its release); the next entry opens the next
 *     one. A rank returning late from instance k (its entry is older than
 *     k+1's first arrival) is placed in k by the previous instance's first
 *     arrival.
 *   - Self-caused lead (blame): the last arrival's lead over the
 *     second-to-last, as far as its own delay since its previous collective
 *     released it explains it.
 *   - The sequential test's event: an instance of SB_SEQ_MIN_RANKS or more
 *     ranks whose last arrival leads by its own delay at least a share of
 *     the step (release to release), a lead not owed mostly to leaving its
 *     previous collective later than usual.
 *   - The usual time to leave a collective (sb_leave_allowance).
 *
 * Only fixed-width arithmetic and __sync builtins: the same code runs under
 * the BPF verifier and in a C++ unit test.
 */
#ifndef SLOWBURN_INSTANCE_RULES_H
#define SLOWBURN_INSTANCE_RULES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#ifdef __cplusplus
#define SB_INLINE static inline
#else
#define SB_INLINE static __always_inline
#endif

/* A value not known (a time since release without a previous release). */
#define SB_AGG_UNKNOWN (~0ULL)

#define SB_SEQ_MIN_RANKS	  3
#define SB_SEQ_MOSTLY_LEAVING_PCT 50
/* Shares are passed in basis points (1/10000): 0.10 of the step is 1000. */
#define SB_BASIS_POINTS 10000ULL

#ifdef __cplusplus
/* A share of the step (DetectorConfig::sequential_lead_share: 0.10) in
 * basis points, as both sides compare it. */
inline __u64 sb_share_bp(double share)
{
	if (!(share > 0))
		return 0;
	return share >= 1 ? SB_BASIS_POINTS : (__u64)(share * (double)SB_BASIS_POINTS + 0.5);
}
#endif

/* One collective instance in flight per (job, probe, communicator), and the
 * previous one: a fast rank may enter the next instance before a slow one
 * has returned from this one. */
struct sb_agg_instance {
	__u64 first_entry_ns;  /* the current instance's first arrival */
	__u64 last_entry_ns;   /* its latest arrival so far */
	__u64 second_entry_ns; /* the arrival before that */
	__u64 last_since_ns;   /* the latest arrival's time since its previous release */
	__u64 second_since_ns; /* the same for the arrival before it */
	__u64 closed_ns;       /* its first return: it released its members; SB_OPEN | open's generation while open */
	__u64 prev_first_entry_ns;
	__u64 prev_closed_ns;
	__u64 last_excess_ns;	/* the latest arrival's lateness leaving its previous collective */
	__u64 second_excess_ns; /* the same for the arrival before it */
	__u32 last_tgid;	/* who arrived last */
	__u32 arrivals;
	__u32 opening; /* 1 while an arrival opens the next instance (sb_instance_arrive) */
	__u32 opens;   /* instances opened: the generation an open instance's closed_ns carries */
};

/* closed_ns of an open instance: this bit and the open's generation, so a
 * return that looked at one open instance cannot close the next. */
#define SB_OPEN (1ULL << 63)

/* A rank's arrival, seen from its previous collective: its time since that
 * collective let it go (SB_AGG_UNKNOWN when there was none before the
 * entry), and how much later than its release it returned from it. */
SB_INLINE void sb_arrival_since(__u64 last_exit_ns, __u64 last_release_ns, __u64 entry_ns, __u64 *since_ns,
				__u64 *excess_ns)
{
	*since_ns = SB_AGG_UNKNOWN;
	*excess_ns = 0;
	if (!last_release_ns || last_release_ns > entry_ns)
		return;
	*since_ns = entry_ns - last_release_ns;
	if (last_exit_ns > last_release_ns && last_exit_ns <= entry_ns)
		*excess_ns = last_exit_ns - last_release_ns;
}

/*
 * An arrival (an entry): opens the next instance after a release, else
 * joins the open one. since_ns: its time since its previous collective
 * released it (SB_AGG_UNKNOWN); excess_ns: how much later than its release
 * it left that collective.
 *
 * The record is shared across CPUs without a lock (tracing programs cannot
 * take bpf_spin_lock), and the ranks a release lets go arrive at the next
 * collective together: two of them on two CPUs may both see the instance
 * closed. Both opening it lost the instance before (the second copied the
 * first's fresh instance into prev_*), and a return still on its way from
 * it was then unplaced. So one arrival wins the right to open (a
 * compare-and-swap on `opening`): it writes the new instance with itself
 * as its only arrival, then publishes it (closed_ns to SB_OPEN and the
 * open's generation, last, with a full barrier), then lets go of `opening`; from then on the record is an
 * open instance with one arrival. The others wait for that, at most
 * SB_OPEN_WAIT_NS, and join. Returns 1 when the wait ran out (the opener
 * interrupted, or preempted where uprobe programs are: Linux 6.0+): it
 * joins regardless, its arrival may be lost to the open, and the caller
 * counts it. Two ranks entering at the same instant may still swap last
 * and second-to-last, which moves nanoseconds of blame.
 */
#define SB_OPEN_WAIT_NS	   10000ULL
#define SB_OPEN_WAIT_LOOPS 256

#ifdef __cplusplus
#include <time.h>
SB_INLINE __u64 sb_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (__u64)t.tv_sec * 1000000000ULL + (__u64)t.tv_nsec;
}
#else
#define sb_now_ns() bpf_ktime_get_ns()
#endif

/* Read with a fully ordered atomic: after it, the fields an open wrote
 * before publishing are visible on any CPU (arm64 reorders plain loads). */
SB_INLINE __u64 sb_closed_now(struct sb_agg_instance *inst)
{
	return __sync_fetch_and_add(&inst->closed_ns, 0);
}

SB_INLINE int sb_instance_opens(struct sb_agg_instance *inst)
{
	__u64 closed = sb_closed_now(inst);

	return (closed && !(closed & SB_OPEN)) || !inst->arrivals;
}

SB_INLINE void sb_instance_open(struct sb_agg_instance *inst, __u64 entry_ns, __u64 since_ns, __u64 excess_ns,
				__u32 tgid)
{
	__u64 closed = inst->closed_ns, open = SB_OPEN | (__u64)(inst->opens + 1);

	inst->opens += 1;
	inst->prev_first_entry_ns = inst->first_entry_ns;
	inst->prev_closed_ns = closed & SB_OPEN ? 0 : closed;
	inst->first_entry_ns = entry_ns;
	inst->last_entry_ns = entry_ns;
	inst->last_since_ns = since_ns;
	inst->last_excess_ns = excess_ns;
	inst->last_tgid = tgid;
	inst->second_entry_ns = 0;
	inst->second_since_ns = SB_AGG_UNKNOWN;
	inst->second_excess_ns = 0;
	inst->arrivals = 1;
	/* Published with a compare-and-swap: a full barrier to the compiler and
	 * the CPU (an exchange is only an acquire to the compiler: the stores
	 * above could sink below it, and a joiner then saw the instance open
	 * with the previous one's arrivals). It cannot fail: returns change
	 * closed_ns only from an open value, and an instance is opened only
	 * when it holds none. */
	__sync_val_compare_and_swap(&inst->closed_ns, closed, open);
}

/* An arrival joins by its entry time, not by when its program got here: a
 * rank that entered first may reach this code after a rank that entered a
 * microsecond later opened the instance (the program's own work between
 * reading the clock and here). Its entry then becomes the first arrival, or
 * the second-to-last, or neither: a first arrival left later than an entry
 * made its return look older than its instance (unplaced, or placed in the
 * previous one). The first arrival is lowered with a compare-and-swap: two
 * such joins at once keep the earlier. */
SB_INLINE void sb_instance_join(struct sb_agg_instance *inst, __u64 entry_ns, __u64 since_ns, __u64 excess_ns,
				__u32 tgid)
{
	__u64 first = inst->first_entry_ns, seen;
	int i;

	if (!inst->arrivals || entry_ns >= inst->last_entry_ns) {
		if (inst->arrivals) {
			inst->second_entry_ns = inst->last_entry_ns;
			inst->second_since_ns = inst->last_since_ns;
			inst->second_excess_ns = inst->last_excess_ns;
		}
		inst->last_entry_ns = entry_ns;
		inst->last_since_ns = since_ns;
		inst->last_excess_ns = excess_ns;
		inst->last_tgid = tgid;
	} else if (entry_ns >= inst->second_entry_ns) {
		inst->second_entry_ns = entry_ns;
		inst->second_since_ns = since_ns;
		inst->second_excess_ns = excess_ns;
	}
	for (i = 0; i < 4 && entry_ns < first; i++) {
		seen = __sync_val_compare_and_swap(&inst->first_entry_ns, first, entry_ns);
		if (seen == first)
			break;
		first = seen;
	}
	__sync_fetch_and_add(&inst->arrivals, 1);
}

SB_INLINE int sb_instance_arrive(struct sb_agg_instance *inst, __u64 entry_ns, __u64 since_ns, __u64 excess_ns,
				 __u32 tgid)
{
	__u64 waited_from;
	int i, waited_out = 0;

	if (sb_instance_opens(inst)) {
		if (__sync_val_compare_and_swap(&inst->opening, 0, 1) == 0) {
			/* Another arrival may have opened it since we looked. */
			int opened = sb_instance_opens(inst);

			if (opened)
				sb_instance_open(inst, entry_ns, since_ns, excess_ns, tgid);
			__sync_val_compare_and_swap(&inst->opening, 1, 0);
			if (opened)
				return 0;
		} else {
			waited_from = sb_now_ns();
			for (i = 0; i < SB_OPEN_WAIT_LOOPS; i++) {
				if (!*(volatile __u32 *)&inst->opening)
					break;
				if (sb_now_ns() - waited_from >= SB_OPEN_WAIT_NS)
					break;
			}
			waited_out = *(volatile __u32 *)&inst->opening != 0;
		}
	}
	sb_instance_join(inst, entry_ns, since_ns, excess_ns, tgid);
	return waited_out;
}

enum sb_placement {
	SB_PLACED_CLOSES = 1,	/* in the current instance, and this return released it */
	SB_PLACED_CURRENT = 2,	/* in the current instance, released by an earlier return */
	SB_PLACED_PREVIOUS = 3, /* a late return from the previous instance */
	SB_UNPLACED = 0,	/* older than the last two instances */
};

struct sb_placed {
	__u64 lateness_ns; /* entry - its instance's first arrival */
	__u64 release_ns;  /* when its instance released its members */
};

/* A return (entry_ns, exit_ns): which instance it belongs to, its
 * lateness, and when that instance released it. Two returns at the same
 * instant on two CPUs: one of them closes the instance. closed_ns is read
 * before first_entry_ns (an open publishes in the other order): a return
 * that saw the instance closed and then the next one's first arrival is a
 * late return from the previous one; one that saw it open closes it only
 * if it is still the same open (its generation), else its instance was
 * closed and another opened meanwhile: it was the previous one. */
SB_INLINE int sb_instance_place(struct sb_agg_instance *inst, __u64 entry_ns, __u64 exit_ns, struct sb_placed *placed)
{
	__u64 closed = sb_closed_now(inst), seen;
	__u64 first = *(volatile __u64 *)&inst->first_entry_ns;

	if (first && entry_ns >= first) {
		placed->lateness_ns = entry_ns - first;
		if (!(closed & SB_OPEN)) {
			placed->release_ns = closed ? closed : exit_ns;
			return SB_PLACED_CURRENT;
		}
		seen = __sync_val_compare_and_swap(&inst->closed_ns, closed, exit_ns);
		if (seen == closed) {
			placed->release_ns = exit_ns;
			return SB_PLACED_CLOSES;
		}
		if (!(seen & SB_OPEN)) {
			placed->release_ns = seen;
			return SB_PLACED_CURRENT;
		}
		placed->release_ns = inst->prev_closed_ns ? inst->prev_closed_ns : exit_ns;
		return SB_PLACED_PREVIOUS;
	}
	if (inst->prev_first_entry_ns && entry_ns >= inst->prev_first_entry_ns) {
		placed->lateness_ns = entry_ns - inst->prev_first_entry_ns;
		placed->release_ns = inst->prev_closed_ns ? inst->prev_closed_ns : exit_ns;
		return SB_PLACED_PREVIOUS;
	}
	return SB_UNPLACED;
}

/* The last arrival's lead over the second-to-last that it caused itself:
 * entry = previous release + its time since; all of the lead when either
 * time since is unknown. */
SB_INLINE __u64 sb_self_caused_lead(__u64 last_entry_ns, __u64 second_entry_ns, __u64 last_since_ns,
				    __u64 second_since_ns)
{
	__u64 lead = last_entry_ns - second_entry_ns, own;

	if (last_since_ns == SB_AGG_UNKNOWN || second_since_ns == SB_AGG_UNKNOWN)
		return lead;
	own = last_since_ns > second_since_ns ? last_since_ns - second_since_ns : 0;
	return own < lead ? own : lead;
}

/* Of a lead, the part leaving its previous collective later than usual
 * explains, beyond the runner-up's. */
SB_INLINE __u64 sb_lead_from_leaving(__u64 lead_ns, __u64 last_excess_ns, __u64 second_excess_ns)
{
	__u64 leaving = last_excess_ns > second_excess_ns ? last_excess_ns - second_excess_ns : 0;

	return leaving < lead_ns ? leaving : lead_ns;
}

/* The sequential test's event for an instance of `ranks` members, closed
 * step_ns after the previous one: its last arrival computed (not left) its
 * way to a lead of at least lead_share_bp of the step. */
SB_INLINE int sb_seq_event(__u32 ranks, __u64 lead_ns, __u64 leaving_ns, __u64 step_ns, __u64 lead_share_bp)
{
	if (ranks < SB_SEQ_MIN_RANKS || !step_ns)
		return 0;
	if (leaving_ns * 100 >= lead_ns * SB_SEQ_MOSTLY_LEAVING_PCT)
		return 0;
	return lead_ns * SB_BASIS_POINTS >= step_ns * lead_share_bp;
}

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
 * delay_ns within the usual time and updates *usual_ns.
 */
#define SB_LEAVE_MIN_STEP_NS 32768ULL

SB_INLINE __u64 sb_leave_allowance(__u64 *usual_ns, __u64 delay_ns)
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

/* When a return's collective let it go, for its next arrival: the release
 * plus its usual time to leave that collective; its own exit when it was
 * not placed (release_ns 0). A return before its release (another CPU closed
 * the instance at a later instant) teaches nothing about leaving. */
SB_INLINE __u64 sb_let_go(__u64 release_ns, __u64 exit_ns, __u64 *usual_ns)
{
	if (!release_ns)
		return exit_ns;
	if (exit_ns < release_ns)
		return release_ns;
	return release_ns + sb_leave_allowance(usual_ns, exit_ns - release_ns);
}

#endif /* SLOWBURN_INSTANCE_RULES_H */
