// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The benchmark baseline: a uprobe/uretprobe pair that does nothing, so the
 * cost of the call-pair program is measured against the cost of a uprobe hit
 * itself (bench/probe_cost.cpp). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe")
int BPF_KPROBE(empty_enter)
{
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(empty_exit)
{
	return 0;
}
