// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One uprobe/uretprobe pair for every traced function. The attachment's
 * bpf_cookie says which probe fired (see include/slowburn/callpair.h), so
 * one loaded object serves MPI, NCCL and CUDA call sites alike.
 *
 * Entry: remember the entry time and the arguments the cookie names (size,
 * communicator, its sequence number, a key) per (thread, probe). Return:
 * add the duration to a per-CPU log2 histogram keyed by (process, probe,
 * communicator) and, unless records are off, emit one ring-buffer record.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "slowburn/callpair.h"
#include "bits.bpf.h"
#include "callargs.bpf.h"
#include "cputimes.bpf.h"
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Knobs, set by user space between open and load. */
const volatile __u32 targ_tgid = 0;	  /* 0: every process the probe is attached in */
const volatile __u64 targ_min_ns = 0;	  /* records only for calls at least this long */
const volatile __u64 hist_unit_ns = 1000; /* histogram unit: 1 ns, 1000 us, 1000000 ms */
const volatile bool emit_records = true;  /* false: histograms only (funclat) */
/* Wake the consumer only once this much is pending: a wakeup per record
 * costs more than the rest of the probe. User space also polls on a timer,
 * so records never wait longer than that period. */
const volatile __u64 wakeup_bytes = 256 * 1024;

/* Entry state lives from entry to return only, so the map holds the calls
 * in flight (what a hang looks like) and nothing else: an old hung call is
 * never crowded out by threads that came and went. LRU only as a backstop
 * for threads that die inside a call. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384); /* calls in flight; user space may resize */
	__type(key, struct sb_call_key);
	__type(value, struct sb_call_state);
} call_states SEC(".maps");

/* Records emitted per (thread, probe): numbers them so user space can tell a
 * lost record from a missing call. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sb_call_key);
	__type(value, __u64);
} record_seqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096); /* processes x probes */
	__type(key, struct sb_hist_key);
	__type(value, struct sb_hist);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} events SEC(".maps");

struct sb_callpair_counters counters = {};

static const __u64 zero_seq = 0;
static const struct sb_hist zero_hist = {};

/* The per-(thread, probe) state key of the current call; false when the
 * process is filtered out. */
static __always_inline bool current_call(struct pt_regs *ctx, __u64 *cookie, struct sb_call_key *key, __u32 *tgid)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	*tgid = pid_tgid >> 32;
	if (targ_tgid && *tgid != targ_tgid)
		return false;
	*cookie = bpf_get_attach_cookie(ctx);
	key->tid = (__u32)pid_tgid;
	key->probe_id = *cookie & SB_COOKIE_PROBE_MASK;
	return true;
}

SEC("uprobe")
int BPF_KPROBE(call_enter)
{
	struct sb_call_key key;
	struct sb_call_state state = {};
	__u64 cookie;
	__u32 tgid;

	if (!current_call(ctx, &cookie, &key, &tgid))
		return 0;
	state.tgid = tgid;
	read_call_args(ctx, cookie, &state.args);
	if (emit_records) /* histograms alone (funclat) never use them */
		state.args.flags |= read_cpu_times(&state.oncpu_at_ns, &state.runq_at_ns);
	state.entry_ns = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&call_states, &key, &state, BPF_ANY))
		__sync_fetch_and_add(&counters.state_failures, 1);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(call_exit)
{
	__u64 exit_ns = bpf_ktime_get_ns();
	struct sb_hist_key hist_key;
	struct sb_call_key key;
	struct sb_call_state *state;
	struct sb_call_event *event;
	struct sb_hist *hist;
	struct sb_call_args args;
	__u64 entry_ns, duration_ns, out_value, cookie, *seq, oncpu_at_ns, runq_at_ns, oncpu_ns = 0, runq_ns = 0;
	__u32 tgid, flags;

	if (!current_call(ctx, &cookie, &key, &tgid))
		return 0;

	state = bpf_map_lookup_elem(&call_states, &key);
	if (!state) {
		__sync_fetch_and_add(&counters.orphan_returns, 1);
		return 0;
	}
	entry_ns = state->entry_ns;
	args = state->args;
	oncpu_at_ns = state->oncpu_at_ns;
	runq_at_ns = state->runq_at_ns;
	bpf_map_delete_elem(&call_states, &key);
	duration_ns = exit_ns - entry_ns;
	flags = args.flags;
	read_call_out(&args, &out_value, &flags);

	hist_key.tgid = tgid;
	hist_key.probe_id = key.probe_id;
	hist_key.comm = args.comm;
	hist = lookup_or_try_init(&hists, &hist_key, &zero_hist);
	if (hist) {
		/* Per-CPU, but uprobe programs are preemptible: another thread on
		 * this CPU may run the same update in between. Atomic adds on
		 * CPU-local memory cost next to nothing. */
		__sync_fetch_and_add(&hist->slots[log2_slot(duration_ns / hist_unit_ns, SB_HIST_SLOTS)], 1);
		__sync_fetch_and_add(&hist->count, 1);
		__sync_fetch_and_add(&hist->total_ns, duration_ns);
	}

	if (!emit_records || duration_ns < targ_min_ns)
		return 0;

	seq = lookup_or_try_init(&record_seqs, &key, &zero_seq);
	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (seq)
		*seq += 1; /* numbered even when dropped: the gap shows the loss */
	if (!event) {
		__sync_fetch_and_add(&counters.ringbuf_drops, 1);
		return 0;
	}
	event->hdr.type = SB_EVENT_CALL;
	event->hdr.version = SB_CALL_EVENT_VERSION;
	event->hdr.pid = tgid;
	event->hdr.tid = key.tid;
	event->hdr.cpu = bpf_get_smp_processor_id();
	event->hdr.ts_ns = exit_ns;
	event->probe_id = key.probe_id;
	event->flags = flags;
	event->seq = seq ? *seq : 0;
	event->entry_ns = entry_ns;
	event->exit_ns = exit_ns;
	event->size_arg = args.size_arg;
	event->aux_arg = args.aux_arg;
	event->comm = args.comm;
	event->comm_seq = args.comm_seq;
	event->out_value = out_value;
	event->key_hash = args.key_hash;
	event->ret = PT_REGS_RC(ctx);
	if (flags & SB_CALL_HAS_CPU) {
		read_cpu_times(&oncpu_ns, &runq_ns);
		event->oncpu_ns = oncpu_ns > oncpu_at_ns ? oncpu_ns - oncpu_at_ns : 0;
		event->runq_ns = (flags & SB_CALL_HAS_RUNQ) && runq_ns > runq_at_ns ? runq_ns - runq_at_ns : 0;
	} else {
		event->oncpu_ns = 0;
		event->runq_ns = 0;
	}
	bpf_ringbuf_submit(event, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
												: BPF_RB_NO_WAKEUP);
	return 0;
}
