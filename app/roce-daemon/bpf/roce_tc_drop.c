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
#include <stddef.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ROCE_UDP_PORT 4791

/*
 * The headers are read with bpf_skb_load_bytes(), not through skb->data: a
 * frame that another af_packet socket sent over the veth (TX ring) arrives
 * with only its Ethernet header in the linear part and the rest in page
 * fragments, which data..data_end does not cover.
 */
SEC("tc")
int roce_tc_drop(struct __sk_buff *skb)
{
	__u8 l4_off;
	__u16 dport;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		__u8 vihl, proto;

		if (bpf_skb_load_bytes(skb, ETH_HLEN, &vihl, 1) ||
		    bpf_skb_load_bytes(skb, ETH_HLEN + offsetof(struct iphdr, protocol), &proto, 1))
			return TC_ACT_OK;
		if (vihl != 0x45 || proto != IPPROTO_UDP)
			return TC_ACT_OK;
		l4_off = ETH_HLEN + sizeof(struct iphdr);
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		__u8 next;

		if (bpf_skb_load_bytes(skb, ETH_HLEN + offsetof(struct ipv6hdr, nexthdr), &next, 1) ||
		    next != IPPROTO_UDP)
			return TC_ACT_OK;
		l4_off = ETH_HLEN + sizeof(struct ipv6hdr);
	} else {
		return TC_ACT_OK;
	}
	if (bpf_skb_load_bytes(skb, l4_off + offsetof(struct udphdr, dest), &dport, sizeof(dport)))
		return TC_ACT_OK;
	return dport == bpf_htons(ROCE_UDP_PORT) ? TC_ACT_SHOT : TC_ACT_OK;
}

char _license[] SEC("license") = "Dual BSD/GPL";
