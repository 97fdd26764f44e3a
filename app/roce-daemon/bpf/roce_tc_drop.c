/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lab helper for net_af_packet ports: a tc ingress classifier (direct
 * action) that drops RoCEv2 frames (UDP destination port 4791) after the
 * packet taps have seen them. net_af_packet's socket still receives every
 * frame (taps run before tc), but the kernel's IP stack no longer processes
 * them: no ICMP port unreachable, no wasted cycles.
 *
 *   tc qdisc add dev IF clsact
 *   tc filter add dev IF ingress bpf direct-action obj roce_tc_drop.o sec tc
 *
 * (A u32 filter would do, but needs act_gact, which the CI kernel lacks.)
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ROCE_UDP_PORT 4791

SEC("tc")
int roce_tc_drop(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;

	if ((void *)(eth + 1) > end)
		return TC_ACT_OK;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl != 5)
			return TC_ACT_OK;
		udp = (void *)(ip + 1);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return TC_ACT_OK;
		udp = (void *)(ip6 + 1);
	} else {
		return TC_ACT_OK;
	}
	if ((void *)(udp + 1) > end)
		return TC_ACT_OK;
	return udp->dest == bpf_htons(ROCE_UDP_PORT) ? TC_ACT_SHOT : TC_ACT_OK;
}

char _license[] SEC("license") = "Dual BSD/GPL";
