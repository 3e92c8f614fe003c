// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * How the traced ranks end or stop: the kernel's exit code when a rank's
 * process exits, the signals that stop or end it (and who sent them), and
 * the OOM killer's choice. What `slowburn trace` turns into failure
 * findings and into the kernel's view of a hang ("stopped by SIGSTOP",
 * "killed by SIGKILL from pid 4242").
 *
 * raw_tp/sched_process_exit and raw_tp/signal_generate: their task
 * arguments (the exiting task; the signal's target) are the same on every
 * kernel slowburn supports (5.15+), read with CO-RE, so a signal sent to any
 * thread of a rank is seen as the rank's. oom:mark_victim is read as a
 * tracepoint record: its `pid` field is the same since 4.x while its
 * arguments changed (6.8: the task, not its pid).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "slowburn/lifecycle.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Processes to follow: tgid -> 1, written by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} events SEC(".maps");

__u64 ringbuf_drops = 0;

/* The signals that stop, end or dump a process (asm-generic numbers, x86 and arm64 alike). */
static __always_inline bool decisive(int sig)
{
	switch (sig) {
	case 1:	 /* SIGHUP */
	case 2:	 /* SIGINT */
	case 3:	 /* SIGQUIT */
	case 4:	 /* SIGILL */
	case 6:	 /* SIGABRT */
	case 7:	 /* SIGBUS */
	case 8:	 /* SIGFPE */
	case 9:	 /* SIGKILL */
	case 11: /* SIGSEGV */
	case 15: /* SIGTERM */
	case 18: /* SIGCONT */
	case 19: /* SIGSTOP */
	case 20: /* SIGTSTP */
		return true;
	}
	return false;
}

static __always_inline struct sb_lifecycle_event *reserve(__u32 tgid, __u32 kind)
{
	struct sb_lifecycle_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	if (!e) {
		__sync_fetch_and_add(&ringbuf_drops, 1);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->hdr.type = SB_EVENT_LIFECYCLE;
	e->hdr.version = SB_LIFECYCLE_VERSION;
	e->hdr.pid = tgid;
	e->hdr.tid = (__u32)pid_tgid;
	e->hdr.cpu = bpf_get_smp_processor_id();
	e->hdr.ts_ns = bpf_ktime_get_ns();
	e->kind = kind;
	return e;
}

SEC("raw_tp/sched_process_exit")
int lifecycle_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *task = (struct task_struct *)ctx->args[0];
	__u32 tgid = BPF_CORE_READ(task, tgid), pid = BPF_CORE_READ(task, pid);
	struct sb_lifecycle_event *e;

	/* The process ends with its leader (a thread's own exit is not the rank's). */
	if (pid != tgid || !bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	e = reserve(tgid, SB_LIFE_EXIT);
	if (!e)
		return 0;
	e->exit_code = BPF_CORE_READ(task, exit_code);
	e->group_exit_code = BPF_CORE_READ(task, signal, group_exit_code);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("raw_tp/signal_generate")
int lifecycle_signal(struct bpf_raw_tracepoint_args *ctx)
{
	int sig = (int)ctx->args[0];
	struct task_struct *target = (struct task_struct *)ctx->args[2], *sender;
	__u32 tgid;
	struct sb_lifecycle_event *e;

	if (!decisive(sig) || !target)
		return 0;
	tgid = BPF_CORE_READ(target, tgid);
	if (!bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	e = reserve(tgid, SB_LIFE_SIGNAL);
	if (!e)
		return 0;
	sender = (struct task_struct *)bpf_get_current_task();
	e->sig = sig;
	e->sender_tgid = BPF_CORE_READ(sender, tgid);
	bpf_get_current_comm(e->sender_comm, sizeof(e->sender_comm));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp/oom/mark_victim")
int lifecycle_oom(struct trace_event_raw_mark_victim *ctx)
{
	__u32 tgid = (__u32)ctx->pid;
	struct sb_lifecycle_event *e;

	if (!bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	e = reserve(tgid, SB_LIFE_OOM);
	if (e)
		bpf_ringbuf_submit(e, 0);
	return 0;
}
