/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Records of the libibverbs control-path program (bpf/verbs.bpf.c): QP
 * creation, state changes and destruction, and asynchronous events, one
 * ring-buffer record per call (these calls are rare; the data path is not
 * traced here).
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
};

#endif /* SLOWBURN_VERBS_H */
