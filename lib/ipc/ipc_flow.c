/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_create_flow's attribute (struct ibv_flow_attr followed by its specs)
 * into a CREATE_FLOW request: one lib/flow rule. Runs in the shim, on the
 * application's own memory; the daemon checks the rule again.
 */
#include <errno.h>
#include <string.h>

#include "ipc_verbs.h"

/* Copy @p n bytes of value and mask of one field into the rule. */
#define FLOW_PUT(m, f, v, k)                                         \
	do {                                                         \
		_Static_assert(sizeof((m)->val.f) == sizeof(v), #f); \
		memcpy(&(m)->val.f, &(v), sizeof(v));                \
		memcpy(&(m)->mask.f, &(k), sizeof(k));               \
	} while (0)

static void put_eth(struct flow_match *m, const struct ibv_flow_spec_eth *s)
{
	FLOW_PUT(m, dst_mac, s->val.dst_mac, s->mask.dst_mac);
	FLOW_PUT(m, src_mac, s->val.src_mac, s->mask.src_mac);
	FLOW_PUT(m, ether_type, s->val.ether_type, s->mask.ether_type);
	FLOW_PUT(m, vlan_tag, s->val.vlan_tag, s->mask.vlan_tag);
	m->layers |= FLOW_L_ETH;
}

static void put_ipv4(struct flow_match *m, const struct ibv_flow_ipv4_ext_filter *v,
		     const struct ibv_flow_ipv4_ext_filter *k)
{
	FLOW_PUT(m, ip4_src, v->src_ip, k->src_ip);
	FLOW_PUT(m, ip4_dst, v->dst_ip, k->dst_ip);
	FLOW_PUT(m, ip4_proto, v->proto, k->proto);
	FLOW_PUT(m, ip4_tos, v->tos, k->tos);
	FLOW_PUT(m, ip4_ttl, v->ttl, k->ttl);
	FLOW_PUT(m, ip4_flags, v->flags, k->flags);
	m->layers |= FLOW_L_IPV4;
}

static void put_ipv6(struct flow_match *m, const struct ibv_flow_spec_ipv6 *s)
{
	FLOW_PUT(m, ip6_src, s->val.src_ip, s->mask.src_ip);
	FLOW_PUT(m, ip6_dst, s->val.dst_ip, s->mask.dst_ip);
	FLOW_PUT(m, ip6_flow_label, s->val.flow_label, s->mask.flow_label);
	FLOW_PUT(m, ip6_next_hdr, s->val.next_hdr, s->mask.next_hdr);
	FLOW_PUT(m, ip6_tclass, s->val.traffic_class, s->mask.traffic_class);
	FLOW_PUT(m, ip6_hop_limit, s->val.hop_limit, s->mask.hop_limit);
	m->layers |= FLOW_L_IPV6;
}

static void put_l4(struct flow_match *m, const struct ibv_flow_spec_tcp_udp *s, uint32_t layer)
{
	FLOW_PUT(m, l4_src, s->val.src_port, s->mask.src_port);
	FLOW_PUT(m, l4_dst, s->val.dst_port, s->mask.dst_port);
	m->layers |= layer;
}

/* One spec of @p len bytes at @p p. @return 0 or a positive errno */
static int put_spec(struct flow_match *m, const uint8_t *p, uint16_t len)
{
	struct ibv_flow_spec s;
	struct ibv_flow_ipv4_ext_filter v = { 0 }, k = { 0 };

	memset(&s, 0, sizeof(s));
	memcpy(&s, p, len < sizeof(s) ? len : sizeof(s));
	switch (s.hdr.type) {
	case IBV_FLOW_SPEC_ETH:
		if (len < sizeof(s.eth) || (m->layers & FLOW_L_ETH))
			return EINVAL;
		put_eth(m, &s.eth);
		return 0;
	case IBV_FLOW_SPEC_IPV4: /* the plain spec: addresses only */
		if (len < sizeof(s.ipv4) || (m->layers & FLOW_L_IPV4))
			return EINVAL;
		v.src_ip = s.ipv4.val.src_ip;
		v.dst_ip = s.ipv4.val.dst_ip;
		k.src_ip = s.ipv4.mask.src_ip;
		k.dst_ip = s.ipv4.mask.dst_ip;
		put_ipv4(m, &v, &k);
		return 0;
	case IBV_FLOW_SPEC_IPV4_EXT:
		if (len < sizeof(s.ipv4_ext) || (m->layers & FLOW_L_IPV4))
			return EINVAL;
		put_ipv4(m, &s.ipv4_ext.val, &s.ipv4_ext.mask);
		return 0;
	case IBV_FLOW_SPEC_IPV6:
		if (len < sizeof(s.ipv6) || (m->layers & FLOW_L_IPV6))
			return EINVAL;
		put_ipv6(m, &s.ipv6);
		return 0;
	case IBV_FLOW_SPEC_TCP:
	case IBV_FLOW_SPEC_UDP:
		if (len < sizeof(s.tcp_udp) || (m->layers & (FLOW_L_TCP | FLOW_L_UDP)))
			return EINVAL;
		put_l4(m, &s.tcp_udp, s.hdr.type == IBV_FLOW_SPEC_TCP ? FLOW_L_TCP : FLOW_L_UDP);
		return 0;
	default: /* inner (tunnel) specs, VXLAN, GRE, MPLS, ESP, actions: not supported */
		return EOPNOTSUPP;
	}
}

int ipc_flow_from_ibv(const struct ibv_flow_attr *attr, struct ipc_create_flow_req *q)
{
	const uint8_t *p = (const uint8_t *)(attr + 1);

	memset(q, 0, sizeof(*q));
	/* attr->size is not looked at: libibverbs recomputes it from the specs */
	if (attr->comp_mask != 0 || attr->num_of_specs > IPC_FLOW_MAX_SPECS)
		return EINVAL;
	q->port = attr->port;
	q->type = attr->type;
	q->flags = attr->flags;
	q->priority = attr->priority;
	for (unsigned int i = 0; i < attr->num_of_specs; i++) {
		__typeof__(((struct ibv_flow_spec *)0)->hdr) h;
		int rc;

		memcpy(&h, p, sizeof(h));
		if (h.size < sizeof(h) || h.size > sizeof(struct ibv_flow_spec))
			return EINVAL;
		rc = put_spec(&q->match, p, h.size);
		if (rc)
			return rc;
		p += h.size;
	}
	return 0;
}
