/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multicast groups on the link (roce_mcast.h): group MACs, IGMP and MLDv2
 * reports and queries.
 */
#include <endian.h>
#include <string.h>

#include "roce.h"
#include "roce_internal.h"
#include "roce_mcast.h"

#define IPPROTO_IGMP_ 2u
#define IPPROTO_HOPOPTS_ 0u
#define IPPROTO_ICMPV6_ 58u
#define IGMP_QUERY 0x11u
#define IGMPV2_REPORT 0x16u
#define IGMPV2_LEAVE 0x17u
#define IGMPV3_REPORT 0x22u
#define MLD_QUERY 130u
#define MLDV2_REPORT 143u
/* RFC 3376 section 4.2.12 / RFC 3810 section 5.2.12 record types */
#define REC_MODE_IS_EXCLUDE 2u
#define REC_CHANGE_TO_INCLUDE 3u
#define REC_CHANGE_TO_EXCLUDE 4u

bool
roce_gid_is_v4mapped(const uint8_t gid[16])
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(gid, prefix, sizeof(prefix)) == 0;
}

bool
roce_gid_is_mcast(const uint8_t gid[16])
{
	return gid[0] == 0xff || (roce_gid_is_v4mapped(gid) && (gid[12] & 0xf0) == 0xe0);
}

void
roce_mcast_mac(const uint8_t gid[16], uint8_t mac[6])
{
	if (roce_gid_is_v4mapped(gid)) {
		/* RFC 1112 section 6.4 */
		mac[0] = 0x01;
		mac[1] = 0x00;
		mac[2] = 0x5e;
		mac[3] = gid[13] & 0x7f;
		mac[4] = gid[14];
		mac[5] = gid[15];
	} else {
		/* RFC 2464 section 7 */
		mac[0] = 0x33;
		mac[1] = 0x33;
		memcpy(mac + 2, gid + 12, 4);
	}
}

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The ICMPv6 checksum sum over the pseudo-header (RFC 8200 section 8.1) and @p len bytes. */
static uint16_t
icmp6_sum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *icmp, size_t len)
{
	uint8_t tail[8] = { 0, 0, (uint8_t)(len >> 8), (uint8_t)len, 0, 0, 0, IPPROTO_ICMPV6_ };
	uint32_t sum = roce_csum_add(0, src, 16);

	tail[0] = (uint8_t)(len >> 24);
	tail[1] = (uint8_t)(len >> 16);
	sum = roce_csum_add(sum, dst, 16);
	sum = roce_csum_add(sum, tail, sizeof(tail));
	return roce_csum_fold(roce_csum_add(sum, icmp, len));
}

static bool
igmp_query_parse(const uint8_t *ip, size_t len, struct roce_mcast_query *q)
{
	size_t ihl, tot;
	const uint8_t *g;

	if (len < 20 || (ip[0] >> 4) != 4 || ip[9] != IPPROTO_IGMP_)
		return false;
	ihl = (size_t)(ip[0] & 0xf) * 4;
	tot = rd16(ip + 2);
	if (ihl < 20 || tot > len || tot < ihl + 8)
		return false;
	g = ip + ihl;
	len = tot - ihl;
	if (g[0] != IGMP_QUERY || roce_csum_fold(roce_csum_add(0, g, len)) != 0xffff)
		return false;
	memset(q, 0, sizeof(*q));
	if (len >= 12) {
		q->version = 3;
		/* RFC 3376 section 4.1.1: Max Resp Code in 1/10 s, exponential above 128 */
		q->max_resp_ms = g[1] < 128 ? g[1] * 100u
					    : ((uint32_t)((g[1] & 0x0f) | 0x10) << ((g[1] >> 4 & 7) + 3)) * 100u;
	} else {
		q->version = g[1] == 0 ? 1 : 2;
		q->max_resp_ms = g[1] == 0 ? 10000u : g[1] * 100u;
	}
	if (memcmp(g + 4, "\0\0\0\0", 4) != 0) {
		q->group[10] = 0xff;
		q->group[11] = 0xff;
		memcpy(q->group + 12, g + 4, 4);
	}
	return true;
}

static bool
mld_query_parse(const uint8_t *ip, size_t len, struct roce_mcast_query *q)
{
	const uint8_t *p = ip + sizeof(struct roce_ipv6_hdr);
	uint8_t nh;
	size_t plen, icmp_len;

	if (len < sizeof(struct roce_ipv6_hdr) || (ip[0] >> 4) != 6)
		return false;
	plen = rd16(ip + 4);
	nh = ip[6];
	if (plen > len - sizeof(struct roce_ipv6_hdr))
		return false;
	if (nh == IPPROTO_HOPOPTS_) {
		size_t hl;

		if (plen < 8)
			return false;
		hl = ((size_t)p[1] + 1) * 8;
		if (hl > plen)
			return false;
		nh = p[0];
		p += hl;
		plen -= hl;
	}
	icmp_len = plen;
	if (nh != IPPROTO_ICMPV6_ || icmp_len < 24 || p[0] != MLD_QUERY ||
	    icmp6_sum(ip + 8, ip + 24, p, icmp_len) != 0xffff)
		return false;
	memset(q, 0, sizeof(*q));
	q->ipv6 = true;
	q->version = icmp_len >= 28 ? 2 : 1;
	/* RFC 3810 section 5.1.3: Maximum Response Code in ms, exponential from 32768 */
	{
		uint16_t c = rd16(p + 4);

		q->max_resp_ms = c < 32768 ? c : (uint32_t)((c & 0x0fff) | 0x1000) << ((c >> 12 & 7) + 3);
	}
	memcpy(q->group, p + 8, 16);
	return true;
}

bool
roce_mcast_query_parse(const uint8_t *frame, size_t len, struct roce_mcast_query *q)
{
	uint16_t et;
	size_t l3;

	/* a query on the port's VLAN comes tagged */
	if (!roce_eth_l3(frame, len, &l3, &et))
		return false;
	frame += l3;
	len -= l3;
	if (et == ROCE_ETHERTYPE_IPV4)
		return igmp_query_parse(frame, len, q);
	if (et == ROCE_ETHERTYPE_IPV6)
		return mld_query_parse(frame, len, q);
	return false;
}

static uint8_t
rec_type(enum roce_mcast_rec rec)
{
	switch (rec) {
	case ROCE_MCAST_JOIN: return REC_CHANGE_TO_EXCLUDE;
	case ROCE_MCAST_LEAVE: return REC_CHANGE_TO_INCLUDE;
	case ROCE_MCAST_CURRENT:
	default: return REC_MODE_IS_EXCLUDE;
	}
}

static size_t
eth_put(uint8_t *buf, const uint8_t dst_gid[16], const uint8_t src_mac[6], uint16_t et)
{
	roce_mcast_mac(dst_gid, buf);
	memcpy(buf + 6, src_mac, 6);
	wr16(buf + 12, et);
	return sizeof(struct roce_eth_hdr);
}

static size_t
igmp_build(uint8_t *buf, size_t cap, const uint8_t src_mac[6], const uint8_t src_gid[16],
	   unsigned int version, enum roce_mcast_rec rec, const uint8_t (*groups)[16],
	   unsigned int n)
{
	uint8_t dst[16] = { [10] = 0xff, [11] = 0xff, [12] = 224, [15] = 22 };
	size_t body = version == 2 ? 8 : 8 + 8 * (size_t)n;
	size_t ihl = 24, off;
	uint8_t *ip, *g;

	if (version == 2) {
		if (n != 1)
			return 0;
		if (rec == ROCE_MCAST_LEAVE)
			dst[15] = 2; /* all routers, RFC 2236 section 3 */
		else
			memcpy(dst, groups[0], 16);
	}
	if (cap < sizeof(struct roce_eth_hdr) + ihl + body)
		return 0;
	memset(buf, 0, sizeof(struct roce_eth_hdr) + ihl + body);
	off = eth_put(buf, dst, src_mac, ROCE_ETHERTYPE_IPV4);
	ip = buf + off;
	ip[0] = 0x46;
	ip[1] = 0xc0;
	wr16(ip + 2, (uint16_t)(ihl + body));
	wr16(ip + 6, 0x4000); /* DF */
	ip[8] = 1;            /* TTL 1: link-local scope */
	ip[9] = IPPROTO_IGMP_;
	memcpy(ip + 12, src_gid + 12, 4);
	memcpy(ip + 16, dst + 12, 4);
	ip[20] = 0x94; /* Router Alert, RFC 2113 */
	ip[21] = 4;
	wr16(ip + 10, (uint16_t)~roce_csum_fold(roce_csum_add(0, ip, ihl)));
	g = ip + ihl;
	if (version == 2) {
		g[0] = rec == ROCE_MCAST_LEAVE ? IGMPV2_LEAVE : IGMPV2_REPORT;
		memcpy(g + 4, groups[0] + 12, 4);
	} else {
		g[0] = IGMPV3_REPORT;
		wr16(g + 6, (uint16_t)n);
		for (unsigned int i = 0; i < n; i++) {
			uint8_t *r = g + 8 + 8 * i;

			r[0] = rec_type(rec);
			memcpy(r + 4, groups[i] + 12, 4);
		}
	}
	wr16(g + 2, (uint16_t)~roce_csum_fold(roce_csum_add(0, g, body)));
	return off + ihl + body;
}

static size_t
mld_build(uint8_t *buf, size_t cap, const uint8_t src_mac[6], const uint8_t src_gid[16],
	  enum roce_mcast_rec rec, const uint8_t (*groups)[16], unsigned int n)
{
	static const uint8_t dst[16] = { 0xff, 0x02, [15] = 0x16 }; /* all MLDv2 routers */
	/* next header ICMPv6, length 0, Router Alert (RFC 2711) value 0 = MLD, PadN */
	static const uint8_t hbh[8] = { IPPROTO_ICMPV6_, 0, 5, 2, 0, 0, 1, 0 };
	size_t body = 8 + 20 * (size_t)n, off;
	uint8_t *ip, *m;

	if (cap < sizeof(struct roce_eth_hdr) + sizeof(struct roce_ipv6_hdr) + 8 + body)
		return 0;
	memset(buf, 0, sizeof(struct roce_eth_hdr) + sizeof(struct roce_ipv6_hdr) + 8 + body);
	off = eth_put(buf, dst, src_mac, ROCE_ETHERTYPE_IPV6);
	ip = buf + off;
	ip[0] = 0x60;
	wr16(ip + 4, (uint16_t)(8 + body));
	ip[6] = IPPROTO_HOPOPTS_;
	ip[7] = 1;
	memcpy(ip + 8, src_gid, 16);
	memcpy(ip + 24, dst, 16);
	memcpy(ip + 40, hbh, sizeof(hbh));
	m = ip + 48;
	m[0] = MLDV2_REPORT;
	wr16(m + 6, (uint16_t)n);
	for (unsigned int i = 0; i < n; i++) {
		uint8_t *r = m + 8 + 20 * i;

		r[0] = rec_type(rec);
		memcpy(r + 4, groups[i], 16);
	}
	wr16(m + 2, (uint16_t)~icmp6_sum(src_gid, dst, m, body));
	return off + sizeof(struct roce_ipv6_hdr) + 8 + body;
}

size_t
roce_mcast_report_build(uint8_t *buf, size_t cap, const uint8_t src_mac[6],
			const uint8_t src_gid[16], unsigned int version, enum roce_mcast_rec rec,
			const uint8_t (*groups)[16], unsigned int n)
{
	bool v4;

	if (n == 0 || n > 64)
		return 0;
	v4 = roce_gid_is_v4mapped(groups[0]);
	for (unsigned int i = 0; i < n; i++)
		if (!roce_gid_is_mcast(groups[i]) || roce_gid_is_v4mapped(groups[i]) != v4)
			return 0;
	if (v4)
		return version == 2 || version == 3
			       ? igmp_build(buf, cap, src_mac, src_gid, version, rec, groups, n)
			       : 0;
	return version == 2 ? mld_build(buf, cap, src_mac, src_gid, rec, groups, n) : 0;
}
