// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Rare hardware tracepoints (ras:aer_event, pci:pcie_link_event,
 * pci:pci_hp_event, nvidia:nvidia_dev_xid), copied raw. Their layouts differ
 * between kernels and drivers (aer_event: no TLP header before 4.18, 4 then
 * 14 header words, bus_type in 7.0), so nothing here knows a field: user
 * space decodes each record through the running kernel's tracefs format.
 * The attachment's cookie says which tracepoint fired.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "slowburn/hwevents.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} tp_records SEC(".maps");

struct sb_tp_counters tp_counters = {};

SEC("tracepoint")
int tp_record(void *ctx)
{
	struct sb_tp_record *record;

	record = bpf_ringbuf_reserve(&tp_records, sizeof(*record), 0);
	if (!record) {
		__sync_fetch_and_add(&tp_counters.ringbuf_drops, 1);
		return 0;
	}
	/* A record is shorter than this; the bytes after it belong to the
	 * per-CPU trace buffer and are never decoded (the format bounds every
	 * field). */
	if (bpf_probe_read_kernel(record->data, sizeof(record->data), ctx)) {
		bpf_ringbuf_discard(record, 0);
		return 0;
	}
	record->hdr.type = SB_EVENT_TP_RECORD;
	record->hdr.version = SB_TP_RECORD_VERSION;
	record->hdr.pid = bpf_get_current_pid_tgid() >> 32;
	record->hdr.tid = (__u32)bpf_get_current_pid_tgid();
	record->hdr.cpu = bpf_get_smp_processor_id();
	record->hdr.ts_ns = bpf_ktime_get_ns();
	record->source = bpf_get_attach_cookie(ctx);
	record->len = sizeof(record->data);
	__sync_fetch_and_add(&tp_counters.records, 1);
	bpf_ringbuf_submit(record, 0);
	return 0;
}
