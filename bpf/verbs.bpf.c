// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libibverbs control path: one record per call of
 *
 *   int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
 *   struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
 *   int ibv_destroy_qp(struct ibv_qp *qp)
 *   int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
 *
 * (the default IBVERBS_1.1 versions). These are rare calls: a QP is created,
 * walked RESET -> INIT -> RTR -> RTS once, and destroyed; an async event is
 * an error or a port change. Entry state is kept per thread until return,
 * where the record is written, so a transition that failed says so.
 *
 * And the data path, attached by user space once it has read a context's
 * ops (the provider's functions behind the inline ibv_post_send and
 * ibv_poll_cq):
 *
 *   int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
 *   int poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
 *
 * Each work request posted is stamped by (process, QP, wr_id); a completion
 * poll_cq returns with that key is timed and summed per (process, QP). A
 * receive's completion has no post here (its time is the peer's) and is
 * only counted; a send posted before the probe is counted as unmatched.
 * poll_cq runs in the polling loop: its entry keeps one pointer, and its
 * return does nothing more for an empty poll.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "bits.bpf.h"
#include "maps.bpf.h"
#include "slowburn/verbs.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} verbs_events SEC(".maps");

/* The record under construction, from entry to return, per thread. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tid */
	__type(value, struct sb_verbs_event);
} in_flight SEC(".maps");

/* Where ibv_get_async_event writes the event, per thread. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} async_event_ptr SEC(".maps");

struct sb_verbs_counters verbs_counters = {};

static const struct sb_verbs_event empty = {};

static __always_inline __u32 read_u32(__u64 base, __u32 offset)
{
	__u32 value = 0;

	bpf_probe_read_user(&value, sizeof(value), (void *)(base + offset));
	return value;
}

static __always_inline __u64 read_ptr(__u64 base, __u32 offset)
{
	__u64 value = 0;

	bpf_probe_read_user(&value, sizeof(value), (void *)(base + offset));
	return value;
}

/* context->device->name: which NIC, so user space can join the event to
 * the PCI topology. */
static __always_inline void read_device_name(struct sb_verbs_event *event, __u64 context)
{
	__u64 device = read_ptr(context, SB_IBV_CONTEXT_DEVICE_OFFSET);

	if (device)
		bpf_probe_read_user_str(event->device, sizeof(event->device),
					(void *)(device + SB_IBV_DEVICE_NAME_OFFSET));
}

static __always_inline struct sb_verbs_event *start(__u32 call, __u64 object)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct sb_verbs_event *event;

	if (bpf_map_update_elem(&in_flight, &tid, &empty, BPF_ANY)) {
		__sync_fetch_and_add(&verbs_counters.state_failures, 1);
		return 0;
	}
	event = bpf_map_lookup_elem(&in_flight, &tid);
	if (!event)
		return 0;
	event->call = call;
	event->object = object;
	event->new_state = -1;
	event->old_state = -1;
	event->duration_ns = bpf_ktime_get_ns(); /* the entry time until return */
	return event;
}

/* At return: fills the header, the result and the duration, and sends it. */
static __always_inline void finish(__s32 result)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct sb_verbs_event *event = bpf_map_lookup_elem(&in_flight, &tid);
	struct sb_verbs_event *out;
	__u64 now = bpf_ktime_get_ns();

	if (!event)
		return;
	out = bpf_ringbuf_reserve(&verbs_events, sizeof(*out), 0);
	if (!out) {
		__sync_fetch_and_add(&verbs_counters.ringbuf_drops, 1);
		bpf_map_delete_elem(&in_flight, &tid);
		return;
	}
	__builtin_memcpy(out, event, sizeof(*out));
	bpf_map_delete_elem(&in_flight, &tid);
	out->hdr.type = SB_EVENT_VERBS;
	out->hdr.version = SB_VERBS_EVENT_VERSION;
	out->hdr.pid = pid_tgid >> 32;
	out->hdr.tid = tid;
	out->hdr.cpu = bpf_get_smp_processor_id();
	out->hdr.ts_ns = now;
	out->duration_ns = now - out->duration_ns;
	out->result = result;
	__sync_fetch_and_add(&verbs_counters.records, 1);
	bpf_ringbuf_submit(out, 0);
}

SEC("uprobe")
int BPF_KPROBE(modify_qp, void *qp, void *attr, int attr_mask)
{
	struct sb_verbs_event *event = start(SB_VERBS_MODIFY_QP, (__u64)qp);
	__u64 a = (__u64)attr;

	if (!event)
		return 0;
	event->qp_num = read_u32((__u64)qp, SB_IBV_QP_NUM_OFFSET);
	read_device_name(event, read_ptr((__u64)qp, SB_IBV_QP_CONTEXT_OFFSET));
	event->old_state = (__s32)read_u32((__u64)qp, SB_IBV_QP_STATE_OFFSET);
	event->qp_type = read_u32((__u64)qp, SB_IBV_QP_TYPE_OFFSET);
	event->attr_mask = (__u32)attr_mask;
	if (attr_mask & SB_IBV_QP_STATE)
		event->new_state = (__s32)read_u32(a, SB_IBV_ATTR_QP_STATE_OFFSET);
	if (attr_mask & SB_IBV_QP_DEST_QPN)
		event->dest_qp_num = read_u32(a, SB_IBV_ATTR_DEST_QPN_OFFSET);
	if (attr_mask & SB_IBV_QP_AV) {
		__u8 is_global = 0;

		/* The GRH is only meaningful with is_global (RoCE always, IB across subnets). */
		bpf_probe_read_user(&is_global, sizeof(is_global), (void *)(a + SB_IBV_ATTR_AH_IS_GLOBAL_OFFSET));
		if (is_global)
			bpf_probe_read_user(event->dest_gid, sizeof(event->dest_gid),
					    (void *)(a + SB_IBV_ATTR_AH_DGID_OFFSET));
		bpf_probe_read_user(&event->dest_lid, sizeof(event->dest_lid),
				    (void *)(a + SB_IBV_ATTR_AH_DLID_OFFSET));
	}
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(create_qp)
{
	start(SB_VERBS_CREATE_QP, 0);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(create_qp_return, void *qp)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct sb_verbs_event *event = bpf_map_lookup_elem(&in_flight, &tid);

	if (!event)
		return 0;
	event->object = (__u64)qp;
	if (qp) {
		event->qp_num = read_u32((__u64)qp, SB_IBV_QP_NUM_OFFSET);
		event->qp_type = read_u32((__u64)qp, SB_IBV_QP_TYPE_OFFSET);
		read_device_name(event, read_ptr((__u64)qp, SB_IBV_QP_CONTEXT_OFFSET));
	}
	finish(qp ? 0 : -1);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(destroy_qp, void *qp)
{
	struct sb_verbs_event *event = start(SB_VERBS_DESTROY_QP, (__u64)qp);

	/* Read now: the QP is freed by the call. */
	if (event) {
		event->qp_num = read_u32((__u64)qp, SB_IBV_QP_NUM_OFFSET);
		read_device_name(event, read_ptr((__u64)qp, SB_IBV_QP_CONTEXT_OFFSET));
	}
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(async_event, void *context, void *async)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 where = (__u64)async;

	struct sb_verbs_event *event = start(SB_VERBS_ASYNC_EVENT, (__u64)context);

	if (event) {
		read_device_name(event, (__u64)context);
		bpf_map_update_elem(&async_event_ptr, &tid, &where, BPF_ANY);
	}
	return 0;
}

/* The return of modify_qp and destroy_qp: the result is all that is new. */
SEC("uretprobe")
int BPF_KRETPROBE(int_return, int result)
{
	finish(result);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(async_event_return, int result)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct sb_verbs_event *event = bpf_map_lookup_elem(&in_flight, &tid);
	__u64 *where = bpf_map_lookup_elem(&async_event_ptr, &tid);
	__u64 element = 0;

	if (!event || !where)
		return 0;
	if (result == 0) {
		/* ibv_get_async_event blocks: the event is filled when it returns. */
		bpf_probe_read_user(&element, sizeof(element), (void *)*where);
		event->event_type = read_u32(*where, SB_IBV_ASYNC_EVENT_TYPE_OFFSET);
		switch (event->event_type) {
		case 1:
		case 2:
		case 3:
		case 4:
		case 5:
		case 6:
		case 7:
		case 16:
			/* element.qp */
			event->qp_num = read_u32(element, SB_IBV_QP_NUM_OFFSET);
			event->object = element;
			break;
		case 9:
		case 10:
		case 11:
		case 12:
		case 13:
		case 17:
		case 18:
		case 20:
			/* element.port_num */
			event->port_num = (__u32)element;
			break;
		case 8: /* DEVICE_FATAL: no element; the context stays the object */
			break;
		default: /* CQ, SRQ and WQ events: the pointer names the object */
			event->object = element;
			break;
		}
	}
	bpf_map_delete_elem(&async_event_ptr, &tid);
	finish(result);
	return 0;
}

/* The data path. */

struct sb_wr_key {
	struct sb_qp_key qp;
	__u64 wr_id;
};

/* When each work request was posted. A signaled request is stamped over
 * any stale entry of its key; an unsignaled one only where there is none
 * (it completes on a QP created with sq_sig_all, else never, and must not
 * restamp a pending signaled request: NCCL gives every unsignaled request
 * wr_id 0). LRU: the ones that never complete are pushed out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sb_wr_key);
	__type(value, __u64);
} posted SEC(".maps");

/* poll_cq's CQ and completion array from entry to return, per thread. */
struct poll_args {
	__u64 cq;
	__u64 wc;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct poll_args);
} polling SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, SB_VERBS_MAX_QPS);
	__type(key, struct sb_qp_key);
	__type(value, struct sb_qp_stats);
} qp_stats SEC(".maps");

static const struct sb_qp_stats zero_qp_stats = {};

SEC("uprobe")
int BPF_KPROBE(post_send, void *qp, void *wr)
{
	struct sb_wr_key key = {};
	__u64 now = bpf_ktime_get_ns();
	__u64 next = (__u64)wr;
	int i;

	key.qp.tgid = bpf_get_current_pid_tgid() >> 32;
	key.qp.qp_num = read_u32((__u64)qp, SB_IBV_QP_NUM_OFFSET);
	key.qp.cq = read_ptr((__u64)qp, SB_IBV_QP_SEND_CQ_OFFSET);
	for (i = 0; i < SB_VERBS_MAX_CHAIN && next; i++) {
		__u32 flags = read_u32(next, SB_IBV_SEND_WR_FLAGS_OFFSET);

		key.wr_id = read_ptr(next, 0);
		bpf_map_update_elem(&posted, &key, &now, (flags & SB_IBV_SEND_SIGNALED) ? BPF_ANY : BPF_NOEXIST);
		__sync_fetch_and_add(&verbs_counters.posts, 1);
		next = read_ptr(next, SB_IBV_SEND_WR_NEXT_OFFSET);
	}
	if (next)
		__sync_fetch_and_add(&verbs_counters.chain_truncated, 1);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(poll_cq, void *cq, int num_entries, void *wc)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct poll_args args = { (__u64)cq, (__u64)wc };

	bpf_map_update_elem(&polling, &tid, &args, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(poll_cq_return, int polled)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct poll_args *args = bpf_map_lookup_elem(&polling, &tid);
	__u64 now = bpf_ktime_get_ns();
	struct sb_wr_key key = {};
	__u64 wc;
	int i;

	if (!args)
		return 0;
	wc = args->wc;
	key.qp.cq = args->cq;
	bpf_map_delete_elem(&polling, &tid);
	key.qp.tgid = pid_tgid >> 32;
	if (polled > SB_VERBS_MAX_WC)
		__sync_fetch_and_add(&verbs_counters.wc_truncated, 1);
	for (i = 0; i < SB_VERBS_MAX_WC && i < polled; i++) {
		__u64 entry = wc + (__u64)i * SB_IBV_WC_BYTES;
		struct sb_qp_stats *stats;
		__u32 status = read_u32(entry, SB_IBV_WC_STATUS_OFFSET);
		__u64 *posted_ns, latency_ns;

		/* The opcode is defined only for a success. */
		if (!status && read_u32(entry, SB_IBV_WC_OPCODE_OFFSET) >= SB_IBV_WC_RECV) {
			__sync_fetch_and_add(&verbs_counters.receives, 1);
			continue;
		}
		key.wr_id = read_ptr(entry, 0);
		key.qp.qp_num = read_u32(entry, SB_IBV_WC_QP_NUM_OFFSET);
		posted_ns = bpf_map_lookup_elem(&posted, &key);
		if (!posted_ns && !status) {
			__sync_fetch_and_add(&verbs_counters.unmatched, 1);
			continue;
		}
		latency_ns = posted_ns ? now - *posted_ns : 0;
		if (posted_ns)
			bpf_map_delete_elem(&posted, &key);
		stats = lookup_or_try_init(&qp_stats, &key.qp, &zero_qp_stats);
		if (!stats) {
			__sync_fetch_and_add(&verbs_counters.stats_full, 1);
			continue;
		}
		/* A completion in error (a send's or a receive's: its opcode
		 * is undefined then) is counted, not timed: a flush comes at
		 * the QP's teardown, an error's time is not the path's. */
		if (status == SB_IBV_WC_WR_FLUSH_ERR) {
			__sync_fetch_and_add(&stats->flushed, 1);
			continue;
		}
		if (status) {
			__sync_fetch_and_add(&stats->errors, 1);
			continue;
		}
		__sync_fetch_and_add(&stats->lat_slots[log2_slot(latency_ns / 1000, SB_VERBS_QP_LAT_SLOTS)], 1);
		__sync_fetch_and_add(&stats->completions, 1);
		__sync_fetch_and_add(&stats->total_ns, latency_ns);
		__sync_fetch_and_add(&verbs_counters.completions, 1);
	}
	return 0;
}
