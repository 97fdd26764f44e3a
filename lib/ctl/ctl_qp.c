/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: QP requests. The QP semantics are lib/qp's (qp_attr.h: create
 * caps, the modify transition table and value checks, query), so the daemon
 * answers exactly like Linux; the control plane adds ownership, the QPN, the
 * SQ/RQ rings in one memfd, and hands every accepted change to the dataplane.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ctl_internal.h"
#include "ipc_verbs.h"

/* A CQ or SRQ without QPs is free to move to another lcore (NULL: an XRC QP has none). */
static void ctl_cq_put(struct ctl_cq *cq)
{
	if (cq != NULL && --cq->o.refs == 0)
		cq->lcore = CTL_LCORE_NONE;
}

static void ctl_cq_get(struct ctl_cq *cq, uint32_t lcore)
{
	if (cq != NULL) {
		cq->o.refs++;
		cq->lcore = lcore;
	}
}

static void ctl_qp_put_refs(struct ctl *ctl, struct ctl_qp *qp)
{
	if (qp->pd != NULL)
		qp->pd->o.refs--;
	ctl_cq_put(qp->scq);
	ctl_cq_put(qp->rcq);
	if (qp->srq && --qp->srq->o.refs == 0 && qp->srq->cq == NULL)
		qp->srq->lcore = CTL_LCORE_NONE; /* a TM SRQ stays on its CQ's lcore */
	if (qp->xrcd != NULL)
		ctl_xrcd_unbind(ctl, qp->xrcd);
	ctl->lcore_qps[ctl_qpn_lcore(&ctl->cfg.limits, qp->info.qpn)]--;
}

static void ctl_qp_get_refs(struct ctl *ctl, struct ctl_qp *qp, uint32_t lcore)
{
	if (qp->pd != NULL)
		qp->pd->o.refs++;
	ctl_cq_get(qp->scq, lcore);
	ctl_cq_get(qp->rcq, lcore);
	if (qp->srq) {
		qp->srq->o.refs++;
		qp->srq->lcore = lcore;
	}
	if (qp->xrcd != NULL)
		ctl_xrcd_bind(ctl, qp->xrcd, lcore);
	ctl->lcore_qps[lcore]++;
}

/* Merge one object's binding into @p lcore. @return false on a conflict. */
bool ctl_place_with(uint32_t bound, uint32_t *lcore)
{
	if (bound == CTL_LCORE_NONE)
		return true;
	if (*lcore != CTL_LCORE_NONE && *lcore != bound)
		return false;
	*lcore = bound;
	return true;
}

/*
 * The lcore a new QP must run on (ctl.h "QP placement").
 * @return 0, or EINVAL when its CQs/SRQ live on different lcores
 */
static int ctl_qp_place(const struct ctl *ctl, const struct ctl_qp *qp, uint32_t *lcore)
{
	*lcore = CTL_LCORE_NONE;
	if ((qp->scq && !ctl_place_with(qp->scq->lcore, lcore)) ||
	    (qp->rcq && !ctl_place_with(qp->rcq->lcore, lcore)) ||
	    (qp->srq && !ctl_place_with(qp->srq->lcore, lcore)) ||
	    (qp->xrcd && !ctl_place_with(ctl_xrcd_lcore(ctl, qp->xrcd), lcore)))
		return EINVAL;
	if (*lcore == CTL_LCORE_NONE)
		*lcore = ctl_lcore_least(ctl);
	return 0;
}

uint32_t ctl_lcore_least(const struct ctl *ctl)
{
	uint32_t n = ctl->cfg.limits.n_lcores > 1 ? ctl->cfg.limits.n_lcores : 1;
	uint32_t best = 0;

	for (uint32_t l = 1; l < n; l++)
		if (ctl->lcore_qps[l] < ctl->lcore_qps[best])
			best = l;
	return best;
}

/*
 * The objects a new QP names, by type: XRC_SEND (INI) a PD and a send CQ,
 * XRC_RECV (TGT) only its XRC domain (ctl_xrc.c), the others a PD, two CQs
 * and maybe an SRQ (not an XRC one; a TM one only for RC). @return 0 or EINVAL
 */
static int ctl_qp_lookup(struct ctl_conn *c, const struct ipc_create_qp_req *q, struct ctl_qp *qp)
{
	bool ini = q->qp_type == IBV_QPT_XRC_SEND, tgt = q->qp_type == IBV_QPT_XRC_RECV;

	*qp = (struct ctl_qp){ 0 };
	if (tgt) {
		qp->xrcd = ctl_lookup(c, CTL_KIND_XRCD, q->xrcd);
		return qp->xrcd == NULL || q->srq != IPC_HANDLE_NONE ? EINVAL : 0;
	}
	qp->pd = ctl_lookup(c, CTL_KIND_PD, q->pd);
	qp->scq = ctl_lookup(c, CTL_KIND_CQ, q->send_cq);
	if (!ini)
		qp->rcq = ctl_lookup(c, CTL_KIND_CQ, q->recv_cq);
	if (qp->pd == NULL || qp->scq == NULL || (!ini && qp->rcq == NULL))
		return EINVAL;
	if (q->srq != IPC_HANDLE_NONE) {
		qp->srq = ctl_lookup(c, CTL_KIND_SRQ, q->srq);
		if (ini || qp->srq == NULL || qp->srq->xrcd != NULL)
			return EINVAL;
		/* tag matching is RC's (as mlx5): a UD or UC QP cannot use a TM SRQ */
		if (qp->srq->info.max_num_tags != 0 && q->qp_type != IBV_QPT_RC)
			return EINVAL;
	}
	return 0;
}

/* Lay out a ring at @p off of @p shm; fills the dataplane view and the wire description. */
static void ctl_qp_ring(struct ctl_shm *shm, size_t off, uint32_t entries, uint32_t stride,
			struct ctl_ring_info *ri, struct ipc_ring_desc *desc)
{
	ri->ring = (struct spsc_ring *)((uint8_t *)shm->map + off);
	spsc_ring_init(ri->ring, entries, stride);
	ri->entries = entries;
	ri->stride = stride;
	*desc = (struct ipc_ring_desc){ .offset = off, .entries = entries, .stride = stride };
}

static int ctl_create_qp_fin(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	struct ctl_qp *qp = (struct ctl_qp *)p->obj;

	if (rc) {
		ctl_qp_put_refs(ctl, qp);
		ctl_shm_free(&qp->shm);
		ctl_table_free(&ctl->tab[CTL_KIND_QP], qp);
		return rc;
	}
	p->rsp.u.rsp_CREATE_QP.handle = ctl_obj_handle(&qp->o);
	return 0;
}

int ctl_h_CREATE_QP(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	int *rfds = x->rfds;
	unsigned int *rnfds = x->rnfds;
	const struct ipc_create_qp_req *q = &req->u.req_CREATE_QP;
	struct ipc_create_qp_rsp *r = &rsp->u.rsp_CREATE_QP;
	struct ctl *ctl = c->ctl;
	struct ctl_qp objs;
	struct ctl_srq *srq;
	struct ibv_qp_init_attr init;
	struct qp_sem sem;
	uint32_t sq_n, rq_n = 0, rq_stride = 0;
	size_t sq_bytes, rq_bytes = 0;
	struct ctl_qp *qp;
	uint32_t lcore;
	int rc, fd;
	/* no receive queue: an SRQ, or XRC; XRC_RECV's SQ is the daemon's own */
	bool tgt = q->qp_type == IBV_QPT_XRC_RECV;
	bool no_rq = q->qp_type == IBV_QPT_XRC_SEND || tgt;

	rc = ctl_qp_lookup(c, q, &objs);
	if (rc)
		return rc;
	srq = objs.srq;
	no_rq = no_rq || srq != NULL;
	if (q->qp_type == IBV_QPT_RAW_PACKET && (rc = ctl_raw_allowed(c)) != 0)
		return rc;
	rc = ctl_qp_place(ctl, &objs, &lcore);
	if (rc)
		return rc;
	if (q->create_flags != 0)
		return EOPNOTSUPP;
	/* The semantics only check that the CQs exist; they never dereference them. */
	memset(&init, 0, sizeof(init));
	init.send_cq = (struct ibv_cq *)objs.scq;
	init.recv_cq = (struct ibv_cq *)objs.rcq;
	init.srq = (struct ibv_srq *)srq;
	ipc_cap_to_ibv(&q->cap, &init.cap);
	init.qp_type = (enum ibv_qp_type)q->qp_type;
	init.sq_sig_all = q->sq_sig_all != 0;
	rc = qp_sem_create(&sem, &init, &ctl->sem[c->dev].dev);
	if (rc)
		return rc;

	/* Rings hold exactly the adjusted caps: max_wr is 2^k - 1, the ring 2^k. */
	sq_n = sem.init.cap.max_send_wr + 1;
	sq_bytes = ipc_ring_bytes(sq_n, sizeof(struct sq_wqe));
	if (!no_rq) {
		rq_n = sem.init.cap.max_recv_wr + 1;
		rq_stride = rq_wqe_stride(sem.init.cap.max_recv_sge); /* whole lines (wqe.h) */
		rq_bytes = ipc_ring_bytes(rq_n, rq_stride);
	}
	if (sq_bytes == 0 || (!no_rq && rq_bytes == 0))
		return EINVAL;

	qp = ctl_table_alloc_class(&ctl->tab[CTL_KIND_QP], c, CTL_KIND_QP, q->user_handle,
				   ctl->cfg.limits.qpn_base,
				   ctl->cfg.limits.n_lcores > 1 ? ctl->cfg.limits.n_lcores : 1, lcore);
	if (qp == NULL)
		return ENOMEM;
	rc = ctl_shm_alloc(&qp->shm, "roce-qp", sq_bytes + rq_bytes, &fd);
	if (rc) {
		ctl_table_free(&ctl->tab[CTL_KIND_QP], qp);
		return rc;
	}
	qp->sem = sem;
	ctl_qp_ring(&qp->shm, 0, sq_n, sizeof(struct sq_wqe), &qp->info.sq, &r->sq);
	if (!no_rq)
		ctl_qp_ring(&qp->shm, sq_bytes, rq_n, rq_stride, &qp->info.rq, &r->rq);
	qp->pd = objs.pd;
	qp->scq = objs.scq;
	qp->rcq = objs.rcq;
	qp->srq = srq;
	qp->xrcd = objs.xrcd;
	qp->info.qpn = ctl->cfg.limits.qpn_base + qp->o.index;
	qp->info.qp_type = q->qp_type;
	qp->info.pd = objs.pd ? objs.pd->o.index : UINT32_MAX;
	qp->info.send_cqn = objs.scq ? objs.scq->info.cqn : UINT32_MAX;
	qp->info.recv_cqn = objs.rcq ? objs.rcq->info.cqn : UINT32_MAX;
	qp->info.xrcd = objs.xrcd ? ctl_xrcd_num(objs.xrcd) : 0;
	qp->info.srqn = srq ? srq->info.srqn : UINT32_MAX;
	qp->info.dev = (uint32_t)c->dev;
	qp->info.port = 1;
	qp->info.sem = &qp->sem;
	qp->info.user_handle = q->user_handle;
	qp->info.owner = c->group;
	/* placed now: a QP created meanwhile sees the CQs bound */
	ctl_qp_get_refs(ctl, qp, lcore);
	r->qpn = qp->info.qpn;
	ipc_cap_from_ibv(&qp->sem.init.cap, &r->cap);
	r->shm_size = sq_bytes + rq_bytes;
	if (tgt) {
		/* nothing for the client to write: its SQ stays the daemon's, empty */
		close(fd);
		r->shm_size = 0;
	} else {
		rfds[0] = fd; /* closed if the dataplane refuses */
		*rnfds = 1;
	}
	rc = DP_HAS(ctl, qp_create) ? DP(ctl)->qp_create(ctl->cfg.dp, &qp->info) : 0;
	return ctl_then(ctl, ctl->cur, rc, ctl_create_qp_fin, &qp->o);
}

/* Without a dataplane the control plane is the rings' consumer: a reset drops every entry. */
static void ctl_qp_drop_posted(struct ctl_qp *qp)
{
	if (qp->info.sq.ring)
		spsc_ring_release_to(qp->info.sq.ring, spsc_ring_prod_acquire(qp->info.sq.ring));
	if (qp->info.rq.ring)
		spsc_ring_release_to(qp->info.rq.ring, spsc_ring_prod_acquire(qp->info.rq.ring));
}

void ctl_qp_raise_fx(struct ctl *ctl, struct ctl_qp *qp, const struct qp_sem_effects *fx)
{
	for (unsigned int i = 0; i < fx->n_events && i < QP_SEM_MAX_EVENTS; i++)
		ctl_raise_event(ctl, IPC_OBJ_QP, qp->info.qpn, fx->event[i]);
}

/* Commit the modify in @p p once the dataplane took it. */
static int ctl_modify_qp_fin(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	struct ctl_qp *qp = (struct ctl_qp *)p->obj;

	if (rc)
		return rc;
	qp->sem = p->u.modify.next;
	ctl_qp_raise_fx(ctl, qp, &p->u.modify.fx);
	p->rsp.u.rsp_MODIFY_QP.state = qp->sem.attr.qp_state;
	/* Without a dataplane nothing is in flight: the drain ends at once. */
	if ((p->u.modify.fx.flags & QP_SEM_FX_SQ_DRAIN) && !DP_HAS(ctl, qp_modify)) {
		struct qp_sem_effects dr;

		if (qp_sem_sq_drained(&qp->sem, &dr) == 0)
			ctl_qp_raise_fx(ctl, qp, &dr);
	}
	return 0;
}

int ctl_h_MODIFY_QP(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	const struct ipc_modify_qp_req *q = &req->u.req_MODIFY_QP;
	struct ctl *ctl = c->ctl;
	struct ctl_qp *qp = ctl_lookup(c, CTL_KIND_QP, q->handle);
	struct ctl_pend *p = ctl->cur;
	struct qp_sem *next = &p->u.modify.next;
	struct qp_sem_effects *fx = &p->u.modify.fx;
	struct ibv_qp_attr attr;
	int rc;

	if (qp == NULL)
		return EINVAL;
	if (qp->rss != NULL)
		return EOPNOTSUPP; /* no states: it only steers (mlx5 refuses too) */
	ipc_qp_attr_to_ibv(&q->attr, &attr);
	/*
	 * A controlled Q_Key (MSB set, IBA 10.2.4) only for a client with
	 * CAP_NET_RAW, as Linux (uverbs modify_qp: rdma_nl_get_privileged_qkey()).
	 * A WR's Q_Key with the MSB set means "the QP's own", so this is the
	 * one place an application could pick one.
	 */
	if ((q->mask & IBV_QP_QKEY) && (attr.qkey & 0x80000000u) && !c->cap_net_raw) {
		ctl->qkey_refused++;
		return EPERM;
	}
	*next = qp->sem;
	rc = qp_sem_modify(next, &attr, (int)q->mask, &ctl->sem[c->dev].dev, fx);
	if (rc)
		return rc;
	if (DP_HAS(ctl, qp_modify))
		rc = DP(ctl)->qp_modify(ctl->cfg.dp, &qp->info, next, fx);
	else if (fx->flags & QP_SEM_FX_RESET)
		ctl_qp_drop_posted(qp);
	return ctl_then(ctl, p, rc, ctl_modify_qp_fin, &qp->o);
}

int ctl_h_QUERY_QP(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	const struct ipc_query_qp_req *q = &req->u.req_QUERY_QP;
	struct ipc_query_qp_rsp *r = &rsp->u.rsp_QUERY_QP;
	struct ctl_qp *qp = ctl_lookup(c, CTL_KIND_QP, q->handle);
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	int rc;

	if (qp == NULL)
		return EINVAL;
	if (qp->rss != NULL)
		return EOPNOTSUPP;
	rc = qp_sem_query(&qp->sem, (int)q->mask, &attr, &init);
	if (rc)
		return rc;
	ipc_qp_attr_from_ibv(&attr, &r->attr);
	ipc_cap_from_ibv(&init.cap, &r->init_cap);
	r->sq_sig_all = (uint32_t)init.sq_sig_all;
	return 0;
}

int ctl_qp_event(struct ctl *ctl, uint32_t qpn, enum ctl_qp_event ev, uint32_t cause)
{
	uint32_t idx = qpn - ctl->cfg.limits.qpn_base;
	struct qp_sem_effects fx;
	struct ctl_qp *qp;
	struct qp_sem next;
	int rc;

	if (idx >= ctl->tab[CTL_KIND_QP].cap)
		return -ENOENT;
	qp = ctl_table_at(&ctl->tab[CTL_KIND_QP], idx);
	if (qp->o.owner == NULL)
		return -ENOENT;
	if (qp->o.busy) {
		/* a modify/create is pending: the event applies to its outcome */
		if (!qp->ev_stash || ev == CTL_QP_EV_FATAL || ev == CTL_QP_EV_ERROR) {
			qp->ev_stash = (uint8_t)(ev + 1);
			qp->ev_cause = cause;
		}
		return 0;
	}
	next = qp->sem;
	switch (ev) {
	case CTL_QP_EV_FATAL:
		rc = qp_sem_fatal(&next, (enum ibv_event_type)cause, &fx);
		break;
	case CTL_QP_EV_SQ_ERROR:
		rc = qp_sem_send_queue_error(&next, &fx);
		break;
	case CTL_QP_EV_SQ_DRAINED:
		rc = qp_sem_sq_drained(&next, &fx);
		break;
	case CTL_QP_EV_COMM_EST:
		rc = qp_sem_comm_established(&next, &fx);
		break;
	case CTL_QP_EV_ERROR:
		rc = qp_sem_fatal(&next, IBV_EVENT_QP_FATAL, &fx);
		if (rc == 0) {
			unsigned int k = 0;

			for (unsigned int i = 0; i < fx.n_events && i < QP_SEM_MAX_EVENTS; i++)
				if (fx.event[i] != IBV_EVENT_QP_FATAL)
					fx.event[k++] = fx.event[i];
			fx.n_events = k;
		}
		break;
	default:
		rc = EINVAL;
		break;
	}
	if (rc)
		return -rc;
	/*
	 * The dataplane already acted; it still learns the effects (e.g. flush),
	 * outside any request: it cannot defer, it answers nothing.
	 */
	if (fx.flags && DP_HAS(ctl, qp_modify)) {
		struct ctl_pend *saved = ctl->cur;

		ctl->cur = &ctl->detached;
		DP(ctl)->qp_modify(ctl->cfg.dp, &qp->info, &next, &fx);
		ctl->cur = saved;
	}
	qp->sem = next;
	ctl_qp_raise_fx(ctl, qp, &fx);
	return 0;
}

void ctl_qp_destroyed(struct ctl *ctl, struct ctl_qp *qp)
{
	if (qp->rss != NULL)
		ctl_rss_qp_destroyed(ctl, qp);
	mw_qp_gone(ctl->mws, qp->info.qpn); /* its type 2 windows: a later QPN twin may not use them */
	ctl_shm_free(&qp->shm);
	ctl_qp_put_refs(ctl, qp);
	ctl_table_free(&ctl->tab[CTL_KIND_QP], qp);
}

int ctl_h_DESTROY_QP(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	struct ctl_qp *qp = ctl_lookup(c, CTL_KIND_QP, req->u.req_DESTROY_QP.handle);

	if (qp == NULL)
		return EINVAL;
	if (qp->o.refs != 0)
		return EBUSY; /* flows steer to it: as Linux, ibv_destroy_flow first */
	rsp->u.rsp_DESTROY_QP.events_reported = qp->o.events;
	return ctl_obj_destroy(c->ctl, &qp->o);
}
