// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * GPU interrupt rate and handler latency. irq:irq_handler_entry/exit for
 * handlers whose name starts with irq_name_prefix ("nvidia": the driver
 * registers its MSI/MSI-X vectors under that name), filtered here so other
 * interrupts cost one string compare. Where the kernel has kprobes and the
 * driver's nvidia_isr* symbols, a kprobe pair times the ISR itself; user
 * space turns those programs off (autoload) where they cannot load.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "slowburn/hwevents.h"
#include "bits.bpf.h"
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile char irq_name_prefix[SB_IRQ_NAME_BYTES] = "nvidia";
const volatile __u32 irq_name_prefix_len = 6;

/* Entry time per (CPU, irq): a handler runs to completion on its CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} irq_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct sb_irq_key);
	__type(value, struct sb_irq_hist);
} irq_hists SEC(".maps");

static const struct sb_irq_hist zero_irq_hist = {};

static __always_inline void account(__u32 irq, __u32 source, __u64 start_ns, const char *name)
{
	struct sb_irq_key key = { .irq = irq, .source = source };
	struct sb_irq_hist *hist = lookup_or_try_init(&irq_hists, &key, &zero_irq_hist);
	__u64 delta = bpf_ktime_get_ns() - start_ns;

	if (!hist)
		return;
	if (!hist->name[0] && name)
		bpf_probe_read_kernel_str(hist->name, sizeof(hist->name), name);
	/* Hard-IRQ context: nothing else runs on this CPU's copy meanwhile. */
	hist->slots[log2_slot(delta, SB_IRQ_HIST_SLOTS)]++;
	hist->count++;
	hist->total_ns += delta;
}

SEC("tracepoint/irq/irq_handler_entry")
int irq_enter(struct trace_event_raw_irq_handler_entry *ctx)
{
	char name[SB_IRQ_NAME_BYTES] = {};
	__u32 loc = BPF_CORE_READ(ctx, __data_loc_name);
	__u32 irq = BPF_CORE_READ(ctx, irq);
	__u64 now;

	if (bpf_probe_read_kernel_str(name, sizeof(name), (const char *)ctx + (loc & 0xffff)) < 0)
		return 0;
	for (int i = 0; i < SB_IRQ_NAME_BYTES; i++) {
		if (i >= irq_name_prefix_len)
			break;
		if (name[i] != irq_name_prefix[i])
			return 0;
	}
	struct sb_irq_key key = { .irq = irq, .source = 0 };
	struct sb_irq_hist *hist = lookup_or_try_init(&irq_hists, &key, &zero_irq_hist);

	if (hist && !hist->name[0])
		__builtin_memcpy(hist->name, name, sizeof(hist->name));
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&irq_start, &irq, &now, BPF_ANY);
	return 0;
}

SEC("tracepoint/irq/irq_handler_exit")
int irq_exit(struct trace_event_raw_irq_handler_exit *ctx)
{
	__u32 irq = BPF_CORE_READ(ctx, irq);
	__u64 *start = bpf_map_lookup_elem(&irq_start, &irq);

	if (!start)
		return 0; /* not one of ours: the entry filter let it pass */
	account(irq, 0, *start, 0);
	bpf_map_delete_elem(&irq_start, &irq);
	return 0;
}

/* The ISR entered on this CPU (ISRs do not nest on a CPU): the kretprobe
 * does not see the irq argument. */
struct isr_entry {
	__u64 start_ns;
	__u32 irq;
	__u32 active;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct isr_entry);
} isr_entries SEC(".maps");

/* nvidia_isr(int irq, void *arg) in the open GPU kernel modules (nv.c). */
SEC("kprobe/nvidia_isr")
int BPF_KPROBE(nvidia_isr_enter, int irq)
{
	__u32 zero = 0;
	struct isr_entry *entry = bpf_map_lookup_elem(&isr_entries, &zero);

	if (!entry)
		return 0;
	entry->start_ns = bpf_ktime_get_ns();
	entry->irq = irq;
	entry->active = 1;
	return 0;
}

SEC("kretprobe/nvidia_isr")
int BPF_KRETPROBE(nvidia_isr_exit)
{
	__u32 zero = 0;
	struct isr_entry *entry = bpf_map_lookup_elem(&isr_entries, &zero);

	if (!entry || !entry->active)
		return 0;
	entry->active = 0;
	account(entry->irq, 1, entry->start_ns, "nvidia_isr");
	return 0;
}
