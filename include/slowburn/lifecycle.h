/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How a traced rank's process ends, or stops (lifecycle.bpf.c): its exit
 * with the kernel's exit code, the signals sent to it that stop or end a
 * process (and who sent them), and the OOM killer's choice. Filtered in the
 * kernel to the processes user space names; rare: one record each.
 */
#ifndef SLOWBURN_LIFECYCLE_H
#define SLOWBURN_LIFECYCLE_H

#include "events.h"

#define SB_LIFECYCLE_VERSION 1

enum sb_lifecycle_kind {
	SB_LIFE_EXIT = 1,   /* the thread-group leader exited (sched_process_exit) */
	SB_LIFE_SIGNAL = 2, /* a signal that stops, ends or dumps a process was generated for it */
	SB_LIFE_OOM = 3,    /* the OOM killer chose it (oom:mark_victim) */
};

struct sb_lifecycle_event {
	struct sb_event_header hdr; /* type SB_EVENT_LIFECYCLE; pid: the traced process */
	__u32 kind;		    /* enum sb_lifecycle_kind */
	__s32 sig;		    /* SIGNAL: the signal */
	__s32 exit_code;	    /* EXIT: task->exit_code: status << 8, or the signal (| 0x80 with a core) */
	__s32 group_exit_code;	    /* EXIT: signal->group_exit_code (a group exit's, else 0) */
	__u32 sender_tgid;	    /* SIGNAL: the process that sent it (0: the kernel) */
	__u32 _pad;
	char sender_comm[16]; /* SIGNAL: its name */
};

#endif /* SLOWBURN_LIFECYCLE_H */
