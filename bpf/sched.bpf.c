// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The traced ranks' time off the CPU, by reason, and who ran instead.
 *
 * raw_tp/sched_switch and sched_wakeup(_new) run on every context switch of
 * the node: each costs two hash lookups for processes that are not traced
 * (the targets map) and returns. For a traced thread it keeps when it left
 * the CPU and why (preempted, or asleep in which kind of wait), and on its
 * return adds the time to its process's sums; a wait in a run queue also
 * goes to a log2 histogram and charges the process that held the CPU during
 * it. Nothing is sent to user space: it reads the sums (bench/RESULTS.md
 * section 14 measures the cost).
 *
 * raw_tp, not tp_btf: it attaches on every kernel slowburn supports (5.15+)
 * and needs no BTF-typed context; the task pointers are read with CO-RE.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "slowburn/sched.h"
#include "bits.bpf.h"
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define TASK_INTERRUPTIBLE   0x1
#define TASK_UNINTERRUPTIBLE 0x2

#if defined(__TARGET_ARCH_x86)
#define SYS_FUTEX 202
#elif defined(__TARGET_ARCH_arm64)
#define SYS_FUTEX 98
#else
#define SYS_FUTEX -2
#endif
#define SYS_FUTEX_WAITV 449 /* the same number on every architecture */

/* Processes to follow: tgid -> 1, written by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct thread_state {
	__u64 on_ns;  /* when it got its CPU; 0 while off */
	__u64 off_ns; /* when it left it, or was woken (the run-queue wait starts); 0 while on */
	__u32 reason; /* enum sb_offcpu_reason of the time since off_ns */
	__u32 _pad;
};

/* Per traced thread. LRU: a thread that exits is never switched in again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct thread_state);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct sb_sched_stats);
} stats SEC(".maps");

/* When the task now on each CPU got it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} cpu_since SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct sb_share_key);
	__type(value, struct sb_share);
} shares SEC(".maps");

static const struct sb_sched_stats zero_stats = {};
static const struct thread_state zero_thread = {};
static const struct sb_share zero_share = {};

static __always_inline bool traced(__u32 tgid)
{
	return tgid && bpf_map_lookup_elem(&targets, &tgid);
}

/* The kind of wait a thread that is switched out to sleep enters. At the
 * switch it is still the current task, so its registers say which system
 * call (if any) it sleeps in. */
static __always_inline __u32 sleep_reason(unsigned int state)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	long nr;

#if defined(__TARGET_ARCH_x86)
	nr = (long)BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	nr = (long)BPF_CORE_READ(regs, syscallno);
#else
	nr = -1;
#endif
	if (state & TASK_UNINTERRUPTIBLE)
		return nr < 0 ? SB_OFF_FAULT : SB_OFF_IO;
	if (nr == SYS_FUTEX || nr == SYS_FUTEX_WAITV)
		return SB_OFF_FUTEX;
	return SB_OFF_SLEEP;
}

static __always_inline struct sb_sched_stats *stats_of(__u32 tgid)
{
	return lookup_or_try_init(&stats, &tgid, &zero_stats);
}

static __always_inline void switched_out(struct task_struct *prev, __u32 tgid, bool preempt, __u64 now)
{
	__u32 tid = BPF_CORE_READ(prev, pid);
	unsigned int state = BPF_CORE_READ(prev, __state);
	struct thread_state *t = lookup_or_try_init(&threads, &tid, &zero_thread);
	struct sb_sched_stats *s = stats_of(tgid);
	bool runnable = preempt || state == 0;

	if (!t || !s)
		return;
	if (t->on_ns && now > t->on_ns)
		s->oncpu_ns += now - t->on_ns;
	t->on_ns = 0;
	t->off_ns = now;
	if (runnable) {
		t->reason = SB_OFF_RUNNABLE;
		s->involuntary_switches++;
	} else {
		t->reason = sleep_reason(state);
		s->voluntary_switches++;
	}
}

/* The CPU went from `prev` (on it since `prev_since`) to the traced thread,
 * which waited in the run queue since `waited_from`: prev ran during that
 * wait. The idle task never keeps anyone waiting. */
static __always_inline void charge_share(__u32 tgid, struct task_struct *prev, __u64 waited_from, __u64 prev_since,
					 __u64 now)
{
	__u32 prev_pid = BPF_CORE_READ(prev, pid);
	struct sb_share_key key = {};
	struct sb_share *share;
	__u64 from = waited_from > prev_since ? waited_from : prev_since;

	if (prev_pid == 0 || now <= from)
		return;
	key.tgid = tgid;
	key.other_tgid = BPF_CORE_READ(prev, tgid);
	key.cpu = bpf_get_smp_processor_id();
	if (key.other_tgid == tgid)
		return; /* its own threads: not another process's doing */
	share = lookup_or_try_init(&shares, &key, &zero_share);
	if (!share)
		return;
	/* Its latest name, read each time: a process first seen before its
	 * exec (a launcher's fork becoming the data loader) is named as it
	 * runs now, not as the fork it was. */
	BPF_CORE_READ_STR_INTO(&share->comm, prev, comm);
	__sync_fetch_and_add(&share->ns, now - from);
}

static __always_inline void switched_in(struct task_struct *next, struct task_struct *prev, __u32 tgid,
					__u64 prev_since, __u64 now)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	struct thread_state *t = bpf_map_lookup_elem(&threads, &tid);
	struct sb_sched_stats *s;

	if (!t) {
		/* First seen on a CPU: nothing to account before. */
		struct thread_state fresh = { .on_ns = now };

		bpf_map_update_elem(&threads, &tid, &fresh, BPF_ANY);
		return;
	}
	s = stats_of(tgid);
	if (s && t->off_ns && now > t->off_ns) {
		__u64 off = now - t->off_ns;
		__u32 reason = t->reason < SB_OFF_REASONS ? t->reason : SB_OFF_SLEEP;

		s->offcpu_ns[reason] += off;
		if (reason == SB_OFF_RUNNABLE) {
			s->runq_waits++;
			s->runq_slots[log2_slot(off, SB_SCHED_HIST_SLOTS)]++;
			charge_share(tgid, prev, t->off_ns, prev_since, now);
		}
	}
	t->off_ns = 0;
	t->on_ns = now;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sb_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 zero = 0;
	__u64 *since = bpf_map_lookup_elem(&cpu_since, &zero);
	__u64 now = bpf_ktime_get_ns();
	__u64 prev_since = since ? *since : 0;
	__u32 prev_tgid = BPF_CORE_READ(prev, tgid);
	__u32 next_tgid = BPF_CORE_READ(next, tgid);

	if (since)
		*since = now;
	if (traced(prev_tgid))
		switched_out(prev, prev_tgid, preempt, now);
	if (traced(next_tgid))
		switched_in(next, prev, next_tgid, prev_since, now);
	return 0;
}

/* Woken from a sleep: the sleep ends, the wait for a CPU begins. */
static __always_inline void woken(struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	__u32 tid;
	struct thread_state *t;
	struct sb_sched_stats *s;
	__u64 now;

	if (!traced(tgid))
		return;
	tid = BPF_CORE_READ(p, pid);
	t = bpf_map_lookup_elem(&threads, &tid);
	if (!t || !t->off_ns || t->reason == SB_OFF_RUNNABLE)
		return;
	now = bpf_ktime_get_ns();
	s = stats_of(tgid);
	if (s && now > t->off_ns)
		s->offcpu_ns[t->reason < SB_OFF_REASONS ? t->reason : SB_OFF_SLEEP] += now - t->off_ns;
	t->off_ns = now;
	t->reason = SB_OFF_RUNNABLE;
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sb_sched_wakeup, struct task_struct *p)
{
	woken(p);
	return 0;
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(sb_sched_wakeup_new, struct task_struct *p)
{
	woken(p);
	return 0;
}
