// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Collective aggregation for `slowburn probe`: one uprobe/uretprobe pair on
 * every traced collective, nothing per call sent to user space. Per
 * (process, probe, communicator) the kernel keeps cumulative sums in a
 * per-CPU map: calls, wait, compute gap, and for synchronizing collectives
 * the arrival lateness and the blame of arriving last. User space reads
 * them once per window.
 *
 * Communicators: a call's handle (read as its cookie says, callargs.bpf.h)
 * is looked up in comm_slots, which user space fills once it has named the
 * handle (the same slot on every member); a handle without a slot is left
 * in new_comms for it and counted under slot 0 meanwhile.
 *
 * Instances (the same meaning as user space's detect/aligner.h, exit-time
 * side; tests/bpf/conformance_test.cpp holds them to it): a synchronizing
 * collective releases all its ranks together, so the first return after a
 * run of entries ends the instance (its release); the next entry opens the
 * next one. A rank returning late from instance k (its entry is older than
 * k+1's first arrival) is placed in k by the previous instance's first
 * arrival. The instance record is shared across CPUs without a lock (tracing
 * programs cannot take bpf_spin_lock): two ranks entering at the same
 * instant may swap last and second-to-last, which moves nanoseconds of blame.
 *
 * Blame: the last arrival's lead over the second-to-last, as far as its own
 * delay since its previous collective released it explains it (a rank
 * released late by another collective is not the culprit here), less its
 * usual time to leave that collective (sb_leave_allowance).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "slowburn/collagg.h"
#include "bits.bpf.h"
#include "callargs.bpf.h"
#include "cputimes.bpf.h"
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

/* Each process's latest return and release. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct sb_agg_process);
} processes SEC(".maps");

/* Named communicator handles: user space writes them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sb_agg_comm_key);
	__type(value, __u32);
} comm_slots SEC(".maps");

/* Handles seen without a slot, for user space to name. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct sb_agg_comm_key);
	__type(value, struct sb_agg_new_comm);
} new_comms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* jobs x communicators x synchronizing probes */
	__type(key, struct sb_agg_instance_key);
	__type(value, struct sb_agg_instance);
} instances SEC(".maps");

/* Each (process, probe, communicator)'s usual time to leave the collective
 * after its release: shared by the process's threads, so not per-CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct sb_agg_key);
	__type(value, __u64);
} leaving SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 8192); /* processes x communicators x probes */
	__type(key, struct sb_agg_key);
	__type(value, struct sb_agg_stats);
} stats SEC(".maps");

struct sb_collagg_counters counters = {};

/* The sequential test's lead floor, in basis points of the step (user space
 * sets it from DetectorConfig::sequential_lead_share before load). */
const volatile __u64 seq_lead_share_bp = 1000;

static const struct sb_agg_instance zero_instance = {};
static const struct sb_agg_stats zero_stats = {};
static const __u64 zero_u64;

static __always_inline struct sb_agg_stats *stats_of(__u32 tgid, __u32 probe_id, __u32 comm_slot)
{
	struct sb_agg_key key = { .tgid = tgid, .probe_id = probe_id, .comm_slot = comm_slot };
	struct sb_agg_stats *s = lookup_or_try_init(&stats, &key, &zero_stats);

	if (!s)
		__sync_fetch_and_add(&counters.stats_full, 1);
	return s;
}

/* The call's communicator slot: 0 until user space has named its handle. */
static __always_inline __u32 comm_slot_of(struct pt_regs *ctx, __u64 cookie, __u32 tgid, __u32 probe_id, __u64 now_ns)
{
	struct sb_agg_comm_key key = { .tgid = tgid };
	struct sb_agg_new_comm seen = { .probe_id = probe_id, .first_ns = now_ns };
	__u32 flags = 0, *slot;
	__u64 raw;

	key.handle = read_comm(ctx, cookie, &raw, &flags);
	if (!key.handle)
		return 0;
	slot = bpf_map_lookup_elem(&comm_slots, &key);
	if (slot)
		return *slot;
	bpf_map_update_elem(&new_comms, &key, &seen, BPF_NOEXIST);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(agg_enter)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct sb_agg_call_state state = { .entry_ns = bpf_ktime_get_ns(),
					   .since_release_ns = SB_AGG_UNKNOWN,
					   .tgid = tgid };
	struct sb_call_key key = { .tid = (__u32)pid_tgid, .probe_id = cookie & SB_COOKIE_PROBE_MASK };
	struct sb_agg_instance_key ikey = {};
	struct sb_agg_instance *inst;
	struct sb_agg_target *target;
	struct sb_agg_process *proc;
	__u64 excess_ns = 0;

	target = bpf_map_lookup_elem(&targets, &tgid);
	if (!target)
		return 0;
	state.comm_slot = comm_slot_of(ctx, cookie, tgid, key.probe_id, state.entry_ns);
	if (cookie & SB_COOKIE_SYNC)
		state.cpu_flags = read_cpu_times(&state.oncpu_at_ns, &state.runq_at_ns);
	proc = bpf_map_lookup_elem(&processes, &tgid);
	/* A release before the process became a target is not its own. */
	if (proc && proc->last_release_ns >= target->since_ns)
		sb_arrival_since(proc->last_exit_ns, proc->last_release_ns, state.entry_ns, &state.since_release_ns,
				 &excess_ns);
	if (bpf_map_update_elem(&call_states, &key, &state, BPF_ANY)) {
		__sync_fetch_and_add(&counters.state_failures, 1);
		return 0;
	}
	if (!(cookie & SB_COOKIE_SYNC))
		return 0;

	ikey.job_slot = target->job_slot;
	ikey.probe_id = key.probe_id;
	ikey.comm_slot = state.comm_slot;
	inst = lookup_or_try_init(&instances, &ikey, &zero_instance);
	if (inst && sb_instance_arrive(inst, state.entry_ns, state.since_release_ns, excess_ns, tgid))
		__sync_fetch_and_add(&counters.open_races, 1);
	return 0;
}

/* When its collective let this return go (slowburn/instance_rules.h's
 * sb_let_go, with the (process, probe, communicator)'s usual time to leave). */
static __always_inline __u64 let_go(__u32 tgid, __u32 probe_id, __u32 comm_slot, __u64 release_ns, __u64 exit_ns)
{
	struct sb_agg_key key = { .tgid = tgid, .probe_id = probe_id, .comm_slot = comm_slot };
	__u64 *usual;

	/* Not placed (a call that releases nobody): no map touched on its way. */
	if (!release_ns)
		return exit_ns;
	usual = lookup_or_try_init(&leaving, &key, &zero_u64);
	if (!usual)
		return release_ns;
	return sb_let_go(release_ns, exit_ns, usual);
}

/* The instance a return closes: its last arrival is blamed for its lead,
 * and the sequential test's event counted. */
static __always_inline void blame_last(struct sb_agg_instance *inst, __u32 tgid, __u32 probe_id, __u32 comm_slot,
				       struct sb_agg_stats *s, __u64 exit_ns)
{
	struct sb_agg_stats *blamed;
	__u32 last_tgid = inst->last_tgid;
	__u64 lead_ns, leaving_ns, step_ns;

	if (inst->arrivals < 2)
		return;
	/* A rank forgotten meanwhile (it exited) is not brought back. */
	if (last_tgid != tgid && !bpf_map_lookup_elem(&targets, &last_tgid))
		return;
	blamed = last_tgid == tgid ? s : stats_of(last_tgid, probe_id, comm_slot);
	if (!blamed)
		return;
	lead_ns =
	    sb_self_caused_lead(inst->last_entry_ns, inst->second_entry_ns, inst->last_since_ns, inst->second_since_ns);
	leaving_ns = sb_lead_from_leaving(lead_ns, inst->last_excess_ns, inst->second_excess_ns);
	step_ns = inst->prev_closed_ns && exit_ns > inst->prev_closed_ns ? exit_ns - inst->prev_closed_ns : 0;
	__sync_fetch_and_add(&blamed->lasts, 1);
	__sync_fetch_and_add(&blamed->blame_ns, lead_ns);
	__sync_fetch_and_add(&blamed->blame_leaving_ns, leaving_ns);
	if (sb_seq_event(inst->arrivals, lead_ns, leaving_ns, step_ns, seq_lead_share_bp))
		__sync_fetch_and_add(&blamed->seq_events, 1);
}

/* A synchronizing return: its instance, lateness and blame. Returns when
 * its collective released it (0: not placed). */
static __always_inline __u64 place_return(__u32 tgid, __u32 probe_id, __u32 comm_slot, struct sb_agg_target *target,
					  struct sb_agg_stats *s, __u64 entry_ns, __u64 exit_ns)
{
	struct sb_agg_instance_key ikey = { .job_slot = target->job_slot,
					    .probe_id = probe_id,
					    .comm_slot = comm_slot };
	struct sb_agg_instance *inst = bpf_map_lookup_elem(&instances, &ikey);
	struct sb_placed placed = {};
	int where;

	if (!inst)
		return 0;
	where = sb_instance_place(inst, entry_ns, exit_ns, &placed);
	if (where == SB_UNPLACED) {
		__sync_fetch_and_add(&counters.unplaced, 1);
		return 0;
	}
	__sync_fetch_and_add(&s->arrivals, 1);
	__sync_fetch_and_add(&s->lateness_ns, placed.lateness_ns);
	if (where == SB_PLACED_CLOSES) {
		__sync_fetch_and_add(&s->instances, 1);
		blame_last(inst, tgid, probe_id, comm_slot, s, exit_ns);
	}
	return placed.release_ns;
}

SEC("uretprobe")
int BPF_KRETPROBE(agg_exit)
{
	__u64 exit_ns = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct sb_call_key key = { .tid = tid, .probe_id = cookie & SB_COOKIE_PROBE_MASK };
	struct sb_agg_process fresh = {}, *proc;
	struct sb_agg_call_state *state;
	struct sb_agg_target *target;
	struct sb_agg_stats *s;
	__u64 entry_ns, wait_ns, release_ns = 0, oncpu_at_ns, runq_at_ns, oncpu_ns = 0, runq_ns = 0;
	__u32 comm_slot, cpu_flags;

	target = bpf_map_lookup_elem(&targets, &tgid);
	if (!target)
		return 0;
	state = bpf_map_lookup_elem(&call_states, &key);
	if (!state) {
		__sync_fetch_and_add(&counters.orphan_returns, 1);
		return 0;
	}
	entry_ns = state->entry_ns;
	comm_slot = state->comm_slot;
	oncpu_at_ns = state->oncpu_at_ns;
	runq_at_ns = state->runq_at_ns;
	cpu_flags = state->cpu_flags;
	bpf_map_delete_elem(&call_states, &key);
	wait_ns = exit_ns - entry_ns;

	s = stats_of(tgid, key.probe_id, comm_slot);
	if (!s)
		return 0;
	/* Per-CPU, but uprobe programs are preemptible: atomic adds on
	 * CPU-local memory cost next to nothing. */
	__sync_fetch_and_add(&s->calls, 1);
	__sync_fetch_and_add(&s->wait_ns, wait_ns);
	__sync_fetch_and_add(&s->slots[log2_slot(wait_ns / 1000, SB_HIST_SLOTS)], 1);
	if (cpu_flags & SB_CALL_HAS_CPU) {
		read_cpu_times(&oncpu_ns, &runq_ns);
		__sync_fetch_and_add(&s->cpu_calls, 1);
		__sync_fetch_and_add(&s->cpu_wait_ns, wait_ns);
		if (oncpu_ns > oncpu_at_ns)
			__sync_fetch_and_add(&s->oncpu_ns, oncpu_ns - oncpu_at_ns);
		if (cpu_flags & SB_CALL_HAS_RUNQ) {
			__sync_fetch_and_add(&s->runq_calls, 1);
			if (runq_ns > runq_at_ns)
				__sync_fetch_and_add(&s->runq_ns, runq_ns - runq_at_ns);
		}
	}

	/* The compute gap: since the process's latest traced return, on any
	 * thread (gloo runs a group's collectives on whichever worker is free). */
	proc = bpf_map_lookup_elem(&processes, &tgid);
	if (proc && proc->last_exit_ns >= target->since_ns && proc->last_exit_ns < entry_ns) {
		__sync_fetch_and_add(&s->gaps, 1);
		__sync_fetch_and_add(&s->gap_ns, entry_ns - proc->last_exit_ns);
	}
	if (cookie & SB_COOKIE_SYNC)
		release_ns = place_return(tgid, key.probe_id, comm_slot, target, s, entry_ns, exit_ns);
	release_ns = let_go(tgid, key.probe_id, comm_slot, release_ns, exit_ns);
	if (proc) {
		if (exit_ns > proc->last_exit_ns)
			proc->last_exit_ns = exit_ns;
		proc->last_release_ns = release_ns;
	} else {
		fresh.last_exit_ns = exit_ns;
		fresh.last_release_ns = release_ns;
		bpf_map_update_elem(&processes, &tgid, &fresh, BPF_ANY);
	}
	return 0;
}
