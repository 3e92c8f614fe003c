// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NCCL IB transport requests, from post to completion, aggregated here.
 *
 *   ncclIbIsend(sendComm, data, size_t size, int tag, mhandle, phandle, void** request)
 *   ncclIbIrecv(recvComm, int n, void** data, size_t* sizes, int* tags, mhandles, phandles, void** request)
 *   ncclIbIflush(recvComm, int n, void** data, int* sizes, mhandles, void** request)
 *   ncclIbTest(void* request, int* done, int* sizes)
 *
 * (NCCL 2.26-2.28; user space checks the demangled signatures before it
 * attaches.) A post is remembered by its request pointer; the ncclIbTest
 * return that finds *done == 1 completes it, and for a receive reads the
 * sizes that arrived (irecv's sizes are the buffers' capacities). ncclIbTest
 * runs in NCCL's polling loop, so its probe does the least: an array slot per
 * thread at entry, one user read and a per-CPU counter at return while not
 * done.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "slowburn/ncclib.h"
#include "compat.bpf.h"
#include "bits.bpf.h"
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct post_call {
	__u64 comm;
	__u64 bytes;
	__u64 request_pp; /* void** request: where the callee writes the request */
	__u32 direction;
	__u32 tag;
	__u32 n; /* receives: buffers in the request */
	__u32 _pad;
};

/* LRU: a thread that died inside a post leaves nothing behind for good. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct post_call);
} posts SEC(".maps");

struct request_key {
	__u32 tgid;
	__u32 _pad;
	__u64 request;
};

struct request_info {
	__u64 post_ns;
	__u64 comm;
	__u64 bytes;
	__u32 direction;
	__u32 tag;
	__u32 n;
	__u32 _pad;
};

/* LRU: requests of a process that exited or aborted are never completed;
 * the oldest go first (a completion of one is then counted unknown_done). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct request_key);
	__type(value, struct request_info);
} requests SEC(".maps");

/* ncclIbTest's arguments from entry to return: a slot per thread, by tid,
 * no hashing on the hot path. Two threads whose tids share a slot, inside
 * the call at once, are told apart by the tid stored in it and counted. */
#define TEST_SLOTS 16384
struct test_call {
	__u64 request;
	__u64 done_ptr;
	__u64 sizes_ptr;
	__u32 tid;
	__u32 busy;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TEST_SLOTS);
	__type(key, __u32);
	__type(value, struct test_call);
} test_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} polls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct sb_ib_key);
	__type(value, struct sb_ib_stats);
} ib_stats SEC(".maps");

struct sb_ib_counters ib_counters = {};

static const struct sb_ib_stats zero_stats = {};

static __always_inline __u64 stack_arg(struct pt_regs *ctx, int index)
{
	/* x86-64: arguments 7+ are on the stack, above the return address. */
	__u64 value = 0;

	bpf_probe_read_user(&value, sizeof(value), (void *)(PT_REGS_SP(ctx) + 8 * (index - 6)));
	return value;
}

static __always_inline int remember_post(struct post_call *post)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	bpf_map_update_elem(&posts, &tid, post, BPF_ANY);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(ib_isend)
{
	struct post_call post = {
		.comm = PT_REGS_PARM1(ctx),
		.bytes = PT_REGS_PARM3(ctx),
		.request_pp = stack_arg(ctx, 7),
		.direction = SB_IB_SEND,
		.tag = (__u32)PT_REGS_PARM4(ctx),
	};

	return remember_post(&post);
}

SEC("uprobe")
int BPF_KPROBE(ib_irecv)
{
	__u64 sizes = PT_REGS_PARM4(ctx), tags = PT_REGS_PARM5(ctx);
	int n = (int)PT_REGS_PARM2(ctx);
	struct post_call post = {
		.comm = PT_REGS_PARM1(ctx),
		.request_pp = stack_arg(ctx, 8),
		.direction = SB_IB_RECV,
		.n = n > 0 && n <= SB_IB_MAX_RECVS ? n : SB_IB_MAX_RECVS,
	};

	for (int i = 0; i < SB_IB_MAX_RECVS; i++) {
		__u64 size = 0;

		if (i >= n)
			break;
		bpf_probe_read_user(&size, sizeof(size), (void *)(sizes + 8 * i));
		post.bytes += size;
	}
	bpf_probe_read_user(&post.tag, sizeof(post.tag), (void *)tags);
	return remember_post(&post);
}

SEC("uprobe")
int BPF_KPROBE(ib_iflush)
{
	__u64 sizes = PT_REGS_PARM4(ctx);
	int n = (int)PT_REGS_PARM2(ctx);
	struct post_call post = {
		.comm = PT_REGS_PARM1(ctx),
		.request_pp = PT_REGS_PARM6(ctx),
		.direction = SB_IB_FLUSH,
	};

	for (int i = 0; i < SB_IB_MAX_RECVS; i++) {
		int size = 0;

		if (i >= n)
			break;
		bpf_probe_read_user(&size, sizeof(size), (void *)(sizes + 4 * i));
		post.bytes += size > 0 ? size : 0;
	}
	return remember_post(&post);
}

/* The return of any of the three posts. */
SEC("uretprobe")
int BPF_KRETPROBE(ib_post_return, int result)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct post_call *post = bpf_map_lookup_elem(&posts, &tid);
	struct request_key key = { .tgid = pid_tgid >> 32 };
	struct request_info info;

	if (!post)
		return 0;
	if (result != 0 || bpf_probe_read_user(&key.request, sizeof(key.request), (void *)post->request_pp)) {
		bpf_map_delete_elem(&posts, &tid);
		return 0;
	}
	if (!key.request) {
		/* isend/irecv: the peer is not ready, NCCL calls again later. A
		 * flush with nothing to do (GPU Direct flush off) leaves NULL too:
		 * not a deferral. */
		if (post->direction != SB_IB_FLUSH)
			__sync_fetch_and_add(&ib_counters.posts_deferred, 1);
		bpf_map_delete_elem(&posts, &tid);
		return 0;
	}
	info.post_ns = bpf_ktime_get_ns();
	info.comm = post->comm;
	info.bytes = post->bytes;
	info.direction = post->direction;
	info.tag = post->tag;
	info.n = post->n;
	info._pad = 0;
	bpf_map_delete_elem(&posts, &tid);
	if (bpf_map_update_elem(&requests, &key, &info, BPF_ANY))
		__sync_fetch_and_add(&ib_counters.table_full, 1);
	else
		__sync_fetch_and_add(&ib_counters.posts, 1);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(ib_test, void *request, int *done, int *sizes)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 slot = tid % TEST_SLOTS;
	struct test_call *call = bpf_map_lookup_elem(&test_calls, &slot);

	if (!call)
		return 0;
	if (call->busy && call->tid != tid)
		__sync_fetch_and_add(&ib_counters.slot_clashes, 1);
	call->request = (__u64)request;
	call->done_ptr = (__u64)done;
	call->sizes_ptr = (__u64)sizes;
	call->tid = tid;
	call->busy = 1;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(ib_test_return)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid, slot = tid % TEST_SLOTS, zero = 0;
	struct test_call *call = bpf_map_lookup_elem(&test_calls, &slot);
	struct request_key key = { .tgid = pid_tgid >> 32 };
	struct request_info *info;
	struct sb_ib_stats *stats;
	struct sb_ib_key stats_key;
	__u64 *poll_count, latency_ns, bytes;
	int done = 0;

	if (!call)
		return 0;
	if (call->tid != tid) {
		/* Another thread took the slot while this one was inside. */
		__sync_fetch_and_add(&ib_counters.slot_clashes, 1);
		return 0;
	}
	call->busy = 0;
	poll_count = bpf_map_lookup_elem(&polls, &zero);
	if (poll_count)
		__sync_fetch_and_add(poll_count, 1); /* preemptible: another thread may share this CPU's copy */
	if (bpf_probe_read_user(&done, sizeof(done), (void *)call->done_ptr) || done != 1)
		return 0;

	key.request = call->request;
	info = bpf_map_lookup_elem(&requests, &key);
	if (!info) {
		__sync_fetch_and_add(&ib_counters.unknown_done, 1);
		return 0;
	}
	latency_ns = bpf_ktime_get_ns() - info->post_ns;
	bytes = info->bytes;
	if (info->direction == SB_IB_RECV && call->sizes_ptr) {
		/* What arrived: ncclIbTest writes the received size of each buffer. */
		__u64 received = 0;

		for (int i = 0; i < SB_IB_MAX_RECVS; i++) {
			int size = 0;

			if (i >= info->n)
				break;
			bpf_probe_read_user(&size, sizeof(size), (void *)(call->sizes_ptr + 4 * i));
			received += size > 0 ? size : 0;
		}
		bytes = received;
	}
	stats_key.tgid = key.tgid;
	stats_key.direction = info->direction;
	stats_key.comm = info->comm;
	stats = lookup_or_try_init(&ib_stats, &stats_key, &zero_stats);
	if (stats) {
		/* Per-CPU, but uprobe programs are preemptible: atomic adds. */
		__sync_fetch_and_add(&stats->lat_slots[log2_slot(latency_ns / 1000, SB_IB_LAT_SLOTS)], 1);
		__sync_fetch_and_add(&stats->size_slots[log2_slot(bytes, SB_IB_SIZE_SLOTS)], 1);
		__sync_fetch_and_add(&stats->requests, 1);
		__sync_fetch_and_add(&stats->bytes, bytes);
		__sync_fetch_and_add(&stats->total_ns, latency_ns);
	} else {
		__sync_fetch_and_add(&ib_counters.stats_full, 1);
	}
	__sync_fetch_and_add(&ib_counters.completions, 1);
	bpf_map_delete_elem(&requests, &key);
	return 0;
}
