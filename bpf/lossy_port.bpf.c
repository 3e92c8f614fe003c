// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A fault for tests only (slowburn never attaches it): drops one in
 * `one_in` of the TCP data segments to `port` (0: any) that pass the tc hook
 * it is attached to, so the sender's TCP retransmits them, as over a lossy
 * link. tests/targets/tcp_loss_peer.cpp loads it on the loopback device of
 * a network namespace of its own, tests/targets/lossy_link.cpp on the
 * bridge port of a rank's link in a namespace the test made (both
 * ingress: a frame dropped on its sender's egress is a local drop its TCP
 * sends again as new data): nothing of the host's. */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define TC_ACT_OK   0
#define TC_ACT_SHOT 2
#define ETH_P_IP    0x0800

const volatile __u16 port = 0;
const volatile __u32 one_in = 8;
__u64 dropped = 0;

SEC("tc")
int drop_some(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP)
		return TC_ACT_OK;
	struct tcphdr *tcp = (void *)ip + ip->ihl * 4;
	if ((void *)(tcp + 1) > end || (port && tcp->dest != bpf_htons(port)))
		return TC_ACT_OK;
	__u32 headers = ip->ihl * 4 + tcp->doff * 4;
	if (bpf_ntohs(ip->tot_len) <= headers || bpf_get_prandom_u32() % one_in)
		return TC_ACT_OK; // an ACK or a SYN, or spared
	__sync_fetch_and_add(&dropped, 1);
	return TC_ACT_SHOT;
}
