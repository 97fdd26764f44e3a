/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QPs on their owner lcore (ai_qp.h): create, modify and destroy become
 * QP_CREATE/QP_MODIFY/QP_DESTROY messages carrying the engine configuration
 * by value (xport_cfg_from_sem(), lib/xport xport_sem.h).
 */
#include "ai_qp.h"

#include <errno.h>
#include <string.h>

#include "ai_cq.h"
#include "ai_op.h"
#include "ai_resolve.h"
#include "daemon.h"
#include "engine_xport.h"
#include "xport_sem.h"

struct ai_qp *
ai_qp_of(struct app_iface *ai, uint32_t qpn)
{
	uint32_t i = qpn - AI_QPN_BASE;

	return i < ai->max_qp ? &ai->qp[i] : NULL;
}

/*
 * The engine configuration of QP @p q for the attributes @p sem, from @p cur
 * (its queues and the path resolved before) into @p c.
 * @return true when c->av.dmac is still to be resolved (a new path)
 */
static bool
qp_cfg(struct app_iface *ai, const struct ai_qp *q, const struct qp_sem *sem,
       const struct xport_cfg *cur, struct xport_cfg *c)
{
	const struct ctl_qp_info *info = q->info;
	const struct ctl_port_cfg *pc = &ai->cfg.dev[info->dev].port[0];
	const struct xport_sem_port port = {
		.active_mtu = (uint8_t)pc->attr.active_mtu,
		.pkeys = pc->pkey, .n_pkeys = CTL_PKEY_TBL_LEN,
		.gids = pc->gid, .n_gids = CTL_GID_TBL_LEN,
		.mac = pc->mac,
		.vlan = pc->vlan,
		.max_unacked = ai->d->cfg.daemon.max_inflight_packets,
		.min_window = ai->d->cfg.daemon.min_inflight_packets,
		.cc = info->dev < ai->d->n_ports ? &ai->d->port[info->dev].cc : NULL,
		/* RAW_PACKET sends: the port's MTU plus the Ethernet header */
		.raw_frame_max = info->dev < ai->d->n_ports
					 ? ai->d->port[info->dev].mtu + (uint32_t)sizeof(struct roce_eth_hdr)
					 : 0,
	};

	return xport_cfg_from_sem(cur, sem, &port, c);
}

int
ai_lcore_qp_create(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	(void)ai;
	return engine_xport_qp_create(w, &m->u.qp.cfg, m->u.qp.port, m->u.qp.epoch);
}

int
ai_lcore_qp_modify(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	(void)ai;
	return engine_xport_qp_modify(w, m->u.qp.cfg.qpn, &m->u.qp.cfg, m->u.qp.state,
				      m->u.qp.epoch);
}

int
ai_lcore_qp_destroy(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	(void)ai;
	return engine_xport_qp_destroy(w, m->u.qp.cfg.qpn);
}

static unsigned int
qp_lcore(const struct app_iface *ai, uint32_t qpn)
{
	return worker_of_qpn(qpn, ai->d->n_workers);
}

/* Drop the QP's references on its CQs/SRQ (the engine QP is gone). */
static void
qp_unbind(struct app_iface *ai, const struct ctl_qp_info *info)
{
	if (info->pd < ai->max_pd)
		ai->pd_qps[info->pd * ai->d->n_workers + qp_lcore(ai, info->qpn)]--;
	if (info->send_cqn != UINT32_MAX) /* XRC QPs have fewer */
		ai->cq[info->send_cqn].nqps--;
	if (info->recv_cqn != UINT32_MAX)
		ai->cq[info->recv_cqn].nqps--;
	if (info->srqn != UINT32_MAX)
		ai->srq[info->srqn - 1].nqps--;
}

static void
qp_msg(struct ctl_msg *m, enum ctl_msg_type type, const struct ai_qp *q,
       const struct xport_cfg *cfg, int state, uint32_t epoch)
{
	memset(m, 0, sizeof(*m));
	m->type = (uint16_t)type;
	m->u.qp.cfg = *cfg;
	m->u.qp.port = q->port;
	m->u.qp.state = (int16_t)state;
	m->u.qp.epoch = epoch;
}

int
ai_dp_qp_create(void *dp, const struct ctl_qp_info *info)
{
	struct app_iface *ai = dp;
	struct ai_qp *q = ai_qp_of(ai, info->qpn);
	uint32_t lcore = qp_lcore(ai, info->qpn);
	struct ai_cq *scq = NULL, *rcq = NULL;
	struct ai_srq *srq = NULL;
	struct ai_op *op;
	struct ctl_msg m;

	/* XRC: INI has no receive CQ, TGT no CQ at all (UINT32_MAX) */
	if (q == NULL || info->dev >= ai->d->n_ports ||
	    (info->send_cqn != UINT32_MAX && info->send_cqn >= ai->max_cq) ||
	    (info->recv_cqn != UINT32_MAX && info->recv_cqn >= ai->max_cq) ||
	    (info->srqn != UINT32_MAX && (info->srqn == 0 || info->srqn > ai->max_srq)))
		return EINVAL;
	if (info->send_cqn != UINT32_MAX)
		scq = &ai->cq[info->send_cqn];
	if (info->recv_cqn != UINT32_MAX)
		rcq = &ai->cq[info->recv_cqn];
	if (info->srqn != UINT32_MAX)
		srq = &ai->srq[info->srqn - 1];
	op = ai_op_new(ai, AI_OP_QP_CREATE);
	if (op == NULL)
		return EAGAIN;
	/* lib/ctl placed the QP with its CQs/SRQ: one producer per CQ ring */
	if (scq != NULL && ai_cq_bind(scq, lcore) != 0)
		goto einval;
	if (rcq != NULL && ai_cq_bind(rcq, lcore) != 0) {
		if (scq != NULL)
			scq->nqps--;
		goto einval;
	}
	if (srq != NULL && ai_srq_bind(srq, lcore) != 0) {
		if (scq != NULL)
			scq->nqps--;
		if (rcq != NULL)
			rcq->nqps--;
		goto einval;
	}
	if (info->pd < ai->max_pd)
		ai->pd_qps[info->pd * ai->d->n_workers + lcore]++; /* its MRs wait for this lcore */
	memset(q, 0, sizeof(*q));
	q->info = info;
	q->cookie = ++ai->next_cookie;
	q->port = (uint16_t)info->dev;
	q->cfg = (struct xport_cfg){
		.sq = info->sq.ring, .sq_size = info->sq.entries,
		.rq = srq ? NULL : info->rq.ring, .rq_size = srq ? 0 : info->rq.entries,
		.rq_stride = srq ? 0 : info->rq.stride,
		.srq = srq ? &srq->x : NULL,
		.send_cq = scq ? &scq->x : NULL, .recv_cq = rcq ? &rcq->x : NULL,
		/* XRC TGT: the SRQs its requests name, of its domain (ai_cq.c) */
		.xrcd = info->xrcd, .xrc_srq = info->xrcd ? ai_xrc_srq : NULL, .xrc_ctx = ai,
		.mrs = ai->mrs[lcore],
		.mws = ctl_mw_table(ai->ctl), /* one for all lcores (lib/xport mw.h) */
		.ahs = ai->ahs,
		.qpn = info->qpn, .pd = info->pd,
	};
	qp_cfg(ai, q, info->sem, &q->cfg, &q->cfg); /* RESET: no path to resolve */
	op->qpn = info->qpn;
	qp_msg(&m, CTL_MSG_QP_CREATE, q, &q->cfg, -1, q->cookie);
	if (ai_send(ai, lcore, op, &m) != 0) {
		qp_unbind(ai, info);
		q->info = NULL;
		ai_op_free(ai, op);
		return EAGAIN;
	}
	return ai_op_return(ai, op);
einval:
	ai_op_free(ai, op);
	return EINVAL;
}

/* Send @p op's modify (its configuration complete) to the QP's lcore. @return 0 or EAGAIN */
static int
qp_modify_send(struct app_iface *ai, struct ai_op *op)
{
	struct ai_qp *q = ai_qp_of(ai, op->qpn);
	struct ctl_msg m;

	op->kind = AI_OP_QP_MODIFY;
	qp_msg(&m, CTL_MSG_QP_MODIFY, q, &op->cfg, op->state, op->epoch);
	return ai_send(ai, qp_lcore(ai, op->qpn), op, &m) == 0 ? 0 : EAGAIN;
}

int
ai_dp_qp_modify(void *dp, const struct ctl_qp_info *info, const struct qp_sem *next,
	     const struct qp_sem_effects *fx)
{
	struct app_iface *ai = dp;
	struct ai_qp *q = ai_qp_of(ai, info->qpn);
	struct ai_op *op;
	int rc, state = -1;

	if (q == NULL || q->info != info)
		return EINVAL;
	op = ai_op_new(ai, AI_OP_QP_RESOLVE);
	if (op == NULL)
		return EAGAIN;
	op->qpn = info->qpn;
	if (fx->flags & QP_SEM_FX_RESET)
		state = XPORT_STATE_RESET;
	else if (xport_state_from_sem(fx->new_state) != xport_state_from_sem(fx->old_state))
		state = xport_state_from_sem(fx->new_state);
	op->state = state;
	/*
	 * A reset starts a new life of the QP: its events get a new epoch, so
	 * an error the engine raised before the reset (still on the event ring)
	 * is dropped (ai_event.c) rather than moving the reset QP to ERR.
	 */
	op->epoch = state == XPORT_STATE_RESET ? ++ai->next_cookie : q->cookie;
	rc = 0;
	if (qp_cfg(ai, q, next, &q->cfg, &op->cfg)) {
		/* a new path: the modify waits for its neighbour, asynchronously */
		rc = ai_resolve_start(ai, op, q->port, op->cfg.av.dgid, op->cfg.av.dmac);
		if (rc == -EAGAIN)
			return ai_op_return(ai, op);
	}
	if (rc == 0)
		rc = qp_modify_send(ai, op);
	if (rc != 0) {
		ai_op_free(ai, op);
		return rc;
	}
	return ai_op_return(ai, op);
}

void
ai_dp_qp_destroy(void *dp, const struct ctl_qp_info *info)
{
	struct app_iface *ai = dp;
	struct ai_qp *q = ai_qp_of(ai, info->qpn);
	struct ai_op *op;
	struct ctl_msg m;

	if (q == NULL || q->info != info)
		return;
	op = ai_op_new(ai, AI_OP_QP_DESTROY);
	if (op == NULL) {
		ai->ctl_refused++; /* cannot happen: AI_MAX_OPS > what lib/ctl has in flight */
		return;
	}
	op->qpn = info->qpn;
	qp_msg(&m, CTL_MSG_QP_DESTROY, q, &q->cfg, -1, 0);
	/*
	 * No room even in the release reserve: the QP stays on its lcore, so
	 * lib/ctl must never free its rings (nor its CQs' and SRQ's). Its PD
	 * stays counted on that lcore (MRs of the PD still wait for it); a new
	 * QP under its QPN is refused there (EEXIST).
	 */
	if (ai_send_release(ai, qp_lcore(ai, info->qpn), op, &m) != 0)
		q->info = NULL;
}

/* QP_CREATE answered: an lcore that refused holds nothing. */
void
ai_qp_created(struct app_iface *ai, struct ai_op *op)
{
	struct ai_qp *q = ai_qp_of(ai, op->qpn);

	if (op->rc != 0) {
		qp_unbind(ai, q->info);
		q->info = NULL;
	}
	ai_op_finish(ai, op, op->rc == 0 ? 0 : op->rc == -EINVAL ? EINVAL
				      : op->rc == -EEXIST ? EEXIST : ENOMEM);
}

/* QP_RESOLVE answered by the neighbour table: the modify goes on to the lcore. */
void
ai_qp_resolved(struct app_iface *ai, struct ai_op *op)
{
	int rc;

	if (op->rc != 0) {
		/* Linux (ib_resolve_eth_dmac): an unresolvable neighbour is ETIMEDOUT */
		ai_op_finish(ai, op, ETIMEDOUT);
		return;
	}
	rc = qp_modify_send(ai, op);
	if (rc != 0)
		ai_op_finish(ai, op, rc);
}

/* QP_MODIFY answered: the QP's new configuration and event epoch. */
void
ai_qp_modified(struct app_iface *ai, struct ai_op *op)
{
	struct ai_qp *q = ai_qp_of(ai, op->qpn);

	if (op->rc == 0) {
		q->cfg = op->cfg;
		if (op->epoch != q->cookie) {
			q->cookie = op->epoch;
			q->error_reported = false;
		}
	}
	ai_op_finish(ai, op, op->rc == 0 ? 0 : op->rc == -EINVAL || op->rc == -ENOMEM
					    ? -op->rc : EAGAIN);
}

/* QP_DESTROY answered: its CQs/SRQ references go; -ENOENT: the lcore held nothing. */
void
ai_qp_destroyed(struct app_iface *ai, struct ai_op *op)
{
	struct ai_qp *q = ai_qp_of(ai, op->qpn);

	qp_unbind(ai, q->info);
	q->info = NULL;
	ai_op_finish(ai, op, op->rc != 0 && op->rc != -ENOENT ? EIO : 0);
}
