/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/roce roce_mcast.c: multicast GIDs and MACs, IGMP/MLDv2 reports as
 * Linux sends them (checked field by field and with an independent
 * checksum), and query parsing (good, bad checksum, truncated).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <string.h>

#include "ref_csum.h"
#include "roce.h"
#include "roce_mcast.h"

static void v4(uint8_t g[16], const char *ip)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	cr_assert_eq(inet_pton(AF_INET, ip, g + 12), 1);
}

static void v6(uint8_t g[16], const char *ip)
{
	cr_assert_eq(inet_pton(AF_INET6, ip, g), 1);
}

static const uint8_t mac[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x0b };

Test(roce_mcast, multicast_gids)
{
	uint8_t g[16];

	v4(g, "239.1.2.3");
	cr_assert(roce_gid_is_mcast(g));
	v4(g, "224.0.0.1");
	cr_assert(roce_gid_is_mcast(g));
	v4(g, "240.0.0.1");
	cr_assert_not(roce_gid_is_mcast(g));
	v4(g, "198.18.0.11");
	cr_assert_not(roce_gid_is_mcast(g));
	v6(g, "ff0e::db8:1");
	cr_assert(roce_gid_is_mcast(g));
	v6(g, "2001:db8::11");
	cr_assert_not(roce_gid_is_mcast(g));
	v6(g, "::239.1.2.3"); /* IPv4-compatible, not mapped */
	cr_assert_not(roce_gid_is_mcast(g));
}

Test(roce_mcast, group_macs)
{
	static const uint8_t m1[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
	static const uint8_t m2[6] = { 0x33, 0x33, 0x0d, 0xb8, 0x00, 0x01 };
	uint8_t g[16], m[6];

	v4(g, "239.1.2.3");
	roce_mcast_mac(g, m);
	cr_assert_arr_eq(m, m1, 6);
	v4(g, "239.129.2.3"); /* RFC 1112: only the low 23 bits */
	roce_mcast_mac(g, m);
	cr_assert_arr_eq(m, m1, 6);
	v6(g, "ff0e::db8:1");
	roce_mcast_mac(g, m);
	cr_assert_arr_eq(m, m2, 6);
}

static void check_ipv4(const uint8_t *f, size_t len, const char *dst)
{
	const uint8_t *ip = f + 14;
	uint8_t d[4];

	cr_assert_geq(len, 14 + 24 + 8u);
	cr_assert_eq(f[12] << 8 | f[13], 0x0800);
	cr_assert_eq(ip[0], 0x46, "IHL 6: the Router Alert option");
	cr_assert_eq(ip[1], 0xc0);
	cr_assert_eq(ip[8], 1, "TTL 1");
	cr_assert_eq(ip[9], 2, "IGMP");
	cr_assert_eq(ip[20], 0x94);
	cr_assert_eq(ip[21], 4);
	cr_assert_eq((size_t)(ip[2] << 8 | ip[3]), len - 14);
	cr_assert_eq(ref_csum16(ip, 24, 0), 0xffff, "IP header checksum");
	cr_assert_eq(ref_csum16(ip + 24, len - 14 - 24, 0), 0xffff, "IGMP checksum");
	inet_pton(AF_INET, dst, d);
	cr_assert_arr_eq(ip + 16, d, 4);
	cr_assert_eq(f[0], 0x01);
	cr_assert_eq(f[3], d[1] & 0x7f);
	cr_assert_arr_eq(f + 6, mac, 6);
}

Test(roce_mcast, igmpv3_join_and_leave)
{
	uint8_t g[2][16], src[16], f[256];
	size_t len;

	v4(g[0], "239.1.2.3");
	v4(g[1], "239.1.2.4");
	v4(src, "198.18.0.11");
	len = roce_mcast_report_build(f, sizeof(f), mac, src, 3, ROCE_MCAST_JOIN, g, 2);
	cr_assert_eq(len, 14 + 24 + 8 + 16u);
	check_ipv4(f, len, "224.0.0.22");
	cr_assert_arr_eq(f + 14 + 12, src + 12, 4);
	cr_assert_eq(f[38], 0x22, "IGMPv3 membership report");
	cr_assert_eq(f[38 + 7], 2, "two records");
	cr_assert_eq(f[46], 4, "CHANGE_TO_EXCLUDE");
	cr_assert_arr_eq(f + 50, g[0] + 12, 4);
	cr_assert_arr_eq(f + 58, g[1] + 12, 4);
	len = roce_mcast_report_build(f, sizeof(f), mac, src, 3, ROCE_MCAST_LEAVE, g, 1);
	check_ipv4(f, len, "224.0.0.22");
	cr_assert_eq(f[46], 3, "CHANGE_TO_INCLUDE");
	len = roce_mcast_report_build(f, sizeof(f), mac, src, 3, ROCE_MCAST_CURRENT, g, 1);
	cr_assert_eq(f[46], 2, "MODE_IS_EXCLUDE");
}

Test(roce_mcast, igmpv2_report_and_leave)
{
	uint8_t g[2][16], src[16], f[256];
	size_t len;

	v4(g[0], "239.1.2.3");
	v4(g[1], "239.1.2.4");
	v4(src, "198.18.0.11");
	len = roce_mcast_report_build(f, sizeof(f), mac, src, 2, ROCE_MCAST_JOIN, g, 1);
	cr_assert_eq(len, 14 + 24 + 8u);
	check_ipv4(f, len, "239.1.2.3");
	cr_assert_eq(f[38], 0x16);
	cr_assert_arr_eq(f + 42, g[0] + 12, 4);
	len = roce_mcast_report_build(f, sizeof(f), mac, src, 2, ROCE_MCAST_LEAVE, g, 1);
	check_ipv4(f, len, "224.0.0.2");
	cr_assert_eq(f[38], 0x17);
	cr_assert_eq(roce_mcast_report_build(f, sizeof(f), mac, src, 2, ROCE_MCAST_JOIN, g, 2), 0u,
		     "IGMPv2: one group per message");
}

Test(roce_mcast, mldv2_join)
{
	uint8_t g[1][16], src[16], f[256], dst[16];
	const uint8_t *ip = f + 14, *m = f + 14 + 48;
	size_t len, mlen;
	uint8_t pseudo[40];
	uint32_t sum;

	v6(g[0], "ff0e::db8:1");
	v6(src, "fe80::ff:fec6:120b");
	v6(dst, "ff02::16");
	len = roce_mcast_report_build(f, sizeof(f), mac, src, 2, ROCE_MCAST_JOIN, g, 1);
	mlen = len - 14 - 48;
	cr_assert_eq(mlen, 8 + 20u);
	cr_assert_eq(f[0], 0x33);
	cr_assert_eq(f[5], 0x16);
	cr_assert_eq(ip[6], 0, "hop-by-hop header");
	cr_assert_eq(ip[7], 1, "hop limit 1");
	cr_assert_arr_eq(ip + 8, src, 16);
	cr_assert_arr_eq(ip + 24, dst, 16);
	cr_assert_eq(ip[40], 58);
	cr_assert_eq(ip[42], 5, "Router Alert");
	cr_assert_eq(m[0], 143);
	cr_assert_eq(m[8], 4, "CHANGE_TO_EXCLUDE");
	cr_assert_arr_eq(m + 12, g[0], 16);
	memset(pseudo, 0, sizeof(pseudo));
	memcpy(pseudo, src, 16);
	memcpy(pseudo + 16, dst, 16);
	pseudo[35] = (uint8_t)mlen;
	pseudo[39] = 58;
	sum = ref_csum16(pseudo, sizeof(pseudo), 0);
	cr_assert_eq(ref_csum16(m, mlen, sum), 0xffff, "ICMPv6 checksum");
	v4(g[0], "239.1.2.3");
	cr_assert_eq(roce_mcast_report_build(f, sizeof(f), mac, src, 1, ROCE_MCAST_JOIN, g, 1), 0u,
		     "IGMPv1 reports are not sent");
}

Test(roce_mcast, mixed_or_unicast_groups_refused)
{
	uint8_t g[2][16], src[16], f[256];

	v4(src, "198.18.0.11");
	v4(g[0], "239.1.2.3");
	v6(g[1], "ff0e::1");
	cr_assert_eq(roce_mcast_report_build(f, sizeof(f), mac, src, 3, ROCE_MCAST_JOIN, g, 2), 0u);
	v4(g[0], "198.18.0.12");
	cr_assert_eq(roce_mcast_report_build(f, sizeof(f), mac, src, 3, ROCE_MCAST_JOIN, g, 1), 0u);
	v4(g[0], "239.1.2.3");
	cr_assert_eq(roce_mcast_report_build(f, 40, mac, src, 3, ROCE_MCAST_JOIN, g, 1), 0u,
		     "does not fit");
}

/* An IGMP query frame: version 2 (8 bytes) or 3 (12 bytes), for @p grp (NULL: general). */
static size_t igmp_query(uint8_t *f, unsigned int version, const char *grp, uint8_t code)
{
	uint8_t *ip = f + 14, *g = ip + 24;
	size_t body = version == 3 ? 12 : 8;
	uint16_t c;

	memset(f, 0, 14 + 24 + body);
	f[12] = 0x08;
	ip[0] = 0x46;
	ip[2] = 0;
	ip[3] = (uint8_t)(24 + body);
	ip[8] = 1;
	ip[9] = 2;
	ip[20] = 0x94;
	ip[21] = 4;
	c = (uint16_t)~ref_csum16(ip, 24, 0);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	g[0] = 0x11;
	g[1] = code;
	if (grp != NULL)
		inet_pton(AF_INET, grp, g + 4);
	c = (uint16_t)~ref_csum16(g, body, 0);
	g[2] = (uint8_t)(c >> 8);
	g[3] = (uint8_t)c;
	return 14 + 24 + body;
}

Test(roce_mcast, igmp_queries)
{
	struct roce_mcast_query q;
	uint8_t f[128], g[16];
	size_t len;

	len = igmp_query(f, 2, NULL, 100);
	cr_assert(roce_mcast_query_parse(f, len, &q));
	cr_assert_eq(q.version, 2);
	cr_assert_not(q.ipv6);
	cr_assert_eq(q.max_resp_ms, 10000u);
	cr_assert_eq(q.group[10], 0, "general query");
	len = igmp_query(f, 3, "239.1.2.3", 0x8f); /* exponential code: (0xf | 0x10) << 3 */
	cr_assert(roce_mcast_query_parse(f, len, &q));
	cr_assert_eq(q.version, 3);
	cr_assert_eq(q.max_resp_ms, (0x1fu << 3) * 100);
	v4(g, "239.1.2.3");
	cr_assert_arr_eq(q.group, g, 16);
	len = igmp_query(f, 2, NULL, 0);
	cr_assert(roce_mcast_query_parse(f, len, &q));
	cr_assert_eq(q.version, 1);
	f[len - 1] ^= 1; /* checksum now wrong */
	cr_assert_not(roce_mcast_query_parse(f, len, &q));
	len = igmp_query(f, 2, NULL, 100);
	cr_assert_not(roce_mcast_query_parse(f, len - 1, &q), "truncated");
	f[14 + 24] = 0x16; /* a report is not a query */
	cr_assert_not(roce_mcast_query_parse(f, len, &q));
	/* on a VLAN: the same query after an 802.1Q tag */
	len = igmp_query(f, 3, "239.1.2.3", 0x8f);
	memmove(f + 16, f + 12, len - 12);
	f[12] = 0x81;
	f[13] = 0x00;
	f[14] = 0x00;
	f[15] = 100;
	len += 4;
	cr_assert(roce_mcast_query_parse(f, len, &q), "a tagged query");
	cr_assert_eq(q.version, 3);
	cr_assert_arr_eq(q.group, g, 16);
	cr_assert_not(roce_mcast_query_parse(f, 17, &q), "cut in its tag");
}

Test(roce_mcast, mld_query)
{
	struct roce_mcast_query q;
	uint8_t f[128], src[16], dst[16], pseudo[40];
	uint8_t *ip = f + 14, *m = ip + 48;
	size_t mlen = 28;
	uint16_t c;

	memset(f, 0, sizeof(f));
	f[12] = 0x86;
	f[13] = 0xdd;
	ip[0] = 0x60;
	ip[5] = (uint8_t)(8 + mlen);
	ip[6] = 0;
	ip[7] = 1;
	v6(src, "fe80::1");
	v6(dst, "ff02::1");
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	ip[40] = 58;
	ip[42] = 5;
	ip[43] = 2;
	ip[46] = 1;
	m[0] = 130;
	m[4] = 0x27;
	m[5] = 0x10; /* 10000 ms */
	memcpy(pseudo, src, 16);
	memcpy(pseudo + 16, dst, 16);
	memset(pseudo + 32, 0, 8);
	pseudo[35] = (uint8_t)mlen;
	pseudo[39] = 58;
	c = (uint16_t)~ref_csum16(m, mlen, ref_csum16(pseudo, 40, 0));
	m[2] = (uint8_t)(c >> 8);
	m[3] = (uint8_t)c;
	cr_assert(roce_mcast_query_parse(f, 14 + 48 + mlen, &q));
	cr_assert(q.ipv6);
	cr_assert_eq(q.version, 2);
	cr_assert_eq(q.max_resp_ms, 10000u);
	cr_assert_eq(q.group[0], 0, "general query");
	m[2] ^= 0x40;
	cr_assert_not(roce_mcast_query_parse(f, 14 + 48 + mlen, &q), "bad checksum");
}
