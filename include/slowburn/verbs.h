/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Records of the libibverbs control-path program (bpf/verbs.bpf.c): QP
 * creation, state changes and destruction, and asynchronous events, one
 * ring-buffer record per call (these calls are rare), and the data path's
 * completion latency per QP: the provider's post_send and poll_cq, found
 * through the context's ops (the provider's own functions are static and
 * Debian strips them), summed in the kernel per (process, QP).
 */
#ifndef SLOWBURN_VERBS_H
#define SLOWBURN_VERBS_H

#include "events.h"

/*
 * Offsets in libibverbs' public structs (<infiniband/verbs.h>, ABI
 * IBVERBS_1.1, unchanged since rdma-core's first release): user-space types
 * have no BTF to relocate against, and the library's ABI is versioned
 * instead. tests/unit/verbs_test.cpp checks each against offsetof().
 */
#define SB_IBV_QP_NUM_OFFSET		52 /* struct ibv_qp.qp_num */
#define SB_IBV_QP_STATE_OFFSET		56 /* struct ibv_qp.state */
#define SB_IBV_QP_TYPE_OFFSET		60 /* struct ibv_qp.qp_type */
#define SB_IBV_ATTR_QP_STATE_OFFSET	0  /* struct ibv_qp_attr.qp_state */
#define SB_IBV_ATTR_DEST_QPN_OFFSET	28 /* struct ibv_qp_attr.dest_qp_num */
#define SB_IBV_ATTR_AH_DLID_OFFSET	80 /* struct ibv_qp_attr.ah_attr.dlid */
#define SB_IBV_ATTR_AH_DGID_OFFSET	56 /* struct ibv_qp_attr.ah_attr.grh.dgid */
#define SB_IBV_ATTR_AH_IS_GLOBAL_OFFSET 85 /* struct ibv_qp_attr.ah_attr.is_global: the GRH (and GID) is valid */
#define SB_IBV_ASYNC_EVENT_TYPE_OFFSET	8  /* struct ibv_async_event.event_type */
#define SB_IBV_QP_CONTEXT_OFFSET	0  /* struct ibv_qp.context */
#define SB_IBV_CONTEXT_DEVICE_OFFSET	0  /* struct ibv_context.device */
#define SB_IBV_DEVICE_NAME_OFFSET	24 /* struct ibv_device.name ("mlx5_0") */
#define SB_IBV_DEVICE_NAME_BYTES	64 /* IBV_SYSFS_NAME_MAX */
/* The data path: ibv_post_send() and ibv_poll_cq() are inline calls through
 * these pointers of struct ibv_context.ops into the provider. */
#define SB_IBV_CONTEXT_POLL_CQ_OFFSET	96  /* struct ibv_context.ops.poll_cq */
#define SB_IBV_CONTEXT_POST_SEND_OFFSET 208 /* struct ibv_context.ops.post_send */
#define SB_IBV_QP_SEND_CQ_OFFSET	24  /* struct ibv_qp.send_cq: where its sends complete */
#define SB_IBV_SEND_WR_NEXT_OFFSET	8   /* struct ibv_send_wr.next (wr_id is at 0) */
#define SB_IBV_SEND_WR_FLAGS_OFFSET	32  /* struct ibv_send_wr.send_flags */
#define SB_IBV_SEND_SIGNALED		2   /* IBV_SEND_SIGNALED */
#define SB_IBV_WC_BYTES			48  /* sizeof(struct ibv_wc) (wr_id is at 0) */
#define SB_IBV_WC_STATUS_OFFSET		8   /* struct ibv_wc.status */
#define SB_IBV_WC_OPCODE_OFFSET		12  /* struct ibv_wc.opcode */
#define SB_IBV_WC_QP_NUM_OFFSET		28  /* struct ibv_wc.qp_num */
#define SB_IBV_WC_RECV			128 /* IBV_WC_RECV: opcodes from here on are receives */
#define SB_IBV_WC_WR_FLUSH_ERR		5   /* IBV_WC_WR_FLUSH_ERR: the QP went to ERR, not a fault of this WR */

/* enum ibv_qp_attr_mask bits we read */
#define SB_IBV_QP_STATE	   (1u << 0)
#define SB_IBV_QP_AV	   (1u << 7)
#define SB_IBV_QP_DEST_QPN (1u << 20)

/* Which call (each has its own program). */
enum sb_verbs_call {
	SB_VERBS_MODIFY_QP = 1,
	SB_VERBS_CREATE_QP = 2,
	SB_VERBS_DESTROY_QP = 3,
	SB_VERBS_ASYNC_EVENT = 4,
};

#define SB_VERBS_EVENT_VERSION 1

struct sb_verbs_event {
	struct sb_event_header hdr; /* type SB_EVENT_VERBS; ts_ns at return */
	__u32 call;		    /* enum sb_verbs_call */
	__s32 result;		    /* the int returned; for create_qp 0, or -1 for NULL */
	__u64 object;		    /* the struct ibv_qp* (create/modify/destroy) or ibv_context* (async) */
	__u64 duration_ns;
	__u32 qp_num;	   /* 0 when the call names no QP */
	__s32 new_state;   /* modify_qp: the requested enum ibv_qp_state, -1 if not in the mask */
	__s32 old_state;   /* modify_qp: qp->state before the call (libibverbs keeps it) */
	__u32 qp_type;	   /* create_qp: enum ibv_qp_type */
	__u32 attr_mask;   /* modify_qp */
	__u32 event_type;  /* async: enum ibv_event_type */
	__u32 port_num;	   /* async port events */
	__u32 dest_qp_num; /* modify_qp with IBV_QP_DEST_QPN */
	__u8 dest_gid[16]; /* modify_qp with IBV_QP_AV and a global route: the peer's GID; else zero */
	__u16 dest_lid;	   /* modify_qp with IBV_QP_AV */
	__u16 _pad16;
	__u32 _pad32;
	char device[SB_IBV_DEVICE_NAME_BYTES]; /* the RDMA device ("mlx5_0"), through the QP's or the call's context */
};

struct sb_verbs_counters {
	__u64 records;
	__u64 ringbuf_drops;
	__u64 state_failures; /* an entry whose arguments could not be kept */
	/* The data path (per-QP completion latency). */
	__u64 posts;	       /* work requests seen posted */
	__u64 completions;     /* completions matched to their post */
	__u64 receives;	       /* receive completions (their time is the peer's): counted only */
	__u64 unmatched;       /* send completions with no post seen (posted before the probe) */
	__u64 stats_full;      /* completions with no statistics slot (more than SB_VERBS_MAX_QPS QPs) */
	__u64 chain_truncated; /* post_send chains longer than SB_VERBS_MAX_CHAIN: the rest not timed */
	__u64 wc_truncated;    /* poll_cq returns of more than SB_VERBS_MAX_WC completions: the rest not seen */
};

/* Per (process, QP): its send-side work requests' time from post_send to
 * the poll_cq that returned their completion. */
#define SB_VERBS_QP_LAT_SLOTS 32 /* log2 of microseconds */
#define SB_VERBS_MAX_QPS      4096
#define SB_VERBS_MAX_CHAIN    16 /* work requests of one post_send chain timed (NCCL chains up to 9) */
#define SB_VERBS_MAX_WC	      16 /* completions of one poll_cq matched */

/* A QP number is unique per device only: a process's QPs on two NICs can
 * share one. The CQ its sends complete on tells them apart. */
struct sb_qp_key {
	__u32 tgid;
	__u32 qp_num;
	__u64 cq; /* the struct ibv_cq* (the QP's send_cq; the CQ polled) */
};

struct sb_qp_stats {
	__u64 lat_slots[SB_VERBS_QP_LAT_SLOTS];
	__u64 completions; /* successful, matched to their post, timed */
	__u64 total_ns;
	__u64 errors; /* completions in error, but flushes: counted, not timed */
	__u64 flushed;
};

#endif /* SLOWBURN_VERBS_H */
