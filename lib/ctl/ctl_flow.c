/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RAW_PACKET QPs and flow steering (ibv_create_flow, ibv_destroy_flow):
 * who may have them, the rule checks and the hand-over of each rule to
 * the dataplane, which matches received frames against them (lib/flow).
 *
 * Privilege: a RAW_PACKET QP sends whole Ethernet frames of its own making
 * (any source MAC and address) and a flow takes frames addressed to others,
 * so both need CAP_NET_RAW in the client, as Linux's uverbs create_qp and
 * create_flow require (capable(CAP_NET_RAW)): EPERM otherwise. The daemon
 * judges the capability on the peer's credentials at connect
 * (ctl_conn.cap_net_raw: capget(2) of its PID), never on the client's word.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "ctl_internal.h"

int ctl_raw_allowed(struct ctl_conn *c)
{
	struct ctl *ctl = c->ctl;

	if (ctl->cfg.limits.max_flows == 0)
		return EOPNOTSUPP;
	if (!c->cap_net_raw) {
		ctl->raw_refused++;
		return EPERM;
	}
	return 0;
}

void ctl_flow_caps(struct ctl *ctl)
{
	for (uint32_t d = 0; d < ctl->cfg.ndevices; d++) {
		struct ipc_device_attr *a = &ctl->cfg.dev[d].attr;

		if (ctl->cfg.limits.max_flows == 0) {
			a->max_raw_ethy_qp = 0;
			a->raw_packet_caps = 0;
			a->device_cap_flags &= ~(uint32_t)IBV_DEVICE_MANAGED_FLOW_STEERING;
			a->rss_max_tables = a->rss_max_table_size = a->rss_supported_qpts = 0;
			a->rss_hash_function = 0;
			a->rss_hash_fields_mask = 0;
			a->max_wq_type_rq = 0;
			continue;
		}
		a->max_raw_ethy_qp = a->max_qp;
		a->raw_packet_caps = 0; /* no checksum, VLAN stripping or FCS offloads */
		a->device_cap_flags |= IBV_DEVICE_MANAGED_FLOW_STEERING;
		/* RSS QPs (ctl_h_CREATE_RSS_QP()); a WQ is a RAW_PACKET QP to us */
		a->rss_max_tables = a->max_qp;
		a->rss_max_table_size = IPC_RSS_MAX_ENTRIES;
		a->rss_supported_qpts = 1u << IBV_QPT_RAW_PACKET;
		a->rss_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
		a->rss_hash_fields_mask = FLOW_RSS_FIELDS_ALL;
		a->max_wq_type_rq = a->max_qp;
	}
}

/* Check a request: @return 0 or an errno (malformed ones counted). */
static int flow_req_check(struct ctl_conn *c, const struct ipc_create_flow_req *q,
			  struct flow_match *m)
{
	struct ctl *ctl = c->ctl;
	int rc;

	if (q->port == 0 || q->port > ctl->cfg.dev[c->dev].attr.phys_port_cnt ||
	    q->priority > UINT16_MAX || q->reserved != 0) {
		ctl->flows_bad++;
		return EINVAL;
	}
	/* ALL_DEFAULT, MC_DEFAULT, SNIFFER and the flags (DONT_TRAP, EGRESS): not yet */
	if (q->type != IBV_FLOW_ATTR_NORMAL || q->flags != 0) {
		ctl->flows_bad++;
		return EOPNOTSUPP;
	}
	*m = q->match;
	rc = flow_match_check(m);
	if (rc) {
		ctl->flows_bad++;
		return -rc;
	}
	return 0;
}

int ctl_h_CREATE_FLOW(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	struct ctl *ctl = c->ctl;
	const struct ipc_create_flow_req *q = &x->req->u.req_CREATE_FLOW;
	struct ctl_qp *qp = ctl_lookup(c, CTL_KIND_QP, q->qp);
	struct flow_match m;
	struct ctl_flow *f;
	int rc = ctl_raw_allowed(c);

	if (rc)
		return rc;
	if (qp == NULL || c->dev < 0 || qp->info.qp_type != IBV_QPT_RAW_PACKET)
		return EINVAL;
	rc = flow_req_check(c, q, &m);
	if (rc)
		return rc;
	f = ctl_table_alloc(&ctl->tab[CTL_KIND_FLOW], c, CTL_KIND_FLOW, q->user_handle);
	if (f == NULL)
		return ENOMEM;
	f->qp = qp;
	f->info = (struct ctl_flow_info){ .id = f->o.index, .qpn = qp->info.qpn,
					  .dev = qp->info.dev, .port = q->port,
					  .priority = (uint16_t)q->priority, .match = m,
					  .owner = f->o.owner };
	if (qp->rss != NULL) {
		f->info.has_rss = true;
		f->info.rss = qp->rss->cfg;
	}
	rc = DP_HAS(ctl, flow_create) ? DP(ctl)->flow_create(ctl->cfg.dp, &f->info) : 0;
	if (rc) {
		ctl_table_free(&ctl->tab[CTL_KIND_FLOW], f);
		return rc;
	}
	qp->o.refs++;
	x->rsp->u.rsp_CREATE_FLOW.handle = ctl_obj_handle(&f->o);
	return 0;
}

int ctl_h_DESTROY_FLOW(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	struct ctl_flow *f = ctl_lookup(c, CTL_KIND_FLOW, x->req->u.req_DESTROY_FLOW.handle);

	if (f == NULL)
		return EINVAL;
	return ctl_obj_destroy(c->ctl, &f->o);
}

void ctl_flow_destroyed(struct ctl *ctl, struct ctl_flow *f)
{
	(void)ctl;
	f->qp->o.refs--;
}

/* ---- RSS QPs (ibv_create_qp_ex with rx_hash_conf and an indirection table) ---- */

_Static_assert((uint64_t)FLOW_RSS_SRC_IPV4 == (uint64_t)IBV_RX_HASH_SRC_IPV4 &&
	       (uint64_t)FLOW_RSS_DST_IPV6 == (uint64_t)IBV_RX_HASH_DST_IPV6 &&
	       (uint64_t)FLOW_RSS_SRC_PORT_TCP == (uint64_t)IBV_RX_HASH_SRC_PORT_TCP &&
	       (uint64_t)FLOW_RSS_DST_PORT_UDP == (uint64_t)IBV_RX_HASH_DST_PORT_UDP,
	       "lib/flow's hash fields are the verbs ones");
_Static_assert(IPC_RSS_MAX_ENTRIES == FLOW_RSS_MAX_ENTRIES, "one table bound");
_Static_assert(sizeof(((struct ipc_create_rss_qp_req *)0)->key) == FLOW_RSS_KEY_LEN,
	       "one key length");

/*
 * The WQ a table entry names: a RAW_PACKET QP of this group with a receive
 * queue of its own (not an RSS QP, no SRQ). @return it, or NULL
 */
static struct ctl_qp *rss_wq(struct ctl_conn *c, uint32_t handle)
{
	struct ctl_qp *wq = ctl_lookup(c, CTL_KIND_QP, handle);

	if (wq == NULL || wq->rss != NULL || wq->info.qp_type != IBV_QPT_RAW_PACKET ||
	    wq->srq != NULL || wq->info.rq.entries == 0 || wq->o.busy ||
	    wq->info.dev != (uint32_t)c->dev)
		return NULL;
	return wq;
}

/*
 * CREATE_RSS_QP: every value is the client's and checked here (issue 16:
 * the daemon is root, the client hostile): CAP_NET_RAW as any RAW_PACKET
 * QP, the PD, the hash (Toeplitz, a 40-byte key, known fields, one L3 and
 * one L4 protocol), the table's size (at most IPC_RSS_MAX_ENTRIES), every
 * entry a WQ of the group and the entries past the table 0. The QP counts
 * against the client's QP quota and the device's QPs; it has a QPN (the
 * one its CQEs never show: they carry the WQ's) and no rings.
 */
int ctl_h_CREATE_RSS_QP(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	struct ctl *ctl = c->ctl;
	const struct ipc_create_rss_qp_req *q = &x->req->u.req_CREATE_RSS_QP;
	struct ctl_pd *pd;
	struct ctl_rss *rss;
	struct ctl_qp *qp;
	uint32_t n, lcore;
	int rc = ctl_raw_allowed(c);

	if (rc)
		return rc;
	if (c->dev < 0 || (pd = ctl_lookup(c, CTL_KIND_PD, q->pd)) == NULL)
		return EINVAL;
	if (q->hash_function != IBV_RX_HASH_FUNC_TOEPLITZ)
		return EOPNOTSUPP;
	if (q->log_size > FLOW_RSS_MAX_LOG || q->key_len != FLOW_RSS_KEY_LEN)
		return EINVAL;
	n = UINT32_C(1) << q->log_size;
	for (uint32_t i = n; i < IPC_RSS_MAX_ENTRIES; i++)
		if (q->wq[i] != IPC_HANDLE_NONE)
			return EINVAL;
	rss = calloc(1, sizeof(*rss));
	if (rss == NULL)
		return ENOMEM;
	rss->cfg.fields = q->fields_mask;
	rss->cfg.log_size = q->log_size;
	rss->cfg.key_len = q->key_len;
	memcpy(rss->cfg.key, q->key, sizeof(rss->cfg.key));
	rc = -flow_rss_check(&rss->cfg);
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		rss->wq[i] = rss_wq(c, q->wq[i]);
		if (rss->wq[i] == NULL)
			rc = EINVAL;
		else
			rss->cfg.dest[i] = rss->wq[i]->info.qpn;
	}
	if (rc) {
		free(rss);
		return rc;
	}
	lcore = ctl_lcore_least(ctl);
	qp = ctl_table_alloc_class(&ctl->tab[CTL_KIND_QP], c, CTL_KIND_QP, q->user_handle,
				   ctl->cfg.limits.qpn_base,
				   ctl->cfg.limits.n_lcores > 1 ? ctl->cfg.limits.n_lcores : 1, lcore);
	if (qp == NULL) {
		free(rss);
		return ENOMEM;
	}
	qp->rss = rss;
	qp->pd = pd;
	pd->o.refs++;
	for (uint32_t i = 0; i < n; i++)
		rss->wq[i]->o.refs++;
	qp->info.qpn = ctl->cfg.limits.qpn_base + qp->o.index;
	qp->info.qp_type = IBV_QPT_RAW_PACKET;
	qp->info.pd = pd->o.index;
	qp->info.send_cqn = qp->info.recv_cqn = qp->info.srqn = UINT32_MAX;
	qp->info.dev = (uint32_t)c->dev;
	qp->info.port = 1;
	qp->info.user_handle = q->user_handle;
	qp->info.owner = c->group;
	ctl->lcore_qps[ctl_qpn_lcore(&ctl->cfg.limits, qp->info.qpn)]++;
	x->rsp->u.rsp_CREATE_RSS_QP.handle = ctl_obj_handle(&qp->o);
	x->rsp->u.rsp_CREATE_RSS_QP.num = qp->info.qpn;
	return 0;
}

void ctl_rss_qp_destroyed(struct ctl *ctl, struct ctl_qp *qp)
{
	uint32_t n = UINT32_C(1) << qp->rss->cfg.log_size;

	(void)ctl;
	for (uint32_t i = 0; i < n; i++)
		qp->rss->wq[i]->o.refs--;
	free(qp->rss);
	qp->rss = NULL;
}
