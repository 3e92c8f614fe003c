/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Records of the hardware-signal programs: kernel log lines that are NVIDIA
 * Xid/SXid reports (kmsg_xid.bpf.c), raw tracepoint records decoded in user
 * space through the running kernel's format file (tprecord.bpf.c), and GPU
 * interrupt histograms (gpuirq.bpf.c).
 */
#ifndef SLOWBURN_HWEVENTS_H
#define SLOWBURN_HWEVENTS_H

#include "events.h"

/* --- kmsg_xid: printk:console filtered to Xid / SXid lines in the kernel */

#define SB_KMSG_EVENT_VERSION 1
#define SB_KMSG_TEXT_BYTES    384

struct sb_kmsg_event {
	struct sb_event_header hdr; /* type SB_EVENT_KMSG */
	__u32 len;		    /* bytes of text, without the terminating NUL */
	__u32 _reserved;
	char text[SB_KMSG_TEXT_BYTES];
};

struct sb_kmsg_counters {
	__u64 lines_seen;    /* every console line the program ran on */
	__u64 lines_matched; /* Xid / SXid lines sent to user space */
	__u64 ringbuf_drops;
};

/* --- tprecord: any rare tracepoint, copied raw */

#define SB_TP_RECORD_VERSION 1
#define SB_TP_RECORD_BYTES   512

/* Which tracepoint a record came from: the attachment's bpf_cookie. */
enum sb_tp_source {
	SB_TP_AER_EVENT = 1,	   /* ras:aer_event */
	SB_TP_PCIE_LINK_EVENT = 2, /* pci:pcie_link_event (v7.0+) */
	SB_TP_PCI_HP_EVENT = 3,	   /* pci:pci_hp_event */
	SB_TP_NVIDIA_DEV_XID = 4,  /* nvidia:nvidia_dev_xid (driver 575+) */
	SB_TP_TEST = 100,	   /* tests attach it to a tracepoint this machine has */
};

struct sb_tp_record {
	struct sb_event_header hdr; /* type SB_EVENT_TP_RECORD */
	__u32 source;		    /* enum sb_tp_source */
	__u32 len;		    /* bytes copied into data */
	__u8 data[SB_TP_RECORD_BYTES];
};

struct sb_tp_counters {
	__u64 records;
	__u64 ringbuf_drops;
};

/* --- gpuirq: handler latency per IRQ, filtered by handler name in the kernel */

#define SB_IRQ_NAME_BYTES 16
#define SB_IRQ_HIST_SLOTS 32

struct sb_irq_key {
	__u32 irq;
	__u32 source; /* 0: irq tracepoints, 1: kprobe on nvidia_isr* */
};

struct sb_irq_hist {
	__u64 slots[SB_IRQ_HIST_SLOTS]; /* log2 of handler time in ns */
	__u64 count;
	__u64 total_ns;
	char name[SB_IRQ_NAME_BYTES];
};

#endif /* SLOWBURN_HWEVENTS_H */
