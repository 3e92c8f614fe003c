// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NVIDIA Xid reports from the kernel log, for drivers without the
 * nvidia:nvidia_dev_xid tracepoint (before 575). Runs on printk:console for
 * every kernel message and passes on only lines that start like an Xid
 * ("NVRM: Xid (") or NVSwitch SXid ("nvidia-nvswitchN: SXid ("): ordinary
 * messages are counted and never wake user space.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include "slowburn/hwevents.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* 8 MiB: a storm of 10,000 Xid lines (a record is ~420 bytes), which the
 * driver writes from the kernel faster than any reader, fits whole while the
 * reader is off the CPU; 1 MiB held ~2,500 of them, 4 MiB ~9,900 (tests/bpf
 * KmsgXid.BurstOfTenThousandLinesWithTheReaderHeldOffLosesNone). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} kmsg_events SEC(".maps");

struct sb_kmsg_counters kmsg_counters = {};

/* "nvidia-nvswitch" (15) + up to 3 digits + ": SXid (" (8) */
#define PREFIX_BYTES 26

static __always_inline bool starts_with(const char *text, const char *prefix, int len)
{
	for (int i = 0; i < len; i++)
		if (text[i] != prefix[i])
			return false;
	return true;
}

/* "NVRM: Xid (" or "nvidia-nvswitch" + 1-3 digits + ": SXid (" */
static __always_inline bool is_xid_line(const char *head)
{
	if (starts_with(head, "NVRM: Xid (", 11))
		return true;
	if (!starts_with(head, "nvidia-nvswitch", 15))
		return false;
	for (int digits = 1; digits <= 3; digits++)
		if (starts_with(head + 15 + digits, ": SXid (", 8))
			return true;
	return false;
}

SEC("tracepoint/printk/console")
int kmsg_xid(struct trace_event_raw_console *ctx)
{
	char head[PREFIX_BYTES] = {};
	struct sb_kmsg_event *event;
	__u32 loc = BPF_CORE_READ(ctx, __data_loc_msg);
	const char *msg = (const char *)ctx + (loc & 0xffff);
	long len;

	__sync_fetch_and_add(&kmsg_counters.lines_seen, 1);
	if (bpf_probe_read_kernel(head, PREFIX_BYTES, msg) || !is_xid_line(head))
		return 0;
	__sync_fetch_and_add(&kmsg_counters.lines_matched, 1);

	event = bpf_ringbuf_reserve(&kmsg_events, sizeof(*event), 0);
	if (!event) {
		__sync_fetch_and_add(&kmsg_counters.ringbuf_drops, 1);
		return 0;
	}
	len = bpf_probe_read_kernel_str(event->text, sizeof(event->text), msg);
	event->hdr.type = SB_EVENT_KMSG;
	event->hdr.version = SB_KMSG_EVENT_VERSION;
	event->hdr.pid = bpf_get_current_pid_tgid() >> 32;
	event->hdr.tid = (__u32)bpf_get_current_pid_tgid();
	event->hdr.cpu = bpf_get_smp_processor_id();
	event->hdr.ts_ns = bpf_ktime_get_ns();
	event->len = len > 0 ? len - 1 : 0;
	event->_reserved = 0;
	bpf_ringbuf_submit(event, 0);
	return 0;
}
