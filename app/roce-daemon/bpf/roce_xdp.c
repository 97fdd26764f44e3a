/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared-NIC mode: the XDP program in front of roce-daemon's net_af_xdp
 * port. It redirects RoCEv2 frames (UDP destination port 4791) addressed to
 * one of the daemon's IP addresses to the AF_XDP socket of the receive
 * queue, and passes everything else (ARP, ND, TCP, ssh, other UDP) to the
 * kernel, which keeps answering ARP/ND and resolving neighbours.
 *
 * Loaded by the PMD:  net_af_xdp0,iface=IF,xdp_prog=PATH/roce_xdp.o
 * The PMD fills `xsks_map` (it must have that name and BTF). The daemon
 * fills `roce_addrs` with its addresses (16-byte keys, IPv4 as
 * ::ffff:a.b.c.d) after the port starts (port_xdp_set_addrs()).
 *
 * Build: clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ROCE_UDP_PORT 4791
#define MAX_QUEUES 64
#define MAX_ADDRS 64

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct roce_addr {
	__u8 ip[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_ADDRS);
	__type(key, struct roce_addr);
	__type(value, __u8);
} roce_addrs SEC(".maps");

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

SEC("xdp")
int roce_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct roce_addr key = {};
	struct udphdr *udp;
	__u16 proto;
	void *l3;

	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	proto = eth->h_proto;
	l3 = eth + 1;
	if (proto == bpf_htons(ETH_P_8021Q)) {
		struct vlan_hdr *vh = l3;

		if ((void *)(vh + 1) > end)
			return XDP_PASS;
		proto = vh->proto;
		l3 = vh + 1;
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl != 5)
			return XDP_PASS;
		udp = (void *)(ip + 1);
		key.ip[10] = 0xff;
		key.ip[11] = 0xff;
		__builtin_memcpy(&key.ip[12], &ip->daddr, 4);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return XDP_PASS;
		udp = (void *)(ip6 + 1);
		__builtin_memcpy(key.ip, &ip6->daddr, 16);
	} else {
		return XDP_PASS;
	}
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(ROCE_UDP_PORT))
		return XDP_PASS;
	if (bpf_map_lookup_elem(&roce_addrs, &key) == NULL)
		return XDP_PASS;
	/* No socket on this queue: the kernel gets it (flags = XDP_PASS). */
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
