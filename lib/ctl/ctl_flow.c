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
 * (ctl_conn.cap_net_raw, /proc/PID/status CapEff), never on the client's word.
 */
#include <errno.h>

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
			continue;
		}
		a->max_raw_ethy_qp = a->max_qp;
		a->raw_packet_caps = 0; /* no checksum, VLAN stripping or FCS offloads */
		a->device_cap_flags |= IBV_DEVICE_MANAGED_FLOW_STEERING;
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
