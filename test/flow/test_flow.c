/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/flow: parsing frames into keys, every spec type with its masks, rule
 * checks, and the table's priorities. Frames are built byte by byte here
 * (not with lib/roce's builder, so the parser is checked against the RFC
 * layouts, not against our own writer).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "flow.h"

static const uint8_t DMAC[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
static const uint8_t SMAC[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
static const uint8_t SIP6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
static const uint8_t DIP6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
#define SIP4 "198.18.0.1"
#define DIP4 "198.18.0.2"

struct frame_opts {
	int vlan;        /* TCI + 1, 0: untagged */
	int ipver;       /* 0 (ARP-like payload), 4 or 6 */
	uint8_t proto;   /* IPPROTO_TCP, IPPROTO_UDP or other */
	uint16_t sport, dport;
	uint8_t tos, ttl;
	uint16_t frag;   /* IPv4 flags+offset, host order */
	uint32_t flow_label;
	uint8_t ihl;     /* IPv4 header words; 0: 5 */
};

static size_t
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return 2;
}

static size_t
build(uint8_t *f, const struct frame_opts *o)
{
	size_t off = 0;

	memset(f, 0, 256);
	memcpy(f, DMAC, 6);
	memcpy(f + 6, SMAC, 6);
	off = 12;
	if (o->vlan) {
		off += put16(f + off, 0x8100);
		off += put16(f + off, (uint16_t)(o->vlan - 1));
	}
	off += put16(f + off, o->ipver == 4 ? 0x0800 : o->ipver == 6 ? 0x86dd : 0x0806);
	if (o->ipver == 4) {
		uint8_t ihl = o->ihl ? o->ihl : 5;

		f[off] = (uint8_t)(0x40 | ihl);
		f[off + 1] = o->tos;
		put16(f + off + 6, o->frag);
		f[off + 8] = o->ttl;
		f[off + 9] = o->proto;
		inet_pton(AF_INET, SIP4, f + off + 12);
		inet_pton(AF_INET, DIP4, f + off + 16);
		off += ihl * 4u;
	} else if (o->ipver == 6) {
		uint32_t vtc = (6u << 28) | ((uint32_t)o->tos << 20) | o->flow_label;

		f[off] = (uint8_t)(vtc >> 24);
		f[off + 1] = (uint8_t)(vtc >> 16);
		f[off + 2] = (uint8_t)(vtc >> 8);
		f[off + 3] = (uint8_t)vtc;
		f[off + 6] = o->proto;
		f[off + 7] = o->ttl;
		memcpy(f + off + 8, SIP6, 16);
		memcpy(f + off + 24, DIP6, 16);
		off += 40;
	}
	if (o->ipver != 0 && (o->proto == IPPROTO_TCP || o->proto == IPPROTO_UDP)) {
		put16(f + off, o->sport);
		put16(f + off + 2, o->dport);
		off += o->proto == IPPROTO_TCP ? 20 : 8;
	}
	return off + 16; /* some payload */
}

static struct flow_key
key_of(const struct frame_opts *o)
{
	uint8_t f[256];
	size_t len = build(f, o);
	struct flow_key k;

	cr_assert_eq(flow_parse(f, len, &k), 0);
	return k;
}

static const struct frame_opts UDP4 = { .ipver = 4, .proto = IPPROTO_UDP, .sport = 5000,
					.dport = 6000, .tos = 0x10, .ttl = 64 };
static const struct frame_opts TCP6 = { .ipver = 6, .proto = IPPROTO_TCP, .sport = 5000,
					.dport = 6000, .tos = 0x20, .ttl = 32,
					.flow_label = 0x12345 };

static struct flow_match
checked(struct flow_match m)
{
	cr_assert_eq(flow_match_check(&m), 0);
	return m;
}

/* ---- parsing ---- */

Test(flow_parse, an_ipv4_udp_frame_has_every_field)
{
	struct flow_key k = key_of(&UDP4);
	uint32_t sip;

	inet_pton(AF_INET, SIP4, &sip);
	cr_assert_eq(k.layers, FLOW_L_ETH | FLOW_L_IPV4 | FLOW_L_UDP);
	cr_assert_arr_eq(k.f.dst_mac, DMAC, 6);
	cr_assert_arr_eq(k.f.src_mac, SMAC, 6);
	cr_assert_eq(k.f.ether_type, htons(0x0800));
	cr_assert_eq(k.f.ip4_src, sip);
	cr_assert_eq(k.f.ip4_proto, IPPROTO_UDP);
	cr_assert_eq(k.f.ip4_tos, 0x10);
	cr_assert_eq(k.f.ip4_ttl, 64);
	cr_assert_eq(k.f.l4_src, htons(5000));
	cr_assert_eq(k.f.l4_dst, htons(6000));
}

Test(flow_parse, an_ipv6_tcp_frame_has_every_field)
{
	struct flow_key k = key_of(&TCP6);

	cr_assert_eq(k.layers, FLOW_L_ETH | FLOW_L_IPV6 | FLOW_L_TCP);
	cr_assert_arr_eq(k.f.ip6_src, SIP6, 16);
	cr_assert_arr_eq(k.f.ip6_dst, DIP6, 16);
	cr_assert_eq(k.f.ip6_flow_label, htonl(0x12345));
	cr_assert_eq(k.f.ip6_tclass, 0x20);
	cr_assert_eq(k.f.ip6_hop_limit, 32);
	cr_assert_eq(k.f.ip6_next_hdr, IPPROTO_TCP);
	cr_assert_eq(k.f.l4_dst, htons(6000));
}

Test(flow_parse, a_vlan_tag_is_read_and_skipped)
{
	struct frame_opts o = UDP4;
	struct flow_key k;

	o.vlan = 0x2005 + 1;
	k = key_of(&o);
	cr_assert_eq(k.f.vlan_tag, htons(0x2005));
	cr_assert_eq(k.f.ether_type, htons(0x0800));
	cr_assert_eq(k.layers, FLOW_L_ETH | FLOW_L_IPV4 | FLOW_L_UDP);
}

Test(flow_parse, ipv4_options_are_skipped_and_later_fragments_have_no_ports)
{
	struct frame_opts o = UDP4;
	struct flow_key k;

	o.ihl = 7;
	k = key_of(&o);
	cr_assert_eq(k.f.l4_dst, htons(6000));
	o.ihl = 0;
	o.frag = 0x2000 | 10; /* MF, offset 80 bytes */
	k = key_of(&o);
	cr_assert_eq(k.layers, FLOW_L_ETH | FLOW_L_IPV4);
	cr_assert_eq(k.f.ip4_flags, 1);
	cr_assert_eq(k.f.l4_dst, 0);
}

Test(flow_parse, truncated_frames_keep_what_was_whole)
{
	uint8_t f[256];
	size_t len = build(f, &UDP4);
	struct flow_key k;

	cr_assert_eq(flow_parse(f, 13, &k), -EINVAL);
	cr_assert_eq(flow_parse(f, 14, &k), 0);
	cr_assert_eq(k.layers, FLOW_L_ETH);
	cr_assert_eq(flow_parse(f, 14 + 19, &k), 0);
	cr_assert_eq(k.layers, FLOW_L_ETH);
	cr_assert_eq(flow_parse(f, 14 + 20 + 7, &k), 0);
	cr_assert_eq(k.layers, FLOW_L_ETH | FLOW_L_IPV4);
	cr_assert_eq(flow_parse(f, len, &k), 0);
	cr_assert_eq(k.layers, FLOW_L_ETH | FLOW_L_IPV4 | FLOW_L_UDP);
	f[14] = 0x43; /* IHL 3: shorter than the fixed header */
	cr_assert_eq(flow_parse(f, len, &k), 0);
	cr_assert_eq(k.layers, FLOW_L_ETH);
}

/* ---- each spec type ---- */

Test(flow_spec, eth_matches_macs_and_ether_type_under_their_masks)
{
	struct flow_match m = { .layers = FLOW_L_ETH };
	struct flow_key k4 = key_of(&UDP4), k6 = key_of(&TCP6);

	memcpy(m.val.dst_mac, DMAC, 6);
	memset(m.mask.dst_mac, 0xff, 6);
	m.val.ether_type = htons(0x0800);
	m.mask.ether_type = 0xffff;
	m = checked(m);
	cr_assert(flow_match(&m, &k4));
	cr_assert_not(flow_match(&m, &k6), "ether type IPv6 must not match");
	m.val.dst_mac[5] = 9;
	m = checked(m);
	cr_assert_not(flow_match(&m, &k4), "another destination MAC");
	m.mask.dst_mac[5] = 0; /* masked out: matches again */
	m = checked(m);
	cr_assert(flow_match(&m, &k4));
	memcpy(m.val.src_mac, SMAC, 6);
	memset(m.mask.src_mac, 0xff, 6);
	m.val.src_mac[0] ^= 1;
	m = checked(m);
	cr_assert_not(flow_match(&m, &k4), "another source MAC");
}

Test(flow_spec, eth_vlan_tag_with_a_vid_mask)
{
	struct frame_opts o = UDP4;
	struct flow_match m = { .layers = FLOW_L_ETH };
	struct flow_key k;

	o.vlan = 0xa007 + 1;           /* PCP 5, VID 7 */
	k = key_of(&o);
	m.val.vlan_tag = htons(7);
	m.mask.vlan_tag = htons(0x0fff); /* the VID only */
	m = checked(m);
	cr_assert(flow_match(&m, &k));
	m.mask.vlan_tag = 0xffff;        /* the PCP too */
	m = checked(m);
	cr_assert_not(flow_match(&m, &k));
	cr_assert_not(flow_match(&(struct flow_match){ .layers = FLOW_L_ETH,
						       .val.vlan_tag = htons(7),
						       .mask.vlan_tag = htons(0x0fff) },
				 &(struct flow_key){ .layers = FLOW_L_ETH }),
		      "an untagged frame has VID 0");
}

Test(flow_spec, ipv4_matches_addresses_proto_tos_ttl_and_only_ipv4)
{
	struct flow_match m = { .layers = FLOW_L_IPV4 };
	struct flow_key k4 = key_of(&UDP4), k6 = key_of(&TCP6);

	inet_pton(AF_INET, SIP4, &m.val.ip4_src);
	inet_pton(AF_INET, DIP4, &m.val.ip4_dst);
	m.mask.ip4_src = m.mask.ip4_dst = 0xffffffff;
	m.val.ip4_proto = IPPROTO_UDP;
	m.mask.ip4_proto = 0xff;
	m = checked(m);
	cr_assert(flow_match(&m, &k4));
	cr_assert_not(flow_match(&m, &k6));
	m.val.ip4_proto = IPPROTO_TCP;
	m = checked(m);
	cr_assert_not(flow_match(&m, &k4), "proto TCP vs a UDP datagram");
	m.val.ip4_proto = IPPROTO_UDP;
	m.val.ip4_dst ^= htonl(0xff);
	m.mask.ip4_dst = htonl(0xffffff00); /* a /24 */
	m = checked(m);
	cr_assert(flow_match(&m, &k4), "the /24 mask ignores the host byte");
	m.val.ip4_tos = 0x10;
	m.mask.ip4_tos = 0xff;
	m.val.ip4_ttl = 63;
	m.mask.ip4_ttl = 0xff;
	m = checked(m);
	cr_assert_not(flow_match(&m, &k4), "TTL 63 vs 64");
	m.val.ip4_ttl = 64;
	m = checked(m);
	cr_assert(flow_match(&m, &k4));
	/* an empty IPv4 spec still needs an IPv4 frame */
	cr_assert_not(flow_match(&(struct flow_match){ .layers = FLOW_L_IPV4 }, &k6));
	cr_assert(flow_match(&(struct flow_match){ .layers = FLOW_L_IPV4 }, &k4));
}

Test(flow_spec, ipv4_flags_match_the_df_and_mf_bits)
{
	struct frame_opts o = UDP4;
	struct flow_match m = { .layers = FLOW_L_IPV4, .val.ip4_flags = 2, .mask.ip4_flags = 2 };

	m = checked(m);
	o.frag = 0x4000; /* DF */
	cr_assert(flow_match(&m, &(struct flow_key){ 0 }) == false);
	{
		struct flow_key k = key_of(&o);

		cr_assert(flow_match(&m, &k));
	}
	o.frag = 0;
	{
		struct flow_key k = key_of(&o);

		cr_assert_not(flow_match(&m, &k));
	}
}

Test(flow_spec, ipv6_matches_addresses_label_class_hop_limit_next_header)
{
	struct flow_match m = { .layers = FLOW_L_IPV6 };
	struct flow_key k4 = key_of(&UDP4), k6 = key_of(&TCP6);

	memcpy(m.val.ip6_src, SIP6, 16);
	memcpy(m.val.ip6_dst, DIP6, 16);
	memset(m.mask.ip6_src, 0xff, 16);
	memset(m.mask.ip6_dst, 0xff, 16);
	m.val.ip6_next_hdr = IPPROTO_TCP;
	m.mask.ip6_next_hdr = 0xff;
	m.val.ip6_flow_label = htonl(0x12345);
	m.mask.ip6_flow_label = htonl(0xfffff);
	m.val.ip6_tclass = 0x20;
	m.mask.ip6_tclass = 0xff;
	m.val.ip6_hop_limit = 32;
	m.mask.ip6_hop_limit = 0xff;
	m = checked(m);
	cr_assert(flow_match(&m, &k6));
	cr_assert_not(flow_match(&m, &k4));
	m.val.ip6_flow_label = htonl(0x12346);
	m = checked(m);
	cr_assert_not(flow_match(&m, &k6), "another flow label");
	m.mask.ip6_flow_label = htonl(0xffff0);
	m = checked(m);
	cr_assert(flow_match(&m, &k6), "the label's low nibble masked out");
	m.val.ip6_dst[15] = 3;
	m = checked(m);
	cr_assert_not(flow_match(&m, &k6), "another destination address");
}

Test(flow_spec, tcp_and_udp_match_ports_and_their_protocol_only)
{
	struct flow_match udp = { .layers = FLOW_L_UDP, .val.l4_dst = htons(6000),
				  .mask.l4_dst = 0xffff };
	struct flow_match tcp = { .layers = FLOW_L_TCP, .val.l4_dst = htons(6000),
				  .mask.l4_dst = 0xffff };
	struct frame_opts o = TCP6;
	struct flow_key k4 = key_of(&UDP4), k6 = key_of(&TCP6), ku6;

	o.proto = IPPROTO_UDP;
	ku6 = key_of(&o);
	udp = checked(udp);
	tcp = checked(tcp);
	cr_assert(flow_match(&udp, &k4));
	cr_assert(flow_match(&udp, &ku6), "UDP over IPv6");
	cr_assert_not(flow_match(&udp, &k6), "same port but TCP");
	cr_assert(flow_match(&tcp, &k6));
	cr_assert_not(flow_match(&tcp, &k4));
	udp.val.l4_src = htons(5001);
	udp.mask.l4_src = 0xffff;
	udp = checked(udp);
	cr_assert_not(flow_match(&udp, &k4), "another source port");
	udp.mask.l4_src = htons(0xfff0);
	udp = checked(udp);
	cr_assert(flow_match(&udp, &k4), "source port range 5000-5015");
}

Test(flow_spec, eth_ipv4_udp_together_as_test_flow_asks)
{
	struct flow_match m = { .layers = FLOW_L_ETH | FLOW_L_IPV4 | FLOW_L_UDP };
	struct frame_opts o = UDP4;
	struct flow_key k;

	memcpy(m.val.dst_mac, DMAC, 6);
	memset(m.mask.dst_mac, 0xff, 6);
	memcpy(m.val.src_mac, SMAC, 6);
	memset(m.mask.src_mac, 0xff, 6);
	m.val.ether_type = htons(0x0800);
	m.mask.ether_type = 0xffff;
	inet_pton(AF_INET, SIP4, &m.val.ip4_src);
	m.mask.ip4_src = 0xffffffff;
	m.val.l4_src = htons(5000);
	m.val.l4_dst = htons(6000);
	m.mask.l4_src = m.mask.l4_dst = 0xffff;
	m = checked(m);
	k = key_of(&o);
	cr_assert(flow_match(&m, &k));
	o.dport = 6001;
	k = key_of(&o);
	cr_assert_not(flow_match(&m, &k));
}

/* ---- rule checks ---- */

Test(flow_check, inconsistent_rules_are_refused)
{
	struct flow_match m = { .layers = FLOW_L_IPV4 | FLOW_L_IPV6 };

	cr_assert_eq(flow_match_check(&m), -EINVAL, "IPv4 and IPv6");
	m = (struct flow_match){ .layers = FLOW_L_TCP | FLOW_L_UDP };
	cr_assert_eq(flow_match_check(&m), -EINVAL, "TCP and UDP");
	m = (struct flow_match){ .layers = 1u << 9 };
	cr_assert_eq(flow_match_check(&m), -EOPNOTSUPP, "unknown layer");
	m = (struct flow_match){ .layers = FLOW_L_ETH, .mask.ip4_dst = 1 };
	cr_assert_eq(flow_match_check(&m), -EINVAL, "an IPv4 field without the IPv4 layer");
	m = (struct flow_match){ .layers = FLOW_L_IPV4, .mask.l4_dst = 1 };
	cr_assert_eq(flow_match_check(&m), -EINVAL, "a port without TCP or UDP");
	m = (struct flow_match){ .layers = FLOW_L_IPV4, .mask.reserved = 1 };
	cr_assert_eq(flow_match_check(&m), -EINVAL, "the reserved byte");
	m = (struct flow_match){ .layers = FLOW_L_IPV6, .mask.ip6_flow_label = 0xffffffff };
	cr_assert_eq(flow_match_check(&m), -EINVAL, "a flow label is 20 bits");
	m = (struct flow_match){ .layers = FLOW_L_IPV4, .mask.ip4_flags = 0x8 };
	cr_assert_eq(flow_match_check(&m), -EINVAL, "IPv4 has 3 flag bits");
}

Test(flow_check, value_bits_outside_the_mask_are_cleared)
{
	struct flow_match m = { .layers = FLOW_L_UDP, .val.l4_dst = htons(0x1234),
				.mask.l4_dst = htons(0xff00) };

	cr_assert_eq(flow_match_check(&m), 0);
	cr_assert_eq(m.val.l4_dst, htons(0x1200));
	m = (struct flow_match){ .layers = FLOW_L_ETH, .val.ether_type = 0xffff };
	cr_assert_eq(flow_match_check(&m), 0);
	cr_assert_eq(m.val.ether_type, 0, "no mask: a wildcard");
}

/* ---- table and priorities ---- */

Test(flow_table, the_best_priority_wins_and_equal_rules_share)
{
	struct flow_rule rules[4];
	struct flow_table t;
	struct flow_match any = { 0 };
	struct flow_match udp = { .layers = FLOW_L_UDP };
	struct flow_key k4 = key_of(&UDP4), k6 = key_of(&TCP6);
	uint32_t d[4];
	int a, b, c;

	flow_table_init(&t, rules, 4);
	cr_assert_eq(flow_table_lookup(&t, &k4, d, 4), 0, "no rule: the stack keeps it");
	a = flow_table_add(&t, &any, 5, 100);
	b = flow_table_add(&t, &udp, 2, 200);
	cr_assert(a >= 0 && b >= 0);
	cr_assert_eq(flow_table_lookup(&t, &k4, d, 4), 1);
	cr_assert_eq(d[0], 200, "priority 2 beats 5");
	cr_assert_eq(flow_table_lookup(&t, &k6, d, 4), 1);
	cr_assert_eq(d[0], 100, "only the catch-all matches TCP");
	c = flow_table_add(&t, &udp, 2, 300);
	cr_assert_eq(flow_table_lookup(&t, &k4, d, 4), 2, "two rules of the best priority");
	cr_assert(d[0] + d[1] == 500);
	cr_assert_eq(flow_table_lookup(&t, &k4, d, 1), 1, "cut at max");
	cr_assert_eq(flow_table_del(&t, (uint32_t)b), 0);
	cr_assert_eq(flow_table_del(&t, (uint32_t)c), 0);
	cr_assert_eq(flow_table_lookup(&t, &k4, d, 4), 1);
	cr_assert_eq(d[0], 100, "back to the catch-all");
	cr_assert_eq(flow_table_del(&t, (uint32_t)b), -ENOENT);
	cr_assert_eq(flow_table_del(&t, 4), -ENOENT);
	cr_assert_eq(flow_table_del(&t, (uint32_t)a), 0);
	cr_assert_eq(flow_table_lookup(&t, &k4, d, 4), 0);
	cr_assert_eq(t.n, 0);
}

Test(flow_table, a_full_table_and_a_bad_rule_are_refused)
{
	struct flow_rule rules[2];
	struct flow_table t;
	struct flow_match any = { 0 }, bad = { .layers = FLOW_L_TCP | FLOW_L_UDP };

	flow_table_init(&t, rules, 2);
	cr_assert_eq(flow_table_add(&t, &bad, 0, 1), -EINVAL);
	cr_assert_geq(flow_table_add(&t, &any, 0, 1), 0);
	cr_assert_geq(flow_table_add(&t, &any, 0, 2), 0);
	cr_assert_eq(flow_table_add(&t, &any, 0, 3), -ENOSPC);
	cr_assert_eq(t.n, 2);
}

/*
 * ---- RSS (flow_rss.c): the Toeplitz hash against the verification suite
 * of the Microsoft RSS specification (the key and the IPv4/IPv6 tuples
 * with their 2-tuple and 4-tuple hashes, as NIC data sheets reprint them).
 */
static const uint8_t MS_KEY[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
	0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
	0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

struct rss_vec {
	const char *src, *dst;
	uint16_t sport, dport;
	uint32_t h_ip, h_ip_l4;
};

static const struct rss_vec RSS_V4[] = {
	{ "66.9.149.187", "161.142.100.80", 2794, 1766, 0x323e8fc2, 0x51ccc178 },
	{ "199.92.111.2", "65.69.140.83", 14230, 4739, 0xd718262a, 0xc626b0ea },
	{ "24.19.198.95", "12.22.207.184", 12898, 38024, 0xd2d0a5de, 0x5c2b394a },
	{ "38.27.205.30", "209.142.163.6", 48228, 2217, 0x82989176, 0xafc7327f },
	{ "153.39.163.191", "202.188.127.2", 44251, 1303, 0x5d1809c5, 0x10e828a2 },
};

static const struct rss_vec RSS_V6[] = {
	{ "3ffe:2501:200:1fff::7", "3ffe:2501:200:3::1", 2794, 1766, 0x2cc18cd5, 0x40207d3d },
	{ "3ffe:501:8::260:97ff:fe40:efab", "ff02::1", 14230, 4739, 0x0f0c461c, 0xdde51bbf },
	{ "3ffe:1900:4545:3:200:f8ff:fe21:67cf", "fe80::200:f8ff:fe21:67cf", 44251, 38024,
	  0x4b61e985, 0x02d1feef },
};

static struct flow_key
rss_key_of(const struct rss_vec *v, bool v6, uint32_t l4)
{
	struct flow_key k = { .layers = FLOW_L_ETH | (v6 ? FLOW_L_IPV6 : FLOW_L_IPV4) | l4 };

	if (v6) {
		cr_assert_eq(inet_pton(AF_INET6, v->src, k.f.ip6_src), 1);
		cr_assert_eq(inet_pton(AF_INET6, v->dst, k.f.ip6_dst), 1);
	} else {
		cr_assert_eq(inet_pton(AF_INET, v->src, &k.f.ip4_src), 1);
		cr_assert_eq(inet_pton(AF_INET, v->dst, &k.f.ip4_dst), 1);
	}
	k.f.l4_src = htons(v->sport);
	k.f.l4_dst = htons(v->dport);
	return k;
}

static uint32_t
rss_hash(uint64_t fields, const struct flow_key *k)
{
	uint8_t in[FLOW_RSS_INPUT_MAX];
	size_t n = flow_rss_input(fields, k, in);

	return flow_toeplitz(MS_KEY, sizeof(MS_KEY), in, n);
}

Test(flow_rss, toeplitz_ipv4_verification_suite)
{
	const uint64_t ip = FLOW_RSS_SRC_IPV4 | FLOW_RSS_DST_IPV4;

	for (size_t i = 0; i < sizeof(RSS_V4) / sizeof(RSS_V4[0]); i++) {
		struct flow_key k = rss_key_of(&RSS_V4[i], false, FLOW_L_TCP);

		cr_expect_eq(rss_hash(ip, &k), RSS_V4[i].h_ip, "vector %zu: 0x%08x", i,
			     rss_hash(ip, &k));
		cr_expect_eq(rss_hash(ip | FLOW_RSS_SRC_PORT_TCP | FLOW_RSS_DST_PORT_TCP, &k),
			     RSS_V4[i].h_ip_l4, "vector %zu", i);
		/* UDP port fields on a TCP segment: not in the input */
		cr_expect_eq(rss_hash(ip | FLOW_RSS_SRC_PORT_UDP | FLOW_RSS_DST_PORT_UDP, &k),
			     RSS_V4[i].h_ip);
		k.layers = FLOW_L_ETH | FLOW_L_IPV4 | FLOW_L_UDP;
		cr_expect_eq(rss_hash(ip | FLOW_RSS_SRC_PORT_UDP | FLOW_RSS_DST_PORT_UDP, &k),
			     RSS_V4[i].h_ip_l4);
	}
}

Test(flow_rss, toeplitz_ipv6_verification_suite)
{
	const uint64_t ip = FLOW_RSS_SRC_IPV6 | FLOW_RSS_DST_IPV6;

	for (size_t i = 0; i < sizeof(RSS_V6) / sizeof(RSS_V6[0]); i++) {
		struct flow_key k = rss_key_of(&RSS_V6[i], true, FLOW_L_TCP);

		cr_expect_eq(rss_hash(ip, &k), RSS_V6[i].h_ip, "vector %zu: 0x%08x", i,
			     rss_hash(ip, &k));
		cr_expect_eq(rss_hash(ip | FLOW_RSS_SRC_PORT_TCP | FLOW_RSS_DST_PORT_TCP, &k),
			     RSS_V6[i].h_ip_l4, "vector %zu", i);
		/* IPv4 fields on an IPv6 frame: nothing to hash */
		cr_expect_eq(rss_hash(FLOW_RSS_SRC_IPV4 | FLOW_RSS_DST_IPV4, &k), 0);
	}
}

/* The whole path: a frame on the wire, parsed, hashed, the table's low bits. */
Test(flow_rss, pick_from_parsed_frame)
{
	struct frame_opts o = { .ipver = 4, .proto = IPPROTO_TCP, .sport = 2794, .dport = 1766 };
	struct flow_rss r = { .fields = FLOW_RSS_SRC_IPV4 | FLOW_RSS_DST_IPV4 |
					FLOW_RSS_SRC_PORT_TCP | FLOW_RSS_DST_PORT_TCP,
			      .log_size = 3, .key_len = 40 };
	uint8_t f[256];
	struct flow_key k;
	size_t len;

	memcpy(r.key, MS_KEY, sizeof(MS_KEY));
	for (uint32_t i = 0; i < 8; i++)
		r.dest[i] = 100 + i;
	cr_assert_eq(flow_rss_check(&r), 0);
	len = build(f, &o);
	/* the first vector's addresses in place of the builder's */
	cr_assert_eq(inet_pton(AF_INET, "66.9.149.187", f + 14 + 12), 1);
	cr_assert_eq(inet_pton(AF_INET, "161.142.100.80", f + 14 + 16), 1);
	cr_assert_eq(flow_parse(f, len, &k), 0);
	/* 0x51ccc178 & 7 = 0 */
	cr_expect_eq(flow_rss_pick(&r, &k), 100);
	r.log_size = 6;
	for (uint32_t i = 0; i < 64; i++)
		r.dest[i] = 100 + i;
	cr_expect_eq(flow_rss_pick(&r, &k), 100 + (0x51ccc178u & 63));
	r.fields = FLOW_RSS_SRC_IPV4 | FLOW_RSS_DST_IPV4;
	cr_expect_eq(flow_rss_pick(&r, &k), 100 + (0x323e8fc2u & 63));
}

Test(flow_rss, check)
{
	struct flow_rss r = { .fields = FLOW_RSS_SRC_IPV4, .log_size = 3, .key_len = 40 };

	cr_expect_eq(flow_rss_check(&r), 0);
	r.fields = FLOW_RSS_SRC_IPV4 | FLOW_RSS_DST_IPV6;
	cr_expect_eq(flow_rss_check(&r), -EINVAL);
	r.fields = FLOW_RSS_SRC_PORT_TCP | FLOW_RSS_DST_PORT_UDP;
	cr_expect_eq(flow_rss_check(&r), -EINVAL);
	r.fields = 1u << 8; /* IBV_RX_HASH_IPSEC_SPI */
	cr_expect_eq(flow_rss_check(&r), -EOPNOTSUPP);
	r.fields = UINT64_C(1) << 31; /* IBV_RX_HASH_INNER */
	cr_expect_eq(flow_rss_check(&r), -EOPNOTSUPP);
	r.fields = 0; /* no field: every frame to entry 0, as mlx5 allows */
	cr_expect_eq(flow_rss_check(&r), 0);
	r.key_len = 39;
	cr_expect_eq(flow_rss_check(&r), -EINVAL);
	r.key_len = 40;
	r.log_size = FLOW_RSS_MAX_LOG + 1;
	cr_expect_eq(flow_rss_check(&r), -EINVAL);
}

/* The definition, bit by bit: input bit i adds key bits [i, i + 32). */
static uint32_t
toeplitz_ref(const uint8_t *key, size_t key_len, const uint8_t *in, size_t len)
{
	uint32_t h = 0;

	for (size_t i = 0; i < len * 8; i++) {
		uint32_t v = 0;

		if (!(in[i / 8] & (0x80u >> (i % 8))))
			continue;
		for (size_t k = i; k < i + 32; k++)
			v = v << 1 | (k / 8 < key_len ? (key[k / 8] >> (7 - k % 8)) & 1u : 0u);
		h ^= v;
	}
	return h;
}

/* flow_toeplitz() (a byte-wise window) against the definition: random keys, inputs, lengths. */
Test(flow_rss, toeplitz_equals_its_bitwise_definition)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint8_t key[40], in[FLOW_RSS_INPUT_MAX];

	for (int round = 0; round < 2000; round++) {
		size_t len = (size_t)(round % (FLOW_RSS_INPUT_MAX + 1));
		size_t key_len = round % 7 == 0 ? (size_t)(round % 41) : sizeof(key);

		for (size_t i = 0; i < sizeof(key); i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			key[i] = (uint8_t)x;
		}
		for (size_t i = 0; i < len; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			in[i] = (uint8_t)(x >> 8);
		}
		cr_assert_eq(flow_toeplitz(key, key_len, in, len), toeplitz_ref(key, key_len, in, len),
			     "round %d: key %zu bytes, input %zu bytes", round, key_len, len);
	}
}
