/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ARP / neighbour discovery / echo responder (neigh.h), on the control
 * thread, transmitting through worker 0. The table is neigh_table.c.
 */
#include "neigh.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "daemon_state.h"
#include "gid.h"
#include "neigh_kernel.h"
#include "worker.h"
#include "roce_mcast.h"


#define ARP_LEN 28u
#define ICMP6_NS 135
#define ICMP6_NA 136
#define ICMP6_ECHO_REQUEST 128
#define ICMP6_ECHO_REPLY 129
#define ND_OPT_SLLA 1
#define ND_OPT_TLLA 2
#define NA_FLAG_SOLICITED 0x40
#define NA_FLAG_OVERRIDE 0x20
#define ICMP4_ECHO_REQUEST 8
#define ICMP4_ECHO_REPLY 0
#define MIN_FRAME 60u

static const uint8_t mac_broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static uint64_t
now_tsc(void)
{
	return rte_get_tsc_cycles();
}

static void
ip4_to_mapped(const uint8_t ip4[4], uint8_t ip[16])
{
	gid_from_ipv4(ip4, ip);
}

/* Is @p ip (16-byte form) one of port @p p's addresses? IPv4 or IPv6 as asked. */
static bool
port_has_ip(const struct port *p, const uint8_t ip[16], bool ipv6)
{
	int i = gid_table_find(&p->gids, ip);

	return i >= 0 && p->gids.entry[i].ipv4 == !ipv6;
}

static bool
prefix_match(const uint8_t a[16], const uint8_t b[16], unsigned int bits)
{
	unsigned int bytes = bits / 8, rest = bits % 8;

	if (memcmp(a, b, bytes) != 0)
		return false;
	return rest == 0 || ((a[bytes] ^ b[bytes]) & (uint8_t)(0xff00 >> rest)) == 0;
}

/* Our source address for talking to @p dst on @p p: same prefix, else the
 * first of the family (IPv6 falls back to the link-local GID). */
static bool
source_for(const struct port *p, const uint8_t dst[16], uint8_t src[16])
{
	bool v4 = config_addr_is_v4mapped(dst);
	int first = -1;

	for (unsigned int i = 1; i < p->gids.n; i++) {
		const struct gid_entry *e = &p->gids.entry[i];

		if (!e->valid || e->ipv4 != v4)
			continue;
		if (prefix_match(e->gid, dst, e->prefix_len)) {
			memcpy(src, e->gid, 16);
			return true;
		}
		if (first < 0)
			first = (int)i;
	}
	if (!v4 && dst[0] == 0xfe && (dst[1] & 0xc0) == 0x80) {
		memcpy(src, p->gids.entry[0].gid, 16);
		return true;
	}
	if (first >= 0) {
		memcpy(src, p->gids.entry[first].gid, 16);
		return true;
	}
	if (!v4) {
		memcpy(src, p->gids.entry[0].gid, 16);
		return true;
	}
	return false;
}

bool
neigh_next_hop(const struct daemon *d, uint16_t port_idx, const uint8_t dgid[16], uint8_t nh[16])
{
	const struct port *p = &d->port[port_idx];
	const struct config_port *cp = p->cfg;
	bool v4 = config_addr_is_v4mapped(dgid);
	bool have_family = !v4; /* IPv6 always has the link-local address */

	if (!v4 && dgid[0] == 0xfe && (dgid[1] & 0xc0) == 0x80) {
		memcpy(nh, dgid, 16);
		return true;
	}
	for (unsigned int i = 1; i < p->gids.n; i++) {
		const struct gid_entry *e = &p->gids.entry[i];

		if (!e->valid || e->ipv4 != v4)
			continue;
		have_family = true;
		if (prefix_match(e->gid, dgid, e->prefix_len)) {
			memcpy(nh, dgid, 16);
			return true;
		}
	}
	if (v4 && cp->has_gateway4) {
		memcpy(nh, cp->gateway4.addr, 16);
		return true;
	}
	if (!v4 && cp->has_gateway6) {
		memcpy(nh, cp->gateway6.addr, 16);
		return true;
	}
	if (!have_family)
		return false;
	memcpy(nh, dgid, 16); /* no gateway: everything is on-link */
	return true;
}

static struct rte_mbuf *
alloc_frame(struct daemon *d, uint16_t port_idx, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->port[port_idx].pool);

	if (m == NULL)
		return NULL;
	if (rte_pktmbuf_append(m, (uint16_t)RTE_MAX(len, MIN_FRAME)) == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memset(rte_pktmbuf_mtod(m, void *), 0, m->data_len);
	return m;
}

static void
eth_fill(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = (uint8_t)(type >> 8);
	f[13] = (uint8_t)type;
}

static uint16_t
icmp6_cksum(const struct rte_ipv6_hdr *ip6, const void *icmp)
{
	uint16_t c = rte_ipv6_udptcp_cksum(ip6, icmp);

	return c == 0xffff ? 0 : c;
}

static bool
icmp6_cksum_ok(const struct rte_ipv6_hdr *ip6, const void *icmp)
{
	return rte_ipv6_udptcp_cksum_verify(ip6, icmp) == 0;
}

static void
solicited_node(const uint8_t target[16], uint8_t ip[16], uint8_t mac[6])
{
	static const uint8_t prefix[13] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff };

	memcpy(ip, prefix, 13);
	memcpy(ip + 13, target + 13, 3);
	mac[0] = 0x33;
	mac[1] = 0x33;
	memcpy(mac + 2, ip + 12, 4);
}

/* ARP request (broadcast) for IPv4 @p ip. */
static void
probe_arp(struct daemon *d, uint16_t port_idx, const uint8_t ip[16])
{
	const struct port *p = &d->port[port_idx];
	uint8_t src[16];
	struct rte_mbuf *m;
	uint8_t *f;

	if (!source_for(p, ip, src) || (m = alloc_frame(d, port_idx, 14 + ARP_LEN)) == NULL)
		return;
	f = rte_pktmbuf_mtod(m, uint8_t *);
	eth_fill(f, mac_broadcast, p->mac, RTE_ETHER_TYPE_ARP);
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(f + 14);
	a->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	a->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	a->arp_hlen = 6;
	a->arp_plen = 4;
	a->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	memcpy(&a->arp_data.arp_sha, p->mac, 6);
	memcpy(&a->arp_data.arp_sip, src + 12, 4);
	memcpy(&a->arp_data.arp_tip, ip + 12, 4);
	worker_ctl_tx(d, port_idx, m);
}

/* Fill an IPv6 + ICMPv6 ND message with one link-layer address option. */
static struct rte_mbuf *
nd_frame(struct daemon *d, uint16_t port_idx, const uint8_t eth_dst[6], const uint8_t src[16],
	 const uint8_t dst[16], uint8_t type, uint8_t flags, const uint8_t target[16], uint8_t opt)
{
	const struct port *p = &d->port[port_idx];
	const uint32_t icmp_len = 24 + 8;
	struct rte_mbuf *m = alloc_frame(d, port_idx, 14 + 40 + icmp_len);
	uint8_t *f, *icmp;

	if (m == NULL)
		return NULL;
	rte_pktmbuf_trim(m, (uint16_t)(m->data_len - (14 + 40 + icmp_len)));
	f = rte_pktmbuf_mtod(m, uint8_t *);
	eth_fill(f, eth_dst, p->mac, RTE_ETHER_TYPE_IPV6);
	struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)(f + 14);
	ip6->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip6->payload_len = rte_cpu_to_be_16(icmp_len);
	ip6->proto = IPPROTO_ICMPV6;
	ip6->hop_limits = 255;
	memcpy(ip6->src_addr, src, 16);
	memcpy(ip6->dst_addr, dst, 16);
	icmp = f + 14 + 40;
	icmp[0] = type;
	icmp[4] = flags;
	memcpy(icmp + 8, target, 16);
	icmp[24] = opt;
	icmp[25] = 1; /* 8 bytes */
	memcpy(icmp + 26, p->mac, 6);
	uint16_t c = icmp6_cksum(ip6, icmp); /* already in wire order as stored */
	memcpy(icmp + 2, &c, 2);
	return m;
}

static void
probe_ns(struct daemon *d, uint16_t port_idx, const uint8_t ip[16])
{
	uint8_t src[16], dst[16], mac[6];
	struct rte_mbuf *m;

	if (!source_for(&d->port[port_idx], ip, src))
		return;
	solicited_node(ip, dst, mac);
	m = nd_frame(d, port_idx, mac, src, dst, ICMP6_NS, 0, ip, ND_OPT_SLLA);
	if (m != NULL)
		worker_ctl_tx(d, port_idx, m);
}

void
neigh_probe(struct daemon *d, uint16_t port_idx, const uint8_t ip[16])
{
	const struct port *p = &d->port[port_idx];

	if (p->cfg->mode == CONFIG_PORT_SHARED) {
		uint8_t mac[6];

		if (neigh_kernel_lookup(p->ifindex, ip, mac) == 0)
			neigh_learn(&d->neigh, port_idx, ip, mac, true, now_tsc());
		else
			neigh_kernel_kick(p->ifindex, ip);
		return;
	}
	if (config_addr_is_v4mapped(ip))
		probe_arp(d, port_idx, ip);
	else
		probe_ns(d, port_idx, ip);
}

static void
arp_input(struct daemon *d, uint16_t port_idx, struct rte_mbuf *m, uint32_t l2, uint64_t now)
{
	const struct port *p = &d->port[port_idx];
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(f + l2);
	uint8_t sip[16], tip[16], sha[6];
	uint16_t op;
	bool ours;

	if (m->data_len < l2 + ARP_LEN || a->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    a->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) || a->arp_hlen != 6 ||
	    a->arp_plen != 4)
		goto drop;
	op = rte_be_to_cpu_16(a->arp_opcode);
	if (op != RTE_ARP_OP_REQUEST && op != RTE_ARP_OP_REPLY)
		goto drop;
	memcpy(sha, &a->arp_data.arp_sha, 6);
	if (sha[0] & 1)
		goto drop; /* a multicast sender address is bogus */
	ip4_to_mapped((const uint8_t *)&a->arp_data.arp_sip, sip);
	ip4_to_mapped((const uint8_t *)&a->arp_data.arp_tip, tip);
	ours = port_has_ip(p, tip, false);
	if (sip[12] != 0 || sip[13] != 0 || sip[14] != 0 || sip[15] != 0)
		neigh_learn(&d->neigh, port_idx, sip, sha, ours, now);
	if (op != RTE_ARP_OP_REQUEST || !ours)
		goto drop;
	/* Reply in place (RFC 826): swap, fill in our hardware address. */
	eth_fill(f, sha, p->mac, RTE_ETHER_TYPE_ARP);
	if (l2 == 18) { /* keep the VLAN tag: rewrite the ethertype after it */
		f[12] = 0x81;
		f[13] = 0x00;
	}
	a->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
	memcpy(&a->arp_data.arp_tha, sha, 6);
	memcpy(&a->arp_data.arp_tip, sip + 12, 4);
	memcpy(&a->arp_data.arp_sha, p->mac, 6);
	memcpy(&a->arp_data.arp_sip, tip + 12, 4);
	worker_ctl_tx(d, port_idx, m);
	return;
drop:
	rte_pktmbuf_free(m);
}

/*
 * An answer in place: to the requester's MAC, from the port's own (never
 * the MAC the request was sent to: a broadcast, a multicast or another
 * host's would go out as our source and teach switches a false location).
 */
static void
reply_macs(uint8_t *f, const uint8_t ours[6])
{
	memcpy(f, f + 6, 6);
	memcpy(f + 6, ours, 6);
}

static void
echo4_input(struct daemon *d, uint16_t port_idx, struct rte_mbuf *m, uint32_t l2)
{
	const struct port *p = &d->port[port_idx];
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + l2);
	uint8_t dst[16];
	uint32_t ihl, tot;
	uint8_t *icmp;

	if (m->data_len < l2 + 20)
		goto drop;
	ihl = (ip->version_ihl & 0xfu) * 4u;
	tot = rte_be_to_cpu_16(ip->total_length);
	if ((ip->version_ihl >> 4) != 4 || ihl < 20 || tot < ihl + 8 || l2 + tot > m->data_len ||
	    rte_raw_cksum(ip, ihl) != 0xffff)
		goto drop;
	if ((rte_be_to_cpu_16(ip->fragment_offset) & 0x3fff) != 0)
		goto drop;
	ip4_to_mapped((const uint8_t *)&ip->dst_addr, dst);
	icmp = f + l2 + ihl;
	if (!port_has_ip(p, dst, false) || icmp[0] != ICMP4_ECHO_REQUEST || icmp[1] != 0 ||
	    rte_raw_cksum(icmp, tot - ihl) != 0xffff)
		goto drop;
	rte_pktmbuf_trim(m, (uint16_t)(m->data_len - (l2 + tot)));
	reply_macs(f, p->mac);
	uint32_t a = ip->src_addr;
	ip->src_addr = ip->dst_addr;
	ip->dst_addr = a;
	ip->time_to_live = 64;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	icmp[0] = ICMP4_ECHO_REPLY;
	icmp[2] = icmp[3] = 0;
	uint16_t c = (uint16_t)~rte_raw_cksum(icmp, tot - ihl);
	memcpy(icmp + 2, &c, 2);
	worker_ctl_tx(d, port_idx, m);
	return;
drop:
	rte_pktmbuf_free(m);
}

/* Link-layer address option @p type in ND options, or NULL. NULL with
 * *bad = true when the options are malformed (RFC 4861 7.1.1), or when the
 * address is a group address (as ARP's sender: bogus for a neighbour). */
static const uint8_t *
nd_option(const uint8_t *opt, uint32_t len, uint8_t type, bool *bad)
{
	const uint8_t *found = NULL;

	*bad = false;
	while (len >= 2) {
		uint32_t olen = opt[1] * 8u;

		if (olen == 0 || olen > len) {
			*bad = true;
			return NULL;
		}
		if (opt[0] == type && olen >= 8 && found == NULL) {
			if (opt[2] & 1) {
				*bad = true;
				return NULL;
			}
			found = opt + 2;
		}
		opt += olen;
		len -= olen;
	}
	return found;
}

static void
icmp6_input(struct daemon *d, uint16_t port_idx, struct rte_mbuf *m, uint32_t l2, uint64_t now)
{
	static const uint8_t unspecified[16];
	const struct port *p = &d->port[port_idx];
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)(f + l2);
	uint8_t *icmp = f + l2 + 40;
	uint32_t plen;
	bool bad;

	if (m->data_len < l2 + 40 + 8 || ip6->proto != IPPROTO_ICMPV6)
		goto drop;
	plen = rte_be_to_cpu_16(ip6->payload_len);
	if (plen < 8 || l2 + 40 + plen > m->data_len || !icmp6_cksum_ok(ip6, icmp))
		goto drop;
	switch (icmp[0]) {
	case ICMP6_NS: {
		const uint8_t *target = icmp + 8, *slla;
		int gi;
		bool dad = memcmp(ip6->src_addr, unspecified, 16) == 0;

		if (ip6->hop_limits != 255 || icmp[1] != 0 || plen < 24)
			goto drop;
		slla = nd_option(icmp + 24, plen - 24, ND_OPT_SLLA, &bad);
		gi = gid_table_find(&p->gids, target);
		/*
		 * Duplicate address detection probes (source ::) are not
		 * answered: on a shared interface (af_packet) the kernel owns
		 * the same link-local address and must not see it defended.
		 */
		if (bad || gi < 0 || p->gids.entry[gi].ipv4 || dad)
			goto drop;
		if (slla != NULL)
			neigh_learn(&d->neigh, port_idx, ip6->src_addr, slla, true, now);
		struct rte_mbuf *na = nd_frame(d, port_idx, slla != NULL ? slla : f + 6, target,
					       ip6->src_addr, ICMP6_NA,
					       NA_FLAG_SOLICITED | NA_FLAG_OVERRIDE, target,
					       ND_OPT_TLLA);
		if (na != NULL)
			worker_ctl_tx(d, port_idx, na);
		goto drop;
	}
	case ICMP6_NA: {
		const uint8_t *tlla;

		if (ip6->hop_limits != 255 || icmp[1] != 0 || plen < 24)
			goto drop;
		tlla = nd_option(icmp + 24, plen - 24, ND_OPT_TLLA, &bad);
		if (tlla == NULL)
			tlla = f + 6; /* the frame's source, which must not be a group either */
		if (bad || (tlla[0] & 1))
			goto drop;
		neigh_learn(&d->neigh, port_idx, icmp + 8, tlla, false, now);
		goto drop;
	}
	case ICMP6_ECHO_REQUEST: {
		uint8_t tmp[16];

		if (icmp[1] != 0 || !port_has_ip(p, ip6->dst_addr, true))
			goto drop;
		rte_pktmbuf_trim(m, (uint16_t)(m->data_len - (l2 + 40 + plen)));
		reply_macs(f, p->mac);
		memcpy(tmp, ip6->src_addr, 16);
		memcpy(ip6->src_addr, ip6->dst_addr, 16);
		memcpy(ip6->dst_addr, tmp, 16);
		ip6->hop_limits = 64;
		icmp[0] = ICMP6_ECHO_REPLY;
		icmp[2] = icmp[3] = 0;
		uint16_t c = icmp6_cksum(ip6, icmp);
		memcpy(icmp + 2, &c, 2);
		worker_ctl_tx(d, port_idx, m);
		return;
	}
	default:
		goto drop;
	}
drop:
	rte_pktmbuf_free(m);
}

void
neigh_input(struct daemon *d, uint16_t port_idx, struct rte_mbuf *m, uint64_t now)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t l2 = 14;
	uint16_t type;

	if (port_idx >= d->n_ports || m->data_len < 14) {
		rte_pktmbuf_free(m);
		return;
	}
	type = (uint16_t)(f[12] << 8 | f[13]);
	if (type == RTE_ETHER_TYPE_VLAN && m->data_len >= 18) {
		type = (uint16_t)(f[16] << 8 | f[17]);
		l2 = 18;
	}
	switch (type) {
	case RTE_ETHER_TYPE_ARP:
		arp_input(d, port_idx, m, l2, now);
		break;
	case RTE_ETHER_TYPE_IPV4:
		echo4_input(d, port_idx, m, l2);
		break;
	case RTE_ETHER_TYPE_IPV6:
		icmp6_input(d, port_idx, m, l2, now);
		break;
	default:
		rte_pktmbuf_free(m);
		break;
	}
}

int
neigh_resolve(struct daemon *d, int worker_idx, uint16_t port_idx, const uint8_t dgid[16],
	      uint8_t mac[6])
{
	int local = daemon_find_gid(d, dgid);
	uint8_t nh[16];
	struct neigh_result r;

	if (local >= 0) {
		memcpy(mac, d->port[local].mac, 6);
		return 0;
	}
	if (roce_gid_is_mcast(dgid)) {
		/* a group: its MAC, no ARP/ND (mcast.h "Transmit") */
		roce_mcast_mac(dgid, mac);
		return 0;
	}
	if (port_idx >= d->n_ports || !neigh_next_hop(d, port_idx, dgid, nh))
		return -EHOSTUNREACH;
	r = neigh_lookup(&d->neigh, port_idx, nh);
	if (r.state == NEIGH_REACHABLE) {
		memcpy(mac, r.mac, 6);
		return 0;
	}
	if (r.state == NEIGH_INCOMPLETE)
		return -EAGAIN;
	/* FREE or FAILED: ask for resolution. */
	if (worker_idx < 0) {
		if (neigh_want(&d->neigh, port_idx, nh, now_tsc())) {
			neigh_probe(d, port_idx, nh);
			return -EAGAIN;
		}
		return r.state == NEIGH_FAILED ? -EHOSTUNREACH : -EAGAIN;
	}
	struct worker *w = d->worker[worker_idx];
	struct worker_neigh_req req = { .port = port_idx };

	memcpy(req.ip, nh, 16);
	ctr_add(&w->port_ctr[port_idx].v[CTR_NEIGH_MISS], 1);
	ctr_add(&w->ctr.v[CTR_NEIGH_MISS], 1);
	if (rte_ring_sp_enqueue_elem(w->neigh_req, &req, sizeof(req)) == 0)
		w->wake_control = true;
	return r.state == NEIGH_FAILED ? -EHOSTUNREACH : -EAGAIN;
}
