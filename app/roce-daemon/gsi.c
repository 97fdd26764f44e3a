/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QP1 (GSI) on RoCEv2: MADs between the wire and the CM agent (gsi.h).
 * Control thread only, except gsi_check() (gsi.h), which workers run.
 */
#include "gsi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "cm.h"
#include "daemon_state.h"
#include "gid.h"
#include "neigh.h"
#include "worker.h"

/* A MAD waiting for the MAC of its destination. */
struct gsi_pending {
	struct cm_path to;
	uint64_t deadline;        /* TSC */
	bool used;
	uint8_t mad[GSI_MAD_SIZE];
};

struct gsi {
	struct daemon *d;
	gsi_rx_fn rx;
	void *arg;
	uint32_t psn[CONFIG_MAX_PORTS];
	uint16_t ip_id[CONFIG_MAX_PORTS];
	uint32_t npending;
	struct gsi_pending pending[GSI_TXQ];
	uint64_t ctr[GSI_CTR_COUNT];
};

static bool
gid_v4(const uint8_t g[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g, pfx, sizeof(pfx)) == 0;
}

struct gsi *
gsi_create(struct daemon *d, gsi_rx_fn rx, void *arg)
{
	struct gsi *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return NULL;
	g->d = d;
	g->rx = rx;
	g->arg = arg;
	return g;
}

void
gsi_destroy(struct gsi *g)
{
	free(g);
}

const uint64_t *
gsi_counters(const struct gsi *g)
{
	return g->ctr;
}

void
gsi_path_of(const struct roce_pkt *pkt, uint16_t port_idx, int gid_index, struct cm_path *from)
{
	memset(from, 0, sizeof(*from));
	memcpy(from->remote_gid, pkt->l3.sgid, 16);
	memcpy(from->local_gid, pkt->l3.dgid, 16);
	memcpy(from->remote_mac, pkt->l3.smac, 6);
	from->remote_mac_valid = 1;
	from->traffic_class = pkt->l3.traffic_class;
	from->hop_limit = 0; /* answers leave with our own default, not what is left of theirs */
	from->flow_label = pkt->l3.flow_label;
	from->udp_sport = pkt->l3.udp_sport;
	from->pkey = pkt->pkey;
	from->remote_qpn = pkt->deth.src_qpn;
	from->port = port_idx;
	from->gid_index = gid_index < 0 ? 0 : (uint32_t)gid_index;
}

void
gsi_input(struct gsi *g, uint16_t port_idx, struct rte_mbuf *m, const struct roce_pkt *pkt)
{
	struct cm_path from;

	/* the worker checked the ICRC and judged it with gsi_check(): this is a second look */
	if (pkt->dest_qpn != GSI_QPN || gsi_check(pkt) != GSI_OK || port_idx >= g->d->n_ports) {
		g->ctr[GSI_CTR_RX_UNPARSED]++;
		rte_pktmbuf_free(m);
		return;
	}
	gsi_path_of(pkt, port_idx, gid_table_find(&g->d->port[port_idx].gids, pkt->l3.dgid), &from);
	g->ctr[GSI_CTR_RX]++;
	if (g->rx != NULL)
		g->rx(g->arg, &from, pkt->payload, pkt->payload_len);
	rte_pktmbuf_free(m);
}

uint32_t
gsi_build(const struct cm_path *to, const uint8_t smac[6], const uint8_t dmac[6],
	  uint16_t vlan_tci, uint32_t psn, uint16_t ip_id, const uint8_t *mad, uint8_t *buf,
	  uint32_t cap)
{
	struct roce_pkt pkt;

	memset(&pkt, 0, sizeof(pkt));
	memcpy(pkt.l3.dmac, dmac, 6);
	memcpy(pkt.l3.smac, smac, 6);
	pkt.l3.vlan_present = vlan_tci != 0;
	pkt.l3.vlan_tci = vlan_tci;
	pkt.l3.ipv6 = !gid_v4(to->remote_gid);
	memcpy(pkt.l3.sgid, to->local_gid, 16);
	memcpy(pkt.l3.dgid, to->remote_gid, 16);
	pkt.l3.traffic_class = to->traffic_class;
	pkt.l3.hop_limit = to->hop_limit ? to->hop_limit : 64;
	pkt.l3.flow_label = pkt.l3.ipv6 ? to->flow_label & 0xfffff : 0;
	pkt.l3.ip_id = ip_id;
	/* one source port for QP1, as rxe uses one per QP (gsi_send() always asks for it) */
	pkt.l3.udp_sport = to->udp_sport ? to->udp_sport : roce_udp_sport(0, GSI_QPN, GSI_QPN);
	pkt.opcode = ROCE_OP_UD_SEND_ONLY;
	pkt.pkey = 0xffff;
	pkt.dest_qpn = to->remote_qpn ? to->remote_qpn : GSI_QPN;
	pkt.psn = psn & 0xffffff;
	pkt.ack_req = true; /* as rxe marks every last packet, UD included */
	pkt.deth.qkey = GSI_QKEY;
	pkt.deth.src_qpn = GSI_QPN;
	pkt.payload = mad;
	pkt.payload_len = GSI_MAD_SIZE;
	return (uint32_t)roce_build(&pkt, buf, cap);
}

/* Build and transmit now that the MAC is known. */
static int
gsi_xmit(struct gsi *g, const struct cm_path *to, const uint8_t dmac[6], const uint8_t *mad)
{
	struct daemon *d = g->d;
	uint16_t port = (uint16_t)to->port;
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->port[port].pool);
	uint8_t *buf;
	uint32_t len;

	if (m == NULL)
		goto fail;
	buf = (uint8_t *)rte_pktmbuf_append(m, 512);
	if (buf == NULL)
		goto fail;
	/* QP1 is a QP of the port: its MADs go at the priority of its data */
	len = gsi_build(to, d->port[port].mac, dmac, port_vlan_tci(&d->port[port], d->port[port].cc.pcp),
			g->psn[port], g->ip_id[port], mad, buf, 512);
	if (len == 0)
		goto fail;
	rte_pktmbuf_trim(m, (uint16_t)(512 - len));
	g->psn[port] = (g->psn[port] + 1) & 0xffffff;
	g->ip_id[port]++;
	g->ctr[GSI_CTR_TX]++;
	worker_ctl_tx(d, port, m);
	return 0;
fail:
	if (m != NULL)
		rte_pktmbuf_free(m);
	g->ctr[GSI_CTR_TX_DROP_NOMBUF]++;
	return -ENOBUFS;
}

int
gsi_send(struct gsi *g, const struct cm_path *path, const uint8_t *mad)
{
	struct daemon *d = g->d;
	struct cm_path one = *path;
	const struct cm_path *to = &one;
	uint8_t mac[6];
	int rc;

	one.udp_sport = 0; /* answers too leave from QP1's one source port */
	if (to->port >= d->n_ports) {
		g->ctr[GSI_CTR_TX_DROP_NOMBUF]++;
		return -EINVAL;
	}
	if (to->remote_mac_valid)
		return gsi_xmit(g, to, to->remote_mac, mad);
	rc = neigh_resolve(d, -1, (uint16_t)to->port, to->remote_gid, mac);
	if (rc == 0)
		return gsi_xmit(g, to, mac, mad);
	if (rc != -EAGAIN) {
		g->ctr[GSI_CTR_TX_DROP_UNREACH]++;
		return rc;
	}
	for (uint32_t i = 0; i < GSI_TXQ; i++) {
		struct gsi_pending *p = &g->pending[i];

		if (p->used)
			continue;
		p->used = true;
		p->to = *to;
		memcpy(p->mad, mad, GSI_MAD_SIZE);
		p->deadline = rte_get_tsc_cycles() + d->tsc_hz / 1000 * GSI_RESOLVE_MS;
		g->npending++;
		g->ctr[GSI_CTR_TX_QUEUED]++;
		return 0;
	}
	g->ctr[GSI_CTR_TX_DROP_QUEUE]++;
	return -ENOBUFS;
}

unsigned int
gsi_tick(struct gsi *g)
{
	uint64_t now;
	unsigned int n = 0;

	if (g->npending == 0)
		return 0;
	now = rte_get_tsc_cycles();
	for (uint32_t i = 0; i < GSI_TXQ; i++) {
		struct gsi_pending *p = &g->pending[i];
		uint8_t mac[6];
		int rc;

		if (!p->used)
			continue;
		rc = neigh_resolve(g->d, -1, (uint16_t)p->to.port, p->to.remote_gid, mac);
		if (rc == -EAGAIN && now < p->deadline)
			continue;
		if (rc == 0)
			gsi_xmit(g, &p->to, mac, p->mad);
		else
			g->ctr[GSI_CTR_TX_DROP_UNREACH]++;
		p->used = false;
		g->npending--;
		n++;
	}
	return n;
}
