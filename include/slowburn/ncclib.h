/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * NCCL IB transport requests (bpf/ncclib.bpf.c), aggregated in the kernel:
 * a request is posted by ncclIbIsend/Irecv/Iflush and completed by the
 * ncclIbTest call that sets *done = 1. Nothing per request or per poll
 * reaches user space; it reads the per-(process, connection, direction)
 * statistics.
 */
#ifndef SLOWBURN_NCCLIB_H
#define SLOWBURN_NCCLIB_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

enum sb_ib_direction {
	SB_IB_SEND = 0,
	SB_IB_RECV = 1,
	SB_IB_FLUSH = 2,
};

#define SB_IB_LAT_SLOTS	 32 /* log2 of request latency in microseconds */
#define SB_IB_SIZE_SLOTS 40 /* log2 of request size in bytes */
#define SB_IB_MAX_RECVS	 8  /* NCCL_NET_IB_MAX_RECVS: sizes summed per irecv */

struct sb_ib_key {
	__u32 tgid;
	__u32 direction; /* enum sb_ib_direction */
	__u64 comm;	 /* sendComm / recvComm: one connection to one peer */
};

struct sb_ib_stats {
	__u64 lat_slots[SB_IB_LAT_SLOTS];
	__u64 size_slots[SB_IB_SIZE_SLOTS];
	__u64 requests;
	__u64 bytes;
	__u64 total_ns;
};

struct sb_ib_counters {
	__u64 posts;	      /* requests posted */
	__u64 posts_deferred; /* isend/irecv success with *request == NULL: peer not ready, retried later */
	__u64 completions;    /* requests seen completed */
	__u64 unknown_done;   /* *done = 1 for a request whose post was not seen (attached mid-flight, or evicted) */
	__u64 table_full;     /* a posted request could not be tracked */
	__u64 stats_full;     /* a completion whose (process, connection, direction) had no statistics slot */
	__u64 slot_clashes;   /* two threads in ncclIbTest at once on one per-thread slot: a poll not seen */
};

#endif /* SLOWBURN_NCCLIB_H */
