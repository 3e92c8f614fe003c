/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * "A call with an entry and a return": one uprobe/uretprobe program pair that
 * serves every traced function. Each attachment carries a 64-bit bpf_cookie
 * that says which probe it is and which arguments to keep.
 */
#ifndef SLOWBURN_CALLPAIR_H
#define SLOWBURN_CALLPAIR_H

#include "events.h"

/* Cookie layout: bits 0-15 probe id, 16-19 size argument, 20-23 aux argument.
 * An argument index is 1-based (1 = first parameter, up to 6 on x86-64);
 * 0 means "none". */
#define SB_COOKIE_PROBE_MASK 0xffffULL
#define SB_COOKIE_SIZE_ARG_SHIFT 16
#define SB_COOKIE_AUX_ARG_SHIFT 20
#define SB_COOKIE_ARG_MASK 0xfULL
#define SB_MAX_ARG_INDEX 6

/* log2 buckets of a call's duration in units of hist_unit_ns. */
#define SB_HIST_SLOTS 40

#define SB_CALL_EVENT_VERSION 1

struct sb_call_event {
	struct sb_event_header hdr; /* type SB_EVENT_CALL, ts_ns == exit_ns */
	__u32 probe_id;
	__u32 _reserved;
	__u64 seq;      /* per (thread, probe) record number, from 1: a jump is a lost record */
	__u64 entry_ns; /* bpf_ktime_get_ns() at function entry */
	__u64 exit_ns;  /* bpf_ktime_get_ns() at function return */
	__u64 size_arg; /* raw value of the size argument, 0 if none */
	__u64 aux_arg;  /* raw value of the aux argument (e.g. a datatype), 0 if none */
};

/* A call in flight: keyed by (thread, probe), present from entry to return. */
struct sb_call_key {
	__u32 tid;
	__u32 probe_id;
};

struct sb_call_state {
	__u64 entry_ns; /* bpf_ktime_get_ns() at entry */
	__u64 size_arg;
	__u64 aux_arg;
	__u32 tgid; /* lets user space list in-flight calls per process */
	__u32 _pad;
};

struct sb_hist_key {
	__u32 tgid;
	__u32 probe_id;
};

struct sb_hist {
	__u64 slots[SB_HIST_SLOTS];
	__u64 count;
	__u64 total_ns;
};

/* Kernel-side accounting, read by user space from .bss. */
struct sb_callpair_counters {
	__u64 ringbuf_drops;   /* bpf_ringbuf_reserve() failed: record lost */
	__u64 orphan_returns;  /* return seen without its entry (attached mid-call) */
	__u64 state_failures;  /* entry state could not be stored: the call is not timed */
};

#endif /* SLOWBURN_CALLPAIR_H */
