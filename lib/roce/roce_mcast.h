/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Multicast on the link for UD multicast groups: group GIDs, their MACs,
 * and the IGMP (RFC 2236, RFC 3376) and MLDv2 (RFC 3810) messages a member
 * host sends, built and parsed without DPDK.
 *
 * A RoCEv2 multicast group is a GID: an IPv6 multicast address (ff00::/8)
 * or an IPv4 one mapped as ::ffff:224.0.0.0/4 (what Linux's rdma_cm makes
 * of an IPv4 group, cma_iboe_set_mgid()). Frames to it go to the group's
 * MAC (RFC 1112 section 6.4: 01:00:5e + low 23 bits; RFC 2464 section 7:
 * 33:33 + low 32 bits).
 */
#ifndef ROCE_MCAST_H
#define ROCE_MCAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** BTH destination QP of every multicast packet (IBA section 9.2, "DestQP" 0xFFFFFF). */
#define ROCE_MCAST_QPN 0xffffffu

/** @return true for ff00::/8 and ::ffff:224.0.0.0/4 (Linux rdma_is_multicast_addr()). */
bool roce_gid_is_mcast(const uint8_t gid[16]);
/** @return true for an IPv4-mapped GID (::ffff:a.b.c.d). */
bool roce_gid_is_v4mapped(const uint8_t gid[16]);
/** The Ethernet address frames to multicast group @p gid go to. */
void roce_mcast_mac(const uint8_t gid[16], uint8_t mac[6]);

/** What a membership record says (RFC 3376 section 4.2.12, RFC 3810 section 5.2.12). */
enum roce_mcast_rec {
	ROCE_MCAST_JOIN,    /**< CHANGE_TO_EXCLUDE {} (IGMPv2: membership report) */
	ROCE_MCAST_LEAVE,   /**< CHANGE_TO_INCLUDE {} (IGMPv2: leave group) */
	ROCE_MCAST_CURRENT, /**< MODE_IS_EXCLUDE {}: the answer to a query (IGMPv2: report) */
};

/** A query heard on the link. */
struct roce_mcast_query {
	bool ipv6;          /**< MLD (true) or IGMP */
	uint8_t version;    /**< IGMP 1, 2, 3; MLD 1, 2 */
	uint8_t group[16];  /**< as a GID (IPv4-mapped for IGMP); all zero: general query */
	uint32_t max_resp_ms; /**< maximum response delay */
};

/**
 * Recognise an IGMP membership query (IPv4 protocol 2, type 0x11) or an MLD
 * query (ICMPv6 type 130, directly or after a hop-by-hop header), checksum
 * checked. Untagged or with one 802.1Q tag.
 * @return true with @p q filled, false for anything else
 */
bool roce_mcast_query_parse(const uint8_t *frame, size_t len, struct roce_mcast_query *q);

/**
 * Build a membership report as Linux sends it: IPv4 with the Router Alert
 * option, TTL 1, TOS 0xc0, DF (IGMPv3 to 224.0.0.22, IGMPv2 report to the
 * group, IGMPv2 leave to 224.0.0.2), or IPv6 from @p src_gid (link-local)
 * with hop limit 1 and a hop-by-hop Router Alert (MLDv2 to ff02::16).
 * @param version  IGMP 2 or 3 for IPv4 groups (2: one group per frame); MLD 2
 * @param src_gid  IPv4-mapped source address for IGMP, link-local for MLD
 * @param groups   @p n groups, all IPv4-mapped or all IPv6
 * @return the frame length, 0 when it does not fit in @p cap or the arguments disagree
 */
size_t roce_mcast_report_build(uint8_t *buf, size_t cap, const uint8_t src_mac[6],
			       const uint8_t src_gid[16], unsigned int version,
			       enum roce_mcast_rec rec, const uint8_t (*groups)[16], unsigned int n);

#endif /* ROCE_MCAST_H */
