/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * "A call with an entry and a return": one uprobe/uretprobe program pair that
 * serves every traced function. Each attachment carries a 64-bit bpf_cookie
 * that says which probe it is and which arguments to keep.
 */
#ifndef SLOWBURN_CALLPAIR_H
#define SLOWBURN_CALLPAIR_H

#include "cookie.h"
#include "events.h"

/* log2 buckets of a call's duration in units of hist_unit_ns. */
#define SB_HIST_SLOTS 40

/* Version 2 added the communicator, its sequence number, the out value,
 * the key hash and the return value; version 3 the thread's CPU time and
 * run-queue wait during the call. */
#define SB_CALL_EVENT_VERSION 3

/* sb_call_event.flags */
#define SB_CALL_HAS_COMM_SEQ (1U << 0) /* comm_seq was read */
#define SB_CALL_HAS_OUT	     (1U << 1) /* out_value was read at return */
#define SB_CALL_HAS_KEY	     (1U << 2) /* key_hash was computed at entry */
#define SB_CALL_COMM_UNREAD  (1U << 3) /* the communicator argument could not be read */
#define SB_CALL_HAS_CPU	     (1U << 4) /* oncpu_ns was read; runq_ns too where the kernel keeps it */
#define SB_CALL_HAS_RUNQ     (1U << 5) /* runq_ns was read (CONFIG_SCHED_INFO: task->sched_info.run_delay) */

/* The arguments an entry keeps until its return. */
struct sb_call_args {
	__u64 size_arg; /* raw value of the size argument, 0 if none */
	__u64 aux_arg;	/* raw value of the aux argument (a datatype, a color), 0 if none */
	__u64 comm;	/* communicator handle, process-local; 0 if none */
	__u64 comm_seq; /* sequence number read at entry (SB_CALL_HAS_COMM_SEQ) */
	__u64 out_ptr;	/* the out-pointer argument, read through at return */
	__u64 key_hash; /* FNV-1a of the key (SB_CALL_HAS_KEY) */
	__u32 flags;
	__u32 _pad;
};

struct sb_call_event {
	struct sb_event_header hdr; /* type SB_EVENT_CALL, ts_ns == exit_ns */
	__u32 probe_id;
	__u32 flags;	/* SB_CALL_* */
	__u64 seq;	/* per (thread, probe) record number, from 1: a jump is a lost record */
	__u64 entry_ns; /* bpf_ktime_get_ns() at function entry */
	__u64 exit_ns;	/* bpf_ktime_get_ns() at function return */
	__u64 size_arg;
	__u64 aux_arg;
	__u64 comm;
	__u64 comm_seq;
	__u64 out_value; /* what the out pointer held at return (a new communicator handle) */
	__u64 key_hash;
	__s64 ret; /* the function's return value */
	/* The calling thread during the call: time on a CPU (the scheduler's
	 * sum_exec_runtime, updated at ticks and switches: within a tick at
	 * each end, unbiased over many calls) and time runnable but waiting in
	 * a run queue or throttled by its CPU cgroup (sched_info.run_delay,
	 * exact). A rank that spins inside a collective and waits for its CPU
	 * holds up every member. */
	__u64 oncpu_ns;
	__u64 runq_ns;
};

/* A call in flight: keyed by (thread, probe), present from entry to return. */
struct sb_call_key {
	__u32 tid;
	__u32 probe_id;
};

struct sb_call_state {
	__u64 entry_ns;	   /* bpf_ktime_get_ns() at entry */
	__u64 oncpu_at_ns; /* the thread's sum_exec_runtime at entry */
	__u64 runq_at_ns;  /* its sched_info.run_delay at entry */
	struct sb_call_args args;
	__u32 tgid; /* lets user space list in-flight calls per process */
	__u32 _pad;
};

/* Histograms per (process, probe, communicator): a rank's calls on two
 * communicators are two distributions. */
struct sb_hist_key {
	__u32 tgid;
	__u32 probe_id;
	__u64 comm;
};

struct sb_hist {
	__u64 slots[SB_HIST_SLOTS];
	__u64 count;
	__u64 total_ns;
};

/* Kernel-side accounting, read by user space from .bss. */
struct sb_callpair_counters {
	__u64 ringbuf_drops;  /* bpf_ringbuf_reserve() failed: record lost */
	__u64 orphan_returns; /* return seen without its entry (attached mid-call) */
	__u64 state_failures; /* entry state could not be stored: the call is not timed */
};

#endif /* SLOWBURN_CALLPAIR_H */
