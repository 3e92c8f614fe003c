// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Collective aggregation for `slowburn probe`: one uprobe/uretprobe pair on
 * every traced collective, nothing per call sent to user space. Per
 * (process, probe) the kernel keeps cumulative sums in a per-CPU map: calls,
 * wait, compute gap, and for synchronizing collectives the arrival lateness
 * and the blame of arriving last. User space reads them once per window.
 *
 * Instances: a synchronizing collective releases all its ranks together, so
 * the first return after a run of entries ends the instance; the next entry
 * opens the next one. A rank returning late from instance k (its entry is
 * older than k+1's first arrival) is placed in k by the previous instance's
 * first arrival. The instance record is shared across CPUs without a lock
 * (tracing programs cannot take bpf_spin_lock): two ranks entering at the same
 * instant may swap last and second-to-last, which moves nanoseconds of blame.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "slowburn/collagg.h"
#include "bits.bpf.h"
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Processes to account, and the job each belongs to. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct sb_agg_target);
} targets SEC(".maps");

/* Calls in flight, per (thread, probe); LRU only as a backstop for threads
 * that die inside a call. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sb_call_key);
	__type(value, struct sb_agg_call_state);
} call_states SEC(".maps");

/* Each thread's latest traced return: the start of its compute gap. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} thread_exits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024); /* jobs x synchronizing probes */
	__type(key, struct sb_agg_instance_key);
	__type(value, struct sb_agg_instance);
} instances SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096); /* processes x probes */
	__type(key, struct sb_agg_key);
	__type(value, struct sb_agg_stats);
} stats SEC(".maps");

struct sb_collagg_counters counters = {};

static const struct sb_agg_instance zero_instance = {};
static const struct sb_agg_stats zero_stats = {};

static __always_inline struct sb_agg_stats *stats_of(__u32 tgid, __u32 probe_id)
{
	struct sb_agg_key key = { .tgid = tgid, .probe_id = probe_id };
	struct sb_agg_stats *s = lookup_or_try_init(&stats, &key, &zero_stats);

	if (!s)
		__sync_fetch_and_add(&counters.stats_full, 1);
	return s;
}

SEC("uprobe")
int BPF_KPROBE(agg_enter)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct sb_agg_call_state state = { .entry_ns = bpf_ktime_get_ns() };
	struct sb_call_key key = { .tid = (__u32)pid_tgid, .probe_id = cookie & SB_COOKIE_PROBE_MASK };
	struct sb_agg_instance_key ikey;
	struct sb_agg_instance *inst;
	struct sb_agg_target *target;

	target = bpf_map_lookup_elem(&targets, &tgid);
	if (!target)
		return 0;
	if (bpf_map_update_elem(&call_states, &key, &state, BPF_ANY)) {
		__sync_fetch_and_add(&counters.state_failures, 1);
		return 0;
	}
	if (!(cookie & SB_COOKIE_SYNC))
		return 0;

	ikey.job_slot = target->job_slot;
	ikey.probe_id = key.probe_id;
	inst = lookup_or_try_init(&instances, &ikey, &zero_instance);
	if (!inst)
		return 0;
	if (inst->closed || !inst->arrivals) {
		inst->prev_first_entry_ns = inst->first_entry_ns;
		inst->first_entry_ns = state.entry_ns;
		inst->second_entry_ns = 0;
		inst->arrivals = 0;
		inst->closed = 0;
	} else {
		inst->second_entry_ns = inst->last_entry_ns;
	}
	inst->last_entry_ns = state.entry_ns;
	inst->last_tgid = tgid;
	inst->arrivals += 1;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(agg_exit)
{
	__u64 exit_ns = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct sb_call_key key = { .tid = tid, .probe_id = cookie & SB_COOKIE_PROBE_MASK };
	struct sb_agg_instance_key ikey;
	struct sb_agg_call_state *state;
	struct sb_agg_instance *inst;
	struct sb_agg_target *target;
	struct sb_agg_stats *s, *blamed;
	__u64 entry_ns, wait_ns, *last_exit;
	__u32 last_tgid;
	__u64 blame_ns;

	target = bpf_map_lookup_elem(&targets, &tgid);
	if (!target)
		return 0;
	state = bpf_map_lookup_elem(&call_states, &key);
	if (!state) {
		__sync_fetch_and_add(&counters.orphan_returns, 1);
		return 0;
	}
	entry_ns = state->entry_ns;
	bpf_map_delete_elem(&call_states, &key);
	wait_ns = exit_ns - entry_ns;

	s = stats_of(tgid, key.probe_id);
	if (!s)
		return 0;
	/* Per-CPU, but uprobe programs are preemptible: atomic adds on
	 * CPU-local memory cost next to nothing. */
	__sync_fetch_and_add(&s->calls, 1);
	__sync_fetch_and_add(&s->wait_ns, wait_ns);
	__sync_fetch_and_add(&s->slots[log2_slot(wait_ns / 1000, SB_HIST_SLOTS)], 1);

	last_exit = bpf_map_lookup_elem(&thread_exits, &tid);
	if (last_exit && *last_exit >= target->since_ns && *last_exit < entry_ns) {
		__sync_fetch_and_add(&s->gaps, 1);
		__sync_fetch_and_add(&s->gap_ns, entry_ns - *last_exit);
	}
	if (last_exit)
		*last_exit = exit_ns;
	else
		bpf_map_update_elem(&thread_exits, &tid, &exit_ns, BPF_ANY);

	if (!(cookie & SB_COOKIE_SYNC))
		return 0;
	ikey.job_slot = target->job_slot;
	ikey.probe_id = key.probe_id;
	inst = bpf_map_lookup_elem(&instances, &ikey);
	if (!inst)
		return 0;
	if (inst->first_entry_ns && entry_ns >= inst->first_entry_ns) {
		__sync_fetch_and_add(&s->arrivals, 1);
		__sync_fetch_and_add(&s->lateness_ns, entry_ns - inst->first_entry_ns);
		if (inst->closed)
			return 0;
		/* The first return ends the instance: every rank has arrived. */
		inst->closed = 1;
		__sync_fetch_and_add(&s->instances, 1);
		if (inst->arrivals < 2)
			return 0;
		last_tgid = inst->last_tgid;
		blame_ns = inst->last_entry_ns - inst->second_entry_ns;
		/* A rank forgotten meanwhile (it exited) is not brought back. */
		if (last_tgid != tgid && !bpf_map_lookup_elem(&targets, &last_tgid))
			return 0;
		blamed = last_tgid == tgid ? s : stats_of(last_tgid, key.probe_id);
		if (blamed) {
			__sync_fetch_and_add(&blamed->lasts, 1);
			__sync_fetch_and_add(&blamed->blame_ns, blame_ns);
		}
	} else if (inst->prev_first_entry_ns && entry_ns >= inst->prev_first_entry_ns) {
		__sync_fetch_and_add(&s->arrivals, 1);
		__sync_fetch_and_add(&s->lateness_ns, entry_ns - inst->prev_first_entry_ns);
	} else {
		__sync_fetch_and_add(&counters.unplaced, 1);
	}
	return 0;
}
