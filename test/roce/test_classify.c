/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * roce_classify(): every class with and without 802.1Q over IPv4 and IPv6,
 * the RoCE record identical to roce_parse()'s, and every prefix of every
 * kind of frame classified from a buffer that ends at an unmapped page (a
 * read past the end faults, in any build).
 */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pkt_equal.h"
#include "roce.h"
#include "test_gids.h"

enum kind { K_ROCE, K_ARP, K_ND, K_ECHO, K_ICMP_OTHER, K_UDP_OTHER, K_TCP, K_LLDP };

static uint8_t payload[256];

/* Ethernet (+ 802.1Q) header with @p type; @return its length. */
static size_t
put_eth(uint8_t *f, bool vlan, uint16_t type)
{
	static const uint8_t dst[6] = { 0x52, 0x54, 0, 0xc6, 0x12, 1 };
	static const uint8_t src[6] = { 0x02, 0, 0xc6, 0x12, 0, 2 };
	size_t off = 12;

	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	if (vlan) {
		f[off++] = 0x81;
		f[off++] = 0x00;
		f[off++] = 0x20;
		f[off++] = 0x64;
	}
	f[off++] = (uint8_t)(type >> 8);
	f[off++] = (uint8_t)type;
	return off;
}

/* IP header for @p l4_len bytes of protocol @p proto; @return its length. */
static size_t
put_ip(uint8_t *f, bool ipv6, uint8_t proto, size_t l4_len)
{
	if (ipv6) {
		memset(f, 0, 40);
		f[0] = 0x60;
		f[4] = (uint8_t)(l4_len >> 8);
		f[5] = (uint8_t)l4_len;
		f[6] = proto;
		f[7] = 64;
		f[8] = 0x20, f[9] = 0x01, f[23] = 2;
		f[24] = 0x20, f[25] = 0x01, f[39] = 1;
		return 40;
	}
	memset(f, 0, 20);
	f[0] = 0x45;
	f[2] = (uint8_t)((20 + l4_len) >> 8);
	f[3] = (uint8_t)(20 + l4_len);
	f[8] = 64;
	f[9] = proto;
	f[12] = 198, f[13] = 18, f[15] = 2;
	f[16] = 198, f[17] = 18, f[19] = 1;
	return 20;
}

static struct roce_pkt
roce_record(bool ipv6, bool vlan)
{
	struct roce_pkt p = {
		.opcode = ROCE_OP_RC_SEND_ONLY, .pkey = ROCE_DEFAULT_PKEY, .dest_qpn = 0x123456,
		.psn = 0xabcdef, .ack_req = true,
		.l3 = {
			.dmac = { 0x52, 0x54, 0, 0xc6, 0x12, 1 },
			.smac = { 0x02, 0, 0xc6, 0x12, 0, 2 },
			.vlan_present = vlan, .vlan_tci = 0x2064, .ipv6 = ipv6, .hop_limit = 64,
			.flow_label = ipv6 ? 0x12345 : 0, .udp_sport = 0xc123,
		},
		.hdrs = roce_opcode_desc(ROCE_OP_RC_SEND_ONLY)->hdrs,
		.payload = payload, .payload_len = 64,
	};

	test_gids(&p, ipv6);
	return p;
}

/* A whole frame of @p kind; @p l4 gets the offset of its L4 header (0: none). */
static size_t
make(uint8_t *f, size_t cap, enum kind kind, bool ipv6, bool vlan, uint8_t icmp_type, size_t *l4)
{
	size_t off, n;

	*l4 = 0;
	switch (kind) {
	case K_ROCE: {
		struct roce_pkt p = roce_record(ipv6, vlan);

		for (size_t i = 0; i < sizeof(payload); i++)
			payload[i] = (uint8_t)(i * 7 + 1);
		n = roce_build(&p, f, cap);
		cr_assert_gt(n, 0);
		*l4 = (vlan ? 18 : 14) + (ipv6 ? 40 : 20);
		return n;
	}
	case K_ARP:
		off = put_eth(f, vlan, ROCE_ETHERTYPE_ARP);
		memset(f + off, 0x11, 28);
		return off + 28;
	case K_LLDP:
		off = put_eth(f, vlan, 0x88cc);
		memset(f + off, 0x22, 46);
		return off + 46;
	case K_ND:
	case K_ECHO:
	case K_ICMP_OTHER:
		off = put_eth(f, vlan, ipv6 ? ROCE_ETHERTYPE_IPV6 : ROCE_ETHERTYPE_IPV4);
		off += put_ip(f + off, ipv6, ipv6 ? 58 : 1, 32);
		*l4 = off;
		memset(f + off, 0, 32);
		f[off] = icmp_type;
		return off + 32;
	case K_UDP_OTHER:
	case K_TCP:
		off = put_eth(f, vlan, ipv6 ? ROCE_ETHERTYPE_IPV6 : ROCE_ETHERTYPE_IPV4);
		off += put_ip(f + off, ipv6, kind == K_TCP ? 6 : 17, 40);
		*l4 = off;
		memset(f + off, 0, 40);
		f[off + 2] = 0x12, f[off + 3] = 0xb6; /* 4790: next to RoCE's */
		f[off + 5] = 40;
		return off + 40;
	}
	cr_assert_fail("kind %d", kind);
	return 0;
}

/* Pages whose end is followed by an unmapped page. */
static uint8_t *guard_base;
static size_t page;

static void
guard_setup(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	guard_base = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(guard_base, MAP_FAILED);
	cr_assert_eq(mprotect(guard_base + page, page, PROT_NONE), 0);
}

static void
guard_teardown(void)
{
	munmap(guard_base, 2 * page);
}

/* Classify @p len bytes of @p f copied to end exactly at the guard page. */
static enum roce_class
classify_at_end(const uint8_t *f, size_t len, unsigned int flags, struct roce_pkt *pkt,
		enum roce_drop_reason *drop)
{
	uint8_t *at = guard_base + page - len;

	cr_assert_leq(len, page);
	memcpy(at, f, len);
	return roce_classify(at, len, flags, pkt, drop);
}

TestSuite(classify, .init = guard_setup, .fini = guard_teardown);

Test(classify, roce_frames_are_parsed_as_roce_parse_parses_them)
{
	uint8_t f[512];
	size_t l4;

	for (int v6 = 0; v6 < 2; v6++) {
		for (int vlan = 0; vlan < 2; vlan++) {
			size_t n = make(f, sizeof(f), K_ROCE, v6, vlan, 0, &l4);
			struct roce_pkt got, want;
			enum roce_drop_reason why = ROCE_DROP_COUNT;

			cr_assert_eq(roce_parse(f, n, &want), ROCE_DROP_NONE);
			cr_assert_eq(classify_at_end(f, n, 0, &got, &why), ROCE_CLASS_ROCE,
				     "v6 %d vlan %d", v6, vlan);
			cr_assert_eq(why, ROCE_DROP_NONE, "%s", roce_drop_reason_name(why));
			/* the payload points into the frame classified: compare offsets */
			cr_assert_eq(got.payload - (guard_base + page - n), want.payload - f);
			got.payload = want.payload;
			const char *diff = pkt_diff(&got, &want);
			cr_assert_null(diff, "v6 %d vlan %d: %s differs", v6, vlan, diff);
			cr_expect_eq(got.l3.ipv6, (bool)v6);
			cr_expect_eq(got.l3.vlan_present, (bool)vlan);
			cr_expect_eq(got.dest_qpn, 0x123456u);
			cr_expect_eq(got.payload_len, 64u);

			/* the ICRC is checked unless told not to */
			f[n - 1] ^= 0x40;
			cr_expect_eq(classify_at_end(f, n, 0, &got, &why), ROCE_CLASS_ROCE);
			cr_expect_eq(why, ROCE_DROP_ICRC, "%s", roce_drop_reason_name(why));
			cr_expect_eq(classify_at_end(f, n, ROCE_CLASSIFY_NO_ICRC, &got, &why),
				     ROCE_CLASS_ROCE);
			cr_expect_eq(why, ROCE_DROP_NONE, "%s", roce_drop_reason_name(why));
			cr_expect_eq(got.dest_qpn, 0x123456u);

			/* any roce_parse() failure past the port is a ROCE frame's reason */
			f[n - 1] ^= 0x40;
			f[l4 + 8 + 1] |= 0x01; /* TVer 1 */
			cr_expect_eq(classify_at_end(f, n, ROCE_CLASSIFY_NO_ICRC, &got, &why),
				     ROCE_CLASS_ROCE);
			cr_expect_eq(why, ROCE_DROP_BTH_TVER, "%s", roce_drop_reason_name(why));
		}
	}
}

Test(classify, arp_nd_echo_and_other)
{
	static const struct {
		enum kind kind;
		bool v4, v6;     /* which IP versions the frame exists in */
		uint8_t type;
		enum roce_class want;
	} cases[] = {
		{ K_ARP, true, false, 0, ROCE_CLASS_ARP },
		{ K_LLDP, true, false, 0, ROCE_CLASS_OTHER },
		{ K_ECHO, true, false, 8, ROCE_CLASS_ECHO },
		{ K_ICMP_OTHER, true, false, 0, ROCE_CLASS_OTHER },  /* echo reply */
		{ K_ICMP_OTHER, true, false, 3, ROCE_CLASS_OTHER },  /* unreachable */
		{ K_ECHO, false, true, 128, ROCE_CLASS_ECHO },
		{ K_ICMP_OTHER, false, true, 129, ROCE_CLASS_OTHER }, /* echo reply */
		{ K_ICMP_OTHER, false, true, 132, ROCE_CLASS_OTHER },
		{ K_ND, false, true, 133, ROCE_CLASS_ND },
		{ K_ND, false, true, 134, ROCE_CLASS_ND },
		{ K_ND, false, true, 135, ROCE_CLASS_ND },
		{ K_ND, false, true, 136, ROCE_CLASS_ND },
		{ K_ND, false, true, 137, ROCE_CLASS_ND },
		{ K_ICMP_OTHER, false, true, 138, ROCE_CLASS_OTHER },
		{ K_UDP_OTHER, true, true, 0, ROCE_CLASS_OTHER },
		{ K_TCP, true, true, 0, ROCE_CLASS_OTHER },
	};
	uint8_t f[512];
	size_t l4;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int v6 = 0; v6 < 2; v6++) {
			if (!(v6 ? cases[i].v6 : cases[i].v4))
				continue;
			for (int vlan = 0; vlan < 2; vlan++) {
				size_t n = make(f, sizeof(f), cases[i].kind, v6, vlan, cases[i].type, &l4);
				struct roce_pkt pkt, untouched;
				enum roce_drop_reason why = ROCE_DROP_COUNT;

				memset(&pkt, 0xa5, sizeof(pkt));
				memcpy(&untouched, &pkt, sizeof(pkt));
				enum roce_class cls = classify_at_end(f, n, 0, &pkt, &why);

				cr_expect_eq(cls, cases[i].want, "case %zu v6 %d vlan %d: %s", i, v6,
					     vlan, roce_class_name(cls));
				cr_expect_eq(why, ROCE_DROP_NONE, "case %zu: %s", i,
					     roce_drop_reason_name(why));
				cr_expect_eq(memcmp(&pkt, &untouched, sizeof(pkt)), 0,
					     "case %zu: record written", i);
			}
		}
	}
}

/* The expected class of the first @p len bytes of a frame of @p kind. */
static void
expect_prefix(enum kind kind, bool v6, bool vlan, size_t len, size_t l4, enum roce_class cls,
	      enum roce_drop_reason why)
{
	size_t l3 = vlan ? 18 : 14;

	if (len < l3) {
		cr_expect_eq(cls, ROCE_CLASS_MALFORMED, "kind %d len %zu", kind, len);
		cr_expect_eq(why, ROCE_DROP_ETH_TRUNCATED, "kind %d len %zu: %s", kind, len,
			     roce_drop_reason_name(why));
		return;
	}
	if (kind == K_ARP) {
		cr_expect_eq(cls, ROCE_CLASS_ARP, "len %zu", len);
		cr_expect_eq(why, ROCE_DROP_NONE);
		return;
	}
	if (kind == K_LLDP) {
		cr_expect_eq(cls, ROCE_CLASS_OTHER, "len %zu", len);
		cr_expect_eq(why, ROCE_DROP_NONE);
		return;
	}
	if (len < l3 + (v6 ? 40 : 20)) {
		cr_expect_eq(cls, ROCE_CLASS_MALFORMED, "kind %d len %zu", kind, len);
		cr_expect_eq(why, ROCE_DROP_IP_TRUNCATED, "kind %d len %zu: %s", kind, len,
			     roce_drop_reason_name(why));
		return;
	}
	switch (kind) {
	case K_ND:
	case K_ECHO:
		/* an ICMP header cut short is not one the slow path could answer */
		cr_expect_eq(cls, len < l4 + 8 ? ROCE_CLASS_OTHER
					       : kind == K_ND ? ROCE_CLASS_ND : ROCE_CLASS_ECHO,
			     "kind %d len %zu: %s", kind, len, roce_class_name(cls));
		cr_expect_eq(why, ROCE_DROP_NONE);
		return;
	case K_TCP:
		cr_expect_eq(cls, ROCE_CLASS_OTHER, "len %zu", len);
		cr_expect_eq(why, ROCE_DROP_NONE);
		return;
	case K_UDP_OTHER:
	case K_ROCE:
		if (len < l4 + 8) {
			cr_expect_eq(cls, ROCE_CLASS_MALFORMED, "kind %d len %zu", kind, len);
			cr_expect_eq(why, ROCE_DROP_UDP_TRUNCATED, "kind %d len %zu: %s", kind, len,
				     roce_drop_reason_name(why));
		} else if (kind == K_UDP_OTHER) {
			cr_expect_eq(cls, ROCE_CLASS_OTHER, "len %zu", len);
			cr_expect_eq(why, ROCE_DROP_NONE);
		} else {
			/* the IP length no longer fits the frame */
			cr_expect_eq(cls, ROCE_CLASS_ROCE, "len %zu", len);
			cr_expect_eq(why, ROCE_DROP_IP_LENGTH, "len %zu: %s", len,
				     roce_drop_reason_name(why));
		}
		return;
	default:
		cr_assert_fail("kind %d", kind);
	}
}

Test(classify, truncated_frames_of_every_kind_never_read_past_the_end)
{
	static const struct { enum kind kind; uint8_t type4, type6; } kinds[] = {
		{ K_ROCE, 0, 0 }, { K_ARP, 0, 0 }, { K_LLDP, 0, 0 }, { K_ND, 0, 135 },
		{ K_ECHO, 8, 128 }, { K_UDP_OTHER, 0, 0 }, { K_TCP, 0, 0 },
	};
	uint8_t f[512];
	unsigned int checked = 0;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (int v6 = 0; v6 < 2; v6++) {
			if (kinds[k].kind == K_ND && !v6)
				continue;
			for (int vlan = 0; vlan < 2; vlan++) {
				size_t l4;
				size_t n = make(f, sizeof(f), kinds[k].kind, v6, vlan,
						v6 ? kinds[k].type6 : kinds[k].type4, &l4);

				for (size_t len = 0; len < n; len++) {
					struct roce_pkt pkt;
					enum roce_drop_reason why = ROCE_DROP_COUNT;
					enum roce_class cls = classify_at_end(f, len, 0, &pkt, &why);

					expect_prefix(kinds[k].kind, v6, vlan, len, l4, cls, why);
					checked++;
				}
			}
		}
	}
	cr_expect_gt(checked, 2000u);
}

Test(classify, names)
{
	cr_expect_str_eq(roce_class_name(ROCE_CLASS_ROCE), "roce");
	cr_expect_str_eq(roce_class_name(ROCE_CLASS_MALFORMED), "malformed");
	cr_expect_str_eq(roce_class_name(ROCE_CLASS_ARP), "arp");
	cr_expect_str_eq(roce_class_name(ROCE_CLASS_ND), "nd");
	cr_expect_str_eq(roce_class_name(ROCE_CLASS_ECHO), "echo");
	cr_expect_str_eq(roce_class_name(ROCE_CLASS_OTHER), "other");
	cr_expect_str_eq(roce_class_name((enum roce_class)99), "?");
}

/* roce_eth_vid(): the VID of an 802.1Q tag, 0 for untagged, priority-tagged and cut-short frames. */
Test(classify, the_vlan_of_a_frame)
{
	uint8_t f[64];
	size_t n = put_eth(f, true, ROCE_ETHERTYPE_ARP); /* TCI 0x2064: PCP 1, VID 100 */

	cr_expect_eq(roce_eth_vid(f, n), 100);
	f[14] = 0xef; /* PCP 7, DEI 1: the VID stays */
	cr_expect_eq(roce_eth_vid(f, n), 0xf64 & ROCE_VLAN_VID_MASK);
	f[14] = 0xa0;
	f[15] = 0x00; /* priority-tagged: the untagged network */
	cr_expect_eq(roce_eth_vid(f, n), 0);
	f[14] = 0x0f;
	f[15] = 0xfe;
	cr_expect_eq(roce_eth_vid(f, n), 4094);
	for (size_t len = 0; len < 18; len++)
		cr_expect_eq(roce_eth_vid(f, len), 0, "cut short at %zu: no tag read", len);
	n = put_eth(f, false, ROCE_ETHERTYPE_IPV4);
	cr_expect_eq(roce_eth_vid(f, 60), 0, "untagged");
}
