/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Event ABI shared by the BPF programs and the C++ decoder.
 *
 * Every ring-buffer record starts with struct sb_event_header. A change of a
 * payload's layout bumps its version; the decoder rejects versions it does not
 * know with a counted error instead of misreading bytes.
 *
 * Fixed-width types only. The BPF side gets __u32 & co. from vmlinux.h, user
 * space from <linux/types.h>.
 */
#ifndef SLOWBURN_EVENTS_H
#define SLOWBURN_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

enum sb_event_type {
	SB_EVENT_CALL = 1,	/* one completed call of a uprobe-pair probe */
	SB_EVENT_KMSG = 2,	/* a kernel log line that passed the in-kernel filter */
	SB_EVENT_TP_RECORD = 3, /* a raw tracepoint record */
	SB_EVENT_VERBS = 4,	/* a libibverbs control-path call (QP lifecycle, async event) */
	SB_EVENT_LIFECYCLE = 5, /* a traced process exited, was sent a signal, or was chosen by the OOM killer */
};

struct sb_event_header {
	__u16 type;    /* enum sb_event_type */
	__u16 version; /* payload layout version for this type */
	__u32 pid;     /* thread-group id: the process */
	__u32 tid;     /* thread id */
	__u32 cpu;     /* CPU the record was produced on */
	__u64 ts_ns;   /* bpf_ktime_get_ns() when the record was produced */
};

#endif /* SLOWBURN_EVENTS_H */
