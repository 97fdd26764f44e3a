/* SPDX-License-Identifier: BSD-3-Clause */
/* QP semantics -> engine configuration (xport_sem.h). Pure. */
#include "xport_sem.h"

#include <string.h>

uint8_t
xport_state_from_sem(enum ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RTR:
		return XPORT_STATE_RTR;
	case IBV_QPS_RTS:
	case IBV_QPS_SQE: /* the engine has no SQE: its send queue keeps running */
		return XPORT_STATE_RTS;
	case IBV_QPS_SQD:
		return XPORT_STATE_SQD;
	case IBV_QPS_ERR:
		return XPORT_STATE_ERR;
	default: /* RESET, INIT: nothing is sent or accepted */
		return XPORT_STATE_RESET;
	}
}

static bool
gid_is_v4mapped(const uint8_t g[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g, pfx, sizeof(pfx)) == 0;
}

static uint8_t
rd_atomic(uint8_t v, uint8_t if_zero)
{
	if (v == 0)
		return if_zero;
	return v > XPORT_MAX_RD_ATOMIC ? XPORT_MAX_RD_ATOMIC : v;
}

/*
 * A connected QP past INIT sends to (and accepts from) one path; UD takes
 * it from each WQE's AH, RAW_PACKET frames carry their own addresses.
 */
static bool
has_path(const struct qp_sem *sem)
{
	enum ibv_qp_state st = sem->attr.qp_state;

	return sem->init.qp_type != IBV_QPT_UD && sem->init.qp_type != IBV_QPT_RAW_PACKET &&
	       (st == IBV_QPS_RTR || st == IBV_QPS_RTS || st == IBV_QPS_SQD || st == IBV_QPS_SQE);
}

/* The path of @p sem into @p c; @return true when its MAC is still to be resolved. */
static bool
path_from_sem(struct xport_cfg *c, const struct wr_av *prev, const struct qp_sem *sem,
	      const struct xport_sem_port *port)
{
	static const uint8_t zero[6];
	const struct ibv_ah_attr *ah = &sem->attr.ah_attr;
	const struct ibv_global_route *g = &ah->grh;
	uint32_t si = g->sgid_index < port->n_gids ? g->sgid_index : 0;

	memcpy(c->av.dgid, g->dgid.raw, 16);
	memcpy(c->av.sgid, port->gids[si], 16);
	memcpy(c->av.smac, port->mac, 6);
	/* the port's VLAN, as a NIC on a VLAN netdev tags the path (IEEE 802.1Q) */
	c->av.vlan_present = port->vlan != 0;
	c->av.vlan_tci = port->vlan & 0x0fff;
	c->av.ipv6 = !gid_is_v4mapped(c->av.sgid);
	c->av.flow_label = g->flow_label & 0xfffff;
	c->av.traffic_class = g->traffic_class;
	c->av.hop_limit = g->hop_limit;
	c->av.sl = ah->sl;
	c->av.port_num = 1;
	/* the path resolved at RTR stays: RTR -> RTS never waits for ARP */
	if (memcmp(prev->dgid, c->av.dgid, 16) == 0 && memcmp(prev->dmac, zero, 6) != 0) {
		memcpy(c->av.dmac, prev->dmac, 6);
		return false;
	}
	return true;
}

/* the engine's type is the verbs QP type (c.type = qp_type below) */
_Static_assert((int)XPORT_RC == (int)IBV_QPT_RC && (int)XPORT_UC == (int)IBV_QPT_UC &&
		       (int)XPORT_UD == (int)IBV_QPT_UD && (int)XPORT_RAW == (int)IBV_QPT_RAW_PACKET,
	       "enum xport_qp_type is enum ibv_qp_type");

bool
xport_cfg_from_sem(const struct xport_cfg *cur, const struct qp_sem *sem,
		   const struct xport_sem_port *port, struct xport_cfg *out)
{
	const struct ibv_qp_attr *a = &sem->attr;
	struct wr_av prev = cur->av;
	struct xport_cfg c = *cur;
	uint8_t mtu = a->path_mtu ? (uint8_t)a->path_mtu : port->active_mtu;
	bool resolve = false;

	/* XRC is RC to the engine, one side of it (IBTA 9.8.2) */
	switch (sem->init.qp_type) {
	case IBV_QPT_XRC_SEND:
		c.type = XPORT_RC;
		c.xrc = XPORT_XRC_INI;
		break;
	case IBV_QPT_XRC_RECV:
		c.type = XPORT_RC;
		c.xrc = XPORT_XRC_TGT;
		break;
	default:
		c.type = (uint8_t)sem->init.qp_type;
		c.xrc = XPORT_XRC_NONE;
		break;
	}
	c.pkey = port->pkeys[a->pkey_index < port->n_pkeys ? a->pkey_index : 0];
	/* a send WQE holds its SGEs or its inline data (qp_sem_create()) */
	uint32_t sq_bytes = sem->init.cap.max_send_sge * (uint32_t)sizeof(struct wr_sge);
	if (sem->init.cap.max_inline_data > sq_bytes)
		sq_bytes = sem->init.cap.max_inline_data;
	c.sq_max_sge = (sq_bytes + (uint32_t)sizeof(struct wr_sge) - 1) / (uint32_t)sizeof(struct wr_sge);
	if (c.sq_max_sge == 0)
		c.sq_max_sge = 1; /* no SQ (XRC TGT): the smallest slot */
	c.qkey = a->qkey;
	c.dest_qpn = a->dest_qp_num & 0xffffff;
	c.path_mtu = sem->init.qp_type == IBV_QPT_UD ? port->active_mtu : mtu;
	c.raw_frame_max = 0;
	if (sem->init.qp_type == IBV_QPT_RAW_PACKET)
		c.raw_frame_max = port->raw_frame_max < XPORT_BOUNCE_FRAME ? port->raw_frame_max
									   : XPORT_BOUNCE_FRAME;
	c.sq_psn = a->sq_psn & 0xffffff;
	c.rq_psn = a->rq_psn & 0xffffff;
	c.timeout = a->timeout;
	c.retry_cnt = a->retry_cnt;
	c.rnr_retry = a->rnr_retry;
	c.min_rnr_timer = a->min_rnr_timer;
	c.max_rd_atomic = rd_atomic(a->max_rd_atomic, 0);
	c.max_dest_rd_atomic = rd_atomic(a->max_dest_rd_atomic, 1);
	c.access_flags = a->qp_access_flags &
			 (MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC |
			  MR_ACCESS_FLUSH_GLOBAL | MR_ACCESS_FLUSH_PERSISTENT);
	c.sq_sig_all = sem->init.sq_sig_all != 0;
	c.rate_limit_kbps = a->rate_limit;
	c.max_unacked = port->max_unacked;
	c.min_window = port->min_window;
	c.cc = port->cc;
	memset(&c.av, 0, sizeof(c.av));
	if (has_path(sem))
		resolve = path_from_sem(&c, &prev, sem, port);
	*out = c;
	return resolve;
}
