/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Parse a frame once into the fields flow rules match (flow.h).
 * Header layouts are lib/roce's (struct roce_eth_hdr, ...).
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "flow.h"
#include "roce.h"

#define IPV4_FRAG_OFFSET_MASK 0x1fffu /* RFC 791: fragment offset, 13 bits */
#define IPV4_FLAGS_SHIFT 13           /* RFC 791: flags are the top 3 bits */

static uint16_t
rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* TCP or UDP ports: both start with source and destination port (RFC 793, RFC 768). */
static void
parse_l4(const uint8_t *p, size_t left, uint8_t proto, struct flow_key *k)
{
	if (proto == IPPROTO_TCP && left >= 20)
		k->layers |= FLOW_L_TCP;
	else if (proto == IPPROTO_UDP && left >= sizeof(struct roce_udp_hdr))
		k->layers |= FLOW_L_UDP;
	else
		return;
	k->f.l4_src = rd16(p);
	k->f.l4_dst = rd16(p + 2);
}

static void
parse_ipv4(const uint8_t *p, size_t left, struct flow_key *k)
{
	const struct roce_ipv4_hdr *ip = (const struct roce_ipv4_hdr *)p;
	size_t ihl;
	uint16_t frag;

	if (left < sizeof(*ip) || (ip->version_ihl >> 4) != 4)
		return;
	ihl = (size_t)(ip->version_ihl & 0xf) * 4;
	if (ihl < sizeof(*ip) || ihl > left)
		return;
	k->layers |= FLOW_L_IPV4;
	memcpy(&k->f.ip4_src, ip->src, 4);
	memcpy(&k->f.ip4_dst, ip->dst, 4);
	k->f.ip4_proto = ip->protocol;
	k->f.ip4_tos = ip->tos;
	k->f.ip4_ttl = ip->ttl;
	frag = ntohs(ip->frag_off);
	k->f.ip4_flags = (uint8_t)(frag >> IPV4_FLAGS_SHIFT);
	if ((frag & IPV4_FRAG_OFFSET_MASK) == 0)
		parse_l4(p + ihl, left - ihl, ip->protocol, k);
}

static void
parse_ipv6(const uint8_t *p, size_t left, struct flow_key *k)
{
	const struct roce_ipv6_hdr *ip = (const struct roce_ipv6_hdr *)p;
	uint32_t vtc;

	if (left < sizeof(*ip))
		return;
	vtc = ntohl(ip->vtc_flow);
	if ((vtc >> 28) != 6)
		return;
	k->layers |= FLOW_L_IPV6;
	memcpy(k->f.ip6_src, ip->src, 16);
	memcpy(k->f.ip6_dst, ip->dst, 16);
	k->f.ip6_flow_label = htonl(vtc & 0xfffffu);
	k->f.ip6_tclass = (uint8_t)(vtc >> 20);
	k->f.ip6_next_hdr = ip->next_header;
	k->f.ip6_hop_limit = ip->hop_limit;
	parse_l4(p + sizeof(*ip), left - sizeof(*ip), ip->next_header, k);
}

int
flow_parse(const uint8_t *frame, size_t len, struct flow_key *k)
{
	const struct roce_eth_hdr *eth = (const struct roce_eth_hdr *)frame;
	size_t off = sizeof(*eth);
	uint16_t type;

	memset(k, 0, sizeof(*k));
	if (len < sizeof(*eth))
		return -EINVAL;
	k->layers = FLOW_L_ETH;
	memcpy(k->f.dst_mac, eth->dst, 6);
	memcpy(k->f.src_mac, eth->src, 6);
	type = eth->ethertype;
	if (ntohs(type) == ROCE_ETHERTYPE_VLAN) {
		const struct roce_vlan_hdr *v = (const struct roce_vlan_hdr *)(frame + off);

		if (len < off + sizeof(*v))
			return 0;
		k->f.vlan_tag = v->tci;
		type = v->ethertype;
		off += sizeof(*v);
	}
	k->f.ether_type = type;
	if (ntohs(type) == ROCE_ETHERTYPE_IPV4)
		parse_ipv4(frame + off, len - off, k);
	else if (ntohs(type) == ROCE_ETHERTYPE_IPV6)
		parse_ipv6(frame + off, len - off, k);
	return 0;
}
