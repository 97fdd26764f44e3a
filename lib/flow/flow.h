/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lib/flow: flow steering for RAW_PACKET QPs (ibv_create_flow).
 *
 * A frame is parsed once into a @ref flow_key: the Ethernet header (with
 * one 802.1Q tag), IPv4 or IPv6, and the ports of TCP or UDP. A rule
 * (@ref flow_match) names the layers it needs (FLOW_L_*) and, for each
 * field, a value and a mask, the way the verbs flow specs do
 * (struct ibv_flow_spec_eth, _ipv4_ext, _ipv6, _tcp_udp): a field matches
 * when (frame & mask) == (value & mask); a zero mask is a wildcard. A
 * layer a rule names must be present in the frame (an IPv4 spec matches
 * IPv4 frames only, a TCP spec TCP segments only), whatever the masks.
 * A rule with no layers matches every frame.
 *
 * A @ref flow_table holds the rules of one port. A frame goes to every
 * rule of the best (numerically lowest) priority that matches it, as
 * ibv_create_flow's priority orders rules (lower value first); rules of
 * worse priority that match too do not get it. Equal rules of one
 * priority each get a copy, as two QPs attached to one multicast group.
 *
 * Pure C, no DPDK, no threads: the caller serialises writers and readers
 * (the daemon: control thread writes under a seqcount, workers read).
 * All field values are in network byte order, as in the verbs specs.
 */
#ifndef FLOW_H
#define FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Layers of a frame (flow_key.layers) or required by a rule (flow_match.layers). */
enum flow_layer {
	FLOW_L_ETH = 1u << 0,  /**< Ethernet header (always present in a parsed frame) */
	FLOW_L_IPV4 = 1u << 1, /**< IPv4 header */
	FLOW_L_IPV6 = 1u << 2, /**< IPv6 header */
	FLOW_L_TCP = 1u << 3,  /**< TCP header (ports) of an unfragmented or first fragment */
	FLOW_L_UDP = 1u << 4,  /**< UDP header */
};
#define FLOW_L_ALL (FLOW_L_ETH | FLOW_L_IPV4 | FLOW_L_IPV6 | FLOW_L_TCP | FLOW_L_UDP)

/**
 * The fields a rule can match, network byte order, a fixed layout with no
 * padding holes (matching compares it as bytes).
 */
struct flow_fields {
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	uint16_t ether_type;  /**< the inner one after an 802.1Q tag */
	uint16_t vlan_tag;    /**< the 802.1Q TCI; 0 when untagged */
	uint32_t ip4_src;
	uint32_t ip4_dst;
	uint8_t ip4_proto;
	uint8_t ip4_tos;
	uint8_t ip4_ttl;
	uint8_t ip4_flags;    /**< the 3 flag bits (bit 1 DF, bit 0 MF), as ibv_flow_ipv4_ext_filter */
	uint8_t ip6_src[16];
	uint8_t ip6_dst[16];
	uint32_t ip6_flow_label; /**< low 20 bits */
	uint8_t ip6_next_hdr;
	uint8_t ip6_tclass;
	uint8_t ip6_hop_limit;
	uint8_t reserved;     /**< 0 */
	uint16_t l4_src;      /**< TCP or UDP source port */
	uint16_t l4_dst;      /**< TCP or UDP destination port */
};
_Static_assert(sizeof(struct flow_fields) == 72, "flow_fields has no padding");

/** A frame, parsed once (flow_parse()). */
struct flow_key {
	uint32_t layers;       /**< FLOW_L_* present in the frame */
	struct flow_fields f;  /**< fields of absent layers are 0 */
};

/** A rule's match: the layers it requires and per field a value and a mask. */
struct flow_match {
	uint32_t layers;         /**< FLOW_L_* the frame must have */
	struct flow_fields val;  /**< value; bits outside @ref mask are ignored */
	struct flow_fields mask; /**< 1 bits are compared */
};

/**
 * Parse @p frame (@p len bytes, starting at the Ethernet header) into @p k.
 * Truncated inner headers end the parse: what was read so far stays
 * (a frame cut inside its IPv4 header has only FLOW_L_ETH). IPv4 options
 * are skipped; L4 ports are read from unfragmented datagrams and first
 * fragments only; IPv6 extension headers are not walked (a TCP/UDP spec
 * does not match a datagram that has them).
 * @return 0, or -EINVAL when the frame has no whole Ethernet header
 */
int flow_parse(const uint8_t *frame, size_t len, struct flow_key *k);

/**
 * Check and normalise a rule received from a client: known layers only,
 * IPv4 and IPv6 not both, TCP and UDP not both, no mask bit on a field of a
 * layer the rule does not name (ETH fields need FLOW_L_ETH, ...), the
 * reserved byte 0; the value is masked. Layers imply their lower ones: an
 * IPv4 rule requires ether type IPv4 implicitly (the frame must have IPv4).
 * @return 0, or -EINVAL (inconsistent), -EOPNOTSUPP (unknown layer bits)
 */
int flow_match_check(struct flow_match *m);

/** @return whether the frame @p k matches the checked rule @p m. */
bool flow_match(const struct flow_match *m, const struct flow_key *k);

/** One rule of a table. */
struct flow_rule {
	struct flow_match match;
	uint32_t dest;      /**< the caller's destination (the daemon: a QPN) */
	uint16_t priority;  /**< lower first */
	bool in_use;
};

/** The rules of one port: a fixed array, sized once. */
struct flow_table {
	uint32_t cap;
	uint32_t n;             /**< rules in use */
	struct flow_rule *rule; /**< cap entries */
};

/** Set up @p t over @p rules (@p cap entries, zeroed here). */
void flow_table_init(struct flow_table *t, struct flow_rule *rules, uint32_t cap);

/**
 * Add a rule (checked with flow_match_check()).
 * @return its index (>= 0, the handle for flow_table_del()), or -EINVAL,
 *         -EOPNOTSUPP (flow_match_check()), -ENOSPC (table full)
 */
int flow_table_add(struct flow_table *t, const struct flow_match *m, uint16_t priority,
		   uint32_t dest);

/** Remove rule @p idx. @return 0, or -ENOENT (no such rule) */
int flow_table_del(struct flow_table *t, uint32_t idx);

/**
 * The destinations of frame @p k: every rule of the best matching priority.
 * @param dest receives up to @p max destinations (more matches are cut)
 * @return how many were written
 */
uint32_t flow_table_lookup(const struct flow_table *t, const struct flow_key *k, uint32_t *dest,
			   uint32_t max);


/**
 * @name RSS: receive side scaling of an RSS QP (ibv_create_qp_ex with
 * rx_hash_conf and an indirection table of receive WQs).
 *
 * The hash is Toeplitz's (the Microsoft RSS specification) with the QP's
 * 40-byte key over the fields it names, concatenated in the
 * specification's order: source address, destination address, source
 * port, destination port (network byte order). A field of a layer the
 * frame lacks is left out (an IPv6 frame under IPv4 fields hashes
 * nothing: hash 0). The frame goes to dest[hash mod 2^log_size], the
 * low bits, as a NIC's indirection table is indexed.
 * @{
 */
/** Hash fields: the values of enum ibv_rx_hash_fields. */
enum flow_rss_field {
	FLOW_RSS_SRC_IPV4 = 1u << 0,
	FLOW_RSS_DST_IPV4 = 1u << 1,
	FLOW_RSS_SRC_IPV6 = 1u << 2,
	FLOW_RSS_DST_IPV6 = 1u << 3,
	FLOW_RSS_SRC_PORT_TCP = 1u << 4,
	FLOW_RSS_DST_PORT_TCP = 1u << 5,
	FLOW_RSS_SRC_PORT_UDP = 1u << 6,
	FLOW_RSS_DST_PORT_UDP = 1u << 7,
};
#define FLOW_RSS_FIELDS_ALL 0xffu
#define FLOW_RSS_KEY_LEN 40u       /**< the Toeplitz key length (as mlx5 requires) */
#define FLOW_RSS_MAX_LOG 6u        /**< indirection tables of at most 64 entries */
#define FLOW_RSS_MAX_ENTRIES (1u << FLOW_RSS_MAX_LOG)
#define FLOW_RSS_INPUT_MAX 36u     /**< two IPv6 addresses and two ports */

/** An RSS QP's configuration. */
struct flow_rss {
	uint64_t fields;               /**< FLOW_RSS_* */
	uint32_t log_size;             /**< the table has 2^log_size entries */
	uint32_t key_len;              /**< FLOW_RSS_KEY_LEN */
	uint8_t key[FLOW_RSS_KEY_LEN];
	uint32_t dest[FLOW_RSS_MAX_ENTRIES]; /**< the caller's destinations (the daemon: QPNs) */
};

/**
 * The Toeplitz hash of @p len bytes at @p in under @p key (@p key_len
 * bytes; key bits past its end count as 0).
 */
uint32_t flow_toeplitz(const uint8_t *key, size_t key_len, const uint8_t *in, size_t len);

/** The hash input of frame @p k under @p fields (FLOW_RSS_*). @return its length */
size_t flow_rss_input(uint64_t fields, const struct flow_key *k, uint8_t out[FLOW_RSS_INPUT_MAX]);

/**
 * Check a configuration received from a client: known fields only, not
 * IPv4 and IPv6 fields together, nor TCP and UDP ones, a 40-byte key, a
 * table of at most FLOW_RSS_MAX_ENTRIES.
 * @return 0, -EINVAL or -EOPNOTSUPP (unknown fields)
 */
int flow_rss_check(const struct flow_rss *r);

/** The destination of frame @p k under the checked configuration @p r. */
uint32_t flow_rss_pick(const struct flow_rss *r, const struct flow_key *k);
/** @} */

#ifdef __cplusplus
}
#endif
#endif /* FLOW_H */
