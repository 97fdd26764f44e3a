/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CNP builder (roce_cnp_init() + roce_build()): the whole frame checked
 * byte by byte against the layout of IBTA Annex A17.9.3 (as ConnectX sends
 * it and scapy's cnp() builds it), over IPv4 and IPv6 and with an 802.1Q
 * tag; the ICRC against zlib over a copy masked by hand; and the frame
 * parsed back.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <zlib.h>

#include "roce.h"
#include "test_gids.h"

static struct roce_l3
cnp_l3(bool ipv6, bool vlan)
{
	struct roce_l3 l3 = {
		.dmac = { 0x52, 0x54, 0, 0xc6, 0x12, 1 },
		.smac = { 0x02, 0, 0xc6, 0x12, 0, 2 },
		.vlan_present = vlan, .vlan_tci = 6u << 13 | 100,
		.ipv6 = ipv6, .traffic_class = 48 << 2, .hop_limit = 64, .flow_label = 0,
		.ip_id = 0x1234, .udp_sport = 0xc00f,
	};
	struct roce_pkt tmp;

	test_gids(&tmp, ipv6);
	memcpy(l3.sgid, tmp.l3.sgid, 16);
	memcpy(l3.dgid, tmp.l3.dgid, 16);
	return l3;
}

/* zlib CRC-32 of the ICRC input: 8 x 0xff, then IP..CNP with the variant fields masked. */
static uint32_t
icrc_by_hand(const uint8_t *l3, size_t covered, bool ipv6)
{
	uint8_t c[128], ff[8];
	size_t udp = ipv6 ? 40 : 20;

	memcpy(c, l3, covered);
	if (ipv6) {
		c[0] |= 0x0f;
		c[1] = c[2] = c[3] = 0xff; /* traffic class + flow label */
		c[7] = 0xff;               /* hop limit */
	} else {
		c[1] = 0xff;               /* TOS */
		c[8] = 0xff;               /* TTL */
		c[10] = c[11] = 0xff;      /* header checksum */
	}
	c[udp + 6] = c[udp + 7] = 0xff; /* UDP checksum */
	c[udp + 8 + 4] = 0xff;          /* BTH byte 4: FECN, BECN, resv6a */
	memset(ff, 0xff, 8);
	return (uint32_t)crc32(crc32(0, ff, 8), c, (uInt)covered);
}

static void
check_cnp(bool ipv6, bool vlan)
{
	struct roce_l3 l3 = cnp_l3(ipv6, vlan);
	struct roce_pkt cnp, back;
	uint8_t f[256];
	size_t l2 = vlan ? 18 : 14, ip = ipv6 ? 40 : 20;
	size_t len;

	roce_cnp_init(&cnp, &l3, 0xffff, 0xabcdef);
	len = roce_build(&cnp, f, sizeof(f));
	/* Ethernet (+tag) + IP + UDP 8 + BTH 12 + reserved 16 + ICRC 4 */
	cr_assert_eq(len, l2 + ip + 8 + 12 + 16 + 4, "length %zu", len);

	/* Ethernet */
	cr_expect_arr_eq(f, l3.dmac, 6);
	cr_expect_arr_eq(f + 6, l3.smac, 6);
	if (vlan) {
		static const uint8_t tag[4] = { 0x81, 0x00, 0xc0, 0x64 }; /* PCP 6, VID 100 */
		cr_expect_arr_eq(f + 12, tag, 4);
	}
	cr_expect_eq(f[l2 - 2], ipv6 ? 0x86 : 0x08);
	cr_expect_eq(f[l2 - 1], ipv6 ? 0xdd : 0x00);

	/* IP: DSCP 48, not-ECT; protocol UDP; length */
	const uint8_t *h = f + l2;
	size_t udp_len = 8 + 12 + 16 + 4;
	if (ipv6) {
		cr_expect_eq(h[0], 0x6c);     /* version 6, traffic class 0xc0 high nibble */
		cr_expect_eq(h[1] & 0xf0, 0); /* traffic class low nibble: ECN not-ECT */
		cr_expect_eq(h[4] << 8 | h[5], udp_len);
		cr_expect_eq(h[6], 17);
		cr_expect_eq(h[7], 64);
	} else {
		cr_expect_eq(h[0], 0x45);
		cr_expect_eq(h[1], 0xc0);     /* DSCP 48 << 2 | not-ECT */
		cr_expect_eq(h[2] << 8 | h[3], 20 + udp_len);
		cr_expect_eq(h[6], 0x40);     /* DF */
		cr_expect_eq(h[8], 64);
		cr_expect_eq(h[9], 17);
	}

	/* UDP: source port, 4791, length, checksum 0 */
	const uint8_t *u = h + ip;
	static const uint8_t udp[8] = { 0xc0, 0x0f, 0x12, 0xb7, 0, 40, 0, 0 };
	cr_expect_arr_eq(u, udp, 8);

	/* BTH: opcode 0x81, SE/M/pad/TVer 0, P_Key 0xffff, FECN 0 BECN 1,
	 * DestQP 0xabcdef, AckReq 0, PSN 0 */
	static const uint8_t bth[12] = { 0x81, 0x00, 0xff, 0xff, 0x40, 0xab, 0xcd, 0xef,
					 0, 0, 0, 0 };
	cr_expect_arr_eq(u + 8, bth, 12);

	/* 16 reserved bytes */
	static const uint8_t zero[16];
	cr_expect_arr_eq(u + 20, zero, 16);

	/* ICRC, least significant byte first */
	uint32_t crc = icrc_by_hand(h, ip + 8 + 12 + 16, ipv6);
	const uint8_t *t = u + 36;
	cr_expect_eq((uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
			     (uint32_t)t[3] << 24, crc);

	/* and it parses back as a valid CNP */
	cr_assert_eq(roce_parse(f, len, &back), ROCE_DROP_NONE);
	cr_expect_eq(back.opcode, ROCE_OP_CNP);
	cr_expect(back.becn && !back.fecn && !back.ack_req);
	cr_expect_eq(back.dest_qpn, 0xabcdef);
	cr_expect_eq(back.psn, 0);
	cr_expect_eq(back.pkey, 0xffff);
	cr_expect_eq(back.payload_len, 0);
}

Test(cnp, layout_ipv4)
{
	check_cnp(false, false);
}

Test(cnp, layout_ipv6)
{
	check_cnp(true, false);
}

Test(cnp, layout_vlan_priority)
{
	check_cnp(false, true);
	check_cnp(true, true);
}

/* The fields roce_cnp_init() sets, whatever the record held before. */
Test(cnp, init_overwrites_the_record)
{
	struct roce_l3 l3 = cnp_l3(false, false);
	struct roce_pkt p;

	memset(&p, 0xa5, sizeof(p));
	roce_cnp_init(&p, &l3, 0x8001, 0x1000001); /* DestQP is 24 bits */
	cr_expect_eq(p.opcode, 0x81);
	cr_expect_eq(p.dest_qpn, 0x000001);
	cr_expect_eq(p.pkey, 0x8001);
	cr_expect(p.becn && !p.fecn && !p.se && !p.migreq && !p.ack_req);
	cr_expect_eq(p.psn, 0);
	cr_expect_eq(p.pad, 0);
	cr_expect_eq(p.tver, 0);
	cr_expect_eq(p.resv6a, 0);
	cr_expect_eq(p.resv7, 0);
	cr_expect_eq(p.payload_len, 0);
	cr_expect_null(p.payload);
	cr_expect(roce_pkt_has(&p, ROCE_HDR_CNP));
}

/* Malformed CNPs are dropped by the parser with a reason: a payload, a pad count. */
Test(cnp, malformed_dropped_by_parser)
{
	struct roce_l3 l3 = cnp_l3(false, false);
	struct roce_pkt cnp, back;
	uint8_t f[256];
	size_t len;

	roce_cnp_init(&cnp, &l3, 0xffff, 7);
	len = roce_build(&cnp, f, sizeof(f));
	/* a pad count: BTH byte 1 bits 5:4 (the ICRC no longer matches either,
	 * so parse without it to see the layout check) */
	f[14 + 20 + 8 + 1] = 0x10;
	cr_expect_eq(roce_parse_no_icrc(f, len, &back), ROCE_DROP_PAD);
	/* 4 bytes more than a CNP carries */
	roce_cnp_init(&cnp, &l3, 0xffff, 7);
	static const uint8_t extra[4] = { 1, 2, 3, 4 };
	cnp.payload = extra;
	cnp.payload_len = 4;
	len = roce_build(&cnp, f, sizeof(f));
	cr_assert_gt(len, 0);
	cr_expect_eq(roce_parse(f, len, &back), ROCE_DROP_PAYLOAD_LENGTH);
}
