/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The calling thread's CPU time and run-queue wait so far: CO-RE reads of
 * the current task, at a call's entry and at its return (callpair and
 * collagg), whose differences say how much of the call it spent on a CPU
 * and how much runnable but waiting for one (a run queue, its cgroup's
 * quota). sum_exec_runtime is brought up to date at ticks and switches:
 * within a tick at each end, unbiased over many calls. run_delay exists
 * where the kernel has CONFIG_SCHED_INFO.
 */
#ifndef SLOWBURN_CPUTIMES_BPF_H
#define SLOWBURN_CPUTIMES_BPF_H

#include <bpf/bpf_core_read.h>
#include "slowburn/callpair.h"

/* Returns SB_CALL_HAS_CPU, with SB_CALL_HAS_RUNQ when runq_ns was read. */
static __always_inline __u32 read_cpu_times(__u64 *oncpu_ns, __u64 *runq_ns)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	*oncpu_ns = BPF_CORE_READ(task, se.sum_exec_runtime);
	if (!bpf_core_field_exists(task->sched_info.run_delay))
		return SB_CALL_HAS_CPU;
	*runq_ns = BPF_CORE_READ(task, sched_info.run_delay);
	return SB_CALL_HAS_CPU | SB_CALL_HAS_RUNQ;
}

#endif /* SLOWBURN_CPUTIMES_BPF_H */
