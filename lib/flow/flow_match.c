/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rule checking and matching (flow.h): the value/mask semantics of the
 * verbs flow specs (struct ibv_flow_spec_*: a field matches when
 * frame & mask == value & mask).
 */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "flow.h"

/* Which layer each byte range of struct flow_fields belongs to: one table. */
#define FLOW_FIELD_LIST(X)                                  \
	X(dst_mac, FLOW_L_ETH)                              \
	X(src_mac, FLOW_L_ETH)                              \
	X(ether_type, FLOW_L_ETH)                           \
	X(vlan_tag, FLOW_L_ETH)                             \
	X(ip4_src, FLOW_L_IPV4)                             \
	X(ip4_dst, FLOW_L_IPV4)                             \
	X(ip4_proto, FLOW_L_IPV4)                           \
	X(ip4_tos, FLOW_L_IPV4)                             \
	X(ip4_ttl, FLOW_L_IPV4)                             \
	X(ip4_flags, FLOW_L_IPV4)                           \
	X(ip6_src, FLOW_L_IPV6)                             \
	X(ip6_dst, FLOW_L_IPV6)                             \
	X(ip6_flow_label, FLOW_L_IPV6)                      \
	X(ip6_next_hdr, FLOW_L_IPV6)                        \
	X(ip6_tclass, FLOW_L_IPV6)                          \
	X(ip6_hop_limit, FLOW_L_IPV6)                       \
	X(reserved, 0)                                      \
	X(l4_src, FLOW_L_TCP | FLOW_L_UDP)                  \
	X(l4_dst, FLOW_L_TCP | FLOW_L_UDP)

struct field_desc {
	uint16_t off;
	uint16_t len;
	uint32_t layers; /* the rule must name one of these to mask the field */
};

static const struct field_desc fields[] = {
#define FIELD_DESC(name, lay)                                                             \
	{ offsetof(struct flow_fields, name), sizeof(((struct flow_fields *)0)->name), lay },
	FLOW_FIELD_LIST(FIELD_DESC)
#undef FIELD_DESC
};

static bool
bytes_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

int
flow_match_check(struct flow_match *m)
{
	const uint8_t *mask = (const uint8_t *)&m->mask;
	uint8_t *val = (uint8_t *)&m->val;

	if (m->layers & ~(uint32_t)FLOW_L_ALL)
		return -EOPNOTSUPP;
	if ((m->layers & FLOW_L_IPV4) && (m->layers & FLOW_L_IPV6))
		return -EINVAL;
	if ((m->layers & FLOW_L_TCP) && (m->layers & FLOW_L_UDP))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const struct field_desc *fd = &fields[i];

		if (!(m->layers & fd->layers) && !bytes_zero(mask + fd->off, fd->len))
			return -EINVAL;
	}
	if (m->mask.ip6_flow_label & ~htobe32(0xfffffu))
		return -EINVAL;
	if (m->mask.ip4_flags & ~0x7u)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(struct flow_fields); i++)
		val[i] &= mask[i];
	return 0;
}

bool
flow_match(const struct flow_match *m, const struct flow_key *k)
{
	const uint8_t *mask = (const uint8_t *)&m->mask;
	const uint8_t *val = (const uint8_t *)&m->val;
	const uint8_t *f = (const uint8_t *)&k->f;

	if ((k->layers & m->layers) != m->layers)
		return false;
	for (size_t i = 0; i < sizeof(struct flow_fields); i++)
		if ((f[i] & mask[i]) != val[i])
			return false;
	return true;
}
