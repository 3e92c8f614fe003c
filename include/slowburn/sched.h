/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The traced ranks' time on and off the CPU (sched.bpf.c): sched_switch and
 * sched_wakeup filtered in the kernel to the processes user space names, and
 * summed there per process (per CPU, no atomics); user space reads the sums
 * and differences them. No event leaves the kernel.
 */
#ifndef SLOWBURN_SCHED_H
#define SLOWBURN_SCHED_H

#include "events.h"

#define SB_SCHED_HIST_SLOTS 32
#define SB_SCHED_COMM_BYTES 16

/* Why a thread was off its CPU. */
enum sb_offcpu_reason {
	SB_OFF_RUNNABLE = 0, /* preempted or woken: waiting in a run queue (CPU contention, quota throttling) */
	SB_OFF_IO = 1,	     /* uninterruptible sleep inside a system call (disk, network file system) */
	SB_OFF_FAULT = 2,    /* uninterruptible sleep outside one: a page fault, reclaim */
	SB_OFF_FUTEX = 3,    /* sleeping in futex(2): a lock, a condition, a thread join */
	SB_OFF_SLEEP = 4,    /* any other sleep: poll, a socket read, nanosleep */
	SB_OFF_REASONS = 5,
};

/* Per traced process (tgid), per CPU. */
struct sb_sched_stats {
	__u64 oncpu_ns;
	__u64 offcpu_ns[SB_OFF_REASONS];
	__u64 involuntary_switches;	       /* switched out while runnable */
	__u64 voluntary_switches;	       /* switched out to sleep */
	__u64 runq_waits;		       /* waits in a run queue that ended on a CPU */
	__u64 runq_slots[SB_SCHED_HIST_SLOTS]; /* log2 histogram of those waits, in ns */
};

/* A process that ran on a CPU while a traced thread waited for it. */
struct sb_share_key {
	__u32 tgid;	  /* the traced process that waited */
	__u32 other_tgid; /* the process that ran meanwhile */
	__u32 cpu;
	__u32 _pad;
};

struct sb_share {
	__u64 ns; /* of the waits it overlapped */
	char comm[SB_SCHED_COMM_BYTES];
};

#endif /* SLOWBURN_SCHED_H */
