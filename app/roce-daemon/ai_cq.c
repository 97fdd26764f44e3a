/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CQs and SRQs as the engine sees them (ai_cq.h): struct xport_cq/xport_srq
 * views of lib/ctl's rings, bound to the lcore of the QPs that use them.
 */
#include "ai_cq.h"

#include <errno.h>
#include <string.h>

#include <rte_cycles.h>

#include "ai_op.h"
#include "bell.h"
#include "daemon.h"
#include "engine_xport.h"
#include "queue.h"

static uint32_t
ai_handle(uint16_t gen, uint32_t num)
{
	return (uint32_t)gen << AI_HANDLE_BITS | num;
}

int
ai_dp_cq_create(void *dp, const struct ctl_cq_info *cq)
{
	struct app_iface *ai = dp;
	struct ai_cq *c;

	if (cq->cqn >= ai->max_cq || cq->cqn > AI_HANDLE_MASK)
		return EINVAL;
	c = &ai->cq[cq->cqn];
	c->info = cq;
	c->gen = (uint16_t)((c->gen + 1) & 0xfff);
	c->nqps = 0;
	c->lcore = AI_UNBOUND;
	return 0;
}

/*
 * The arm word the engine reads after publishing CQEs (xport_cq.arm), or
 * NULL for a CQ without a completion channel: no event can reach its
 * application, so nothing waits on it and the engine neither reads the
 * word nor fences each publish against it (ipc_shm.h; issue 18).
 */
static uint32_t *
ai_cq_arm_word(const struct ctl_cq_info *info)
{
	return info->event_fd >= 0 ? &info->ctrl->arm : NULL;
}

/* Move the unconsumed CQEs of @p from into @p to (fresh, empty) and point the engine's view there. */
static int
cq_move(struct ai_cq *c, const struct ctl_cq_info *to, const struct ctl_cq_info *from)
{
	struct spsc_ring *o = from->ring.ring, *n = to->ring.ring;
	uint32_t osz = from->ring.entries, nsz = to->ring.entries;
	uint32_t cnt = spsc_ring_count_in(o, osz), cons = spsc_ring_cons_index(o);

	if (cnt > nsz)
		return -EINVAL;
	for (uint32_t i = 0; i < cnt; i++)
		memcpy(spsc_ring_slot_in(n, nsz - 1, sizeof(struct cqe), i),
		       spsc_ring_slot_in(o, osz - 1, sizeof(struct cqe), cons + i), sizeof(struct cqe));
	spsc_ring_publish(n, cnt);
	to->ctrl->notify_count = __atomic_load_n(&from->ctrl->notify_count, __ATOMIC_RELAXED);
	__atomic_store_n(&to->ctrl->arm, __atomic_load_n(&from->ctrl->arm, __ATOMIC_ACQUIRE),
			 __ATOMIC_SEQ_CST);
	c->x.ring = n;
	c->x.size = nsz;
	c->x.arm = ai_cq_arm_word(to);
	/* bells rung before the move (the shim rings the new block from now on) */
	for (uint64_t sum = shm_bells_take_summary(&from->ctrl->bells); sum != 0; sum &= sum - 1) {
		uint32_t i = (uint32_t)__builtin_ctzll(sum);

		for (uint64_t b = shm_bells_take_word(&from->ctrl->bells, i); b != 0; b &= b - 1)
			shm_bell_ring(&to->ctrl->bells, i * 64 + (uint32_t)__builtin_ctzll(b));
	}
	c->x.bells = &to->ctrl->bells;
	c->x.cons_cache = 0;
	c->x.overflowed = false;
	return 0;
}

int
ai_lcore_cq_resize(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	(void)ai;
	/*
	 * Control messages run before the engine's poll: first take in the work
	 * the application posted before it asked, so the size check counts the
	 * completions that work has already produced (a sleeping lcore would
	 * otherwise see them only after the move).
	 */
	if (w->engine->poll != NULL)
		w->engine->poll(w, rte_rdtsc());
	return cq_move(m->u.cq.view, m->u.cq.to, m->u.cq.from);
}

int
ai_dp_cq_resize(void *dp, const struct ctl_cq_info *cq, const struct ctl_cq_info *old)
{
	struct app_iface *ai = dp;
	struct ai_cq *c = &ai->cq[old->cqn];
	struct ctl_msg m = { .type = CTL_MSG_CQ_RESIZE };
	struct ai_op *op;

	/* the producer moves the CQEs: the owner lcore, or us while no QP uses the CQ */
	if (c->nqps == 0)
		return cq_move(c, cq, old) == 0 ? 0 : EINVAL;
	op = ai_op_new(ai, AI_OP_CQ_RESIZE);
	if (op == NULL)
		return EAGAIN;
	m.u.cq.view = c;
	m.u.cq.to = cq;
	m.u.cq.from = old;
	if (ai_send(ai, c->lcore, op, &m) != 0) {
		ai_op_free(ai, op);
		return EAGAIN;
	}
	return ai_op_return(ai, op);
}

void
ai_dp_cq_destroy(void *dp, const struct ctl_cq_info *cq)
{
	struct app_iface *ai = dp;
	struct ai_cq *c = &ai->cq[cq->cqn];

	/* lib/ctl destroys a CQ only when no QP uses it: no lcore holds it */
	c->info = NULL;
	c->gen = (uint16_t)((c->gen + 1) & 0xfff);
}

/*
 * An XRC SRQ is bound to its domain's lcore from its creation (lib/ctl
 * chose it, ctl.h "QP placement"), with its CQ; its MRs' PD counts there
 * (ai_mr.c waits for that lcore). The engine view is complete before
 * xrc_live publishes it (store-release; TGT QPs load-acquire it).
 */
static int
srq_xrc_attach(struct app_iface *ai, struct ai_srq *s, const struct ctl_srq_info *srq)
{
	struct ai_cq *c;

	if (srq->cqn >= ai->max_cq || srq->lcore >= ai->d->n_workers || srq->pd >= ai->max_pd)
		return EINVAL;
	c = &ai->cq[srq->cqn];
	if (ai_cq_bind(c, srq->lcore) != 0)
		return EINVAL;
	ai->pd_qps[srq->pd * ai->d->n_workers + srq->lcore]++;
	s->lcore = srq->lcore;
	s->x.cq = &c->x;
	s->x.pd = srq->pd;
	s->x.xrcd = srq->xrcd;
	__atomic_store_n(&s->x.xrc_live, s->x.handle, __ATOMIC_RELEASE);
	return 0;
}

/* A TM SRQ no lcore polls: its CQ binding and its list go, the slot is free. */
static void
srq_tm_undo(struct app_iface *ai, struct ai_srq *s)
{
	ai->cq[s->info->cqn].nqps--;
	xport_tm_fini(&s->tm);
	s->x.tm = NULL;
	s->info = NULL;
	s->gen = (uint16_t)((s->gen + 1) & 0xfff);
}

static int srq_tm_attach(struct app_iface *ai, struct ai_srq *s, const struct ctl_srq_info *srq);

int
ai_lcore_tm_attach(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	(void)ai;
	return engine_xport_tm_attach(w, m->u.srq.x);
}

void
ai_tm_attached(struct app_iface *ai, struct ai_op *op)
{
	if (op->rc != 0)
		srq_tm_undo(ai, &ai->srq[op->srqn - 1]);
	ai_op_finish(ai, op, op->rc == 0 ? 0 : op->rc == -ENOSPC ? ENOMEM : EAGAIN);
}

int
ai_dp_srq_create(void *dp, const struct ctl_srq_info *srq)
{
	struct app_iface *ai = dp;
	struct ai_srq *s;

	if (srq->srqn == 0 || srq->srqn > ai->max_srq || srq->srqn > AI_HANDLE_MASK)
		return EINVAL;
	s = &ai->srq[srq->srqn - 1];
	s->gen = (uint16_t)((s->gen + 1) & 0xfff);
	s->nqps = 0;
	s->lcore = AI_UNBOUND;
	/* xrc_live first: a TGT QP holding this slot from an earlier SRQ lets go */
	__atomic_store_n(&s->x.xrc_live, 0, __ATOMIC_RELEASE);
	s->x = (struct xport_srq){
		.ring = srq->ring.ring, .size = srq->ring.entries, .stride = srq->ring.stride,
		.handle = ai_handle(s->gen, srq->srqn),
		.limit = srq->srq_limit, .limit_armed = srq->srq_limit != 0,
	};
	if (srq->xrcd != 0 && srq_xrc_attach(ai, s, srq) != 0)
		return EINVAL;
	s->info = srq;
	return srq->max_num_tags != 0 ? srq_tm_attach(ai, s, srq) : 0;
}

/*
 * A TM SRQ is bound to its CQ's lcore from its creation (lib/ctl chose
 * it): its matching list is made here, then TM_ATTACH has the lcore poll
 * its ops ring (answered by ai_tm_attached()).
 */
static int
srq_tm_attach(struct app_iface *ai, struct ai_srq *s, const struct ctl_srq_info *srq)
{
	struct ctl_msg m = { .type = CTL_MSG_TM_ATTACH };
	struct ai_op *op;
	struct ai_cq *c;

	if (srq->cqn >= ai->max_cq || srq->lcore >= ai->d->n_workers || srq->tm_ops.ring == NULL ||
	    srq->tm_released == NULL)
		goto inval;
	c = &ai->cq[srq->cqn];
	if (xport_tm_init(&s->tm, srq->max_num_tags) != 0)
		goto inval;
	s->tm.by_index = true;
	s->tm.released = srq->tm_released;
	if (ai_cq_bind(c, srq->lcore) != 0) {
		xport_tm_fini(&s->tm);
		goto inval;
	}
	s->lcore = srq->lcore;
	s->x.cq = &c->x;
	s->x.tm = &s->tm;
	s->x.tm_ops = srq->tm_ops.ring;
	s->x.tm_ops_size = srq->tm_ops.entries;
	s->x.tm_max_sge = srq->max_sge;
	op = ai_op_new(ai, AI_OP_TM_ATTACH);
	if (op == NULL) {
		srq_tm_undo(ai, s);
		return EAGAIN;
	}
	op->srqn = srq->srqn;
	m.u.srq.x = &s->x;
	if (ai_send(ai, s->lcore, op, &m) != 0) {
		ai_op_free(ai, op);
		srq_tm_undo(ai, s);
		return EAGAIN;
	}
	return ai_op_return(ai, op);
inval:
	s->info = NULL;
	return EINVAL;
}

struct xport_srq *
ai_xrc_srq(void *ctx, uint32_t srqn)
{
	struct app_iface *ai = ctx;

	/* read on a worker: only the slot's address; the engine checks xrc_live */
	return srqn == 0 || srqn > ai->max_srq ? NULL : &ai->srq[srqn - 1].x;
}

int
ai_lcore_srq_detach(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	(void)ai;
	/* on the domain's lcore, between packets: no TGT QP is inside it */
	__atomic_store_n(&m->u.srq.x->xrc_live, 0, __ATOMIC_RELEASE);
	if (m->u.srq.x->tm != NULL) /* a TM SRQ: its ops ring is no longer read */
		engine_xport_tm_detach(w, m->u.srq.x);
	return 0;
}

/* The SRQ is no longer the engine's: its CQ and PD references go. */
static void
srq_release(struct app_iface *ai, struct ai_srq *s)
{
	const struct ctl_srq_info *info = s->info;

	if (info->xrcd != 0) {
		ai->cq[info->cqn].nqps--;
		ai->pd_qps[info->pd * ai->d->n_workers + s->lcore]--;
	}
	if (s->x.tm != NULL) {
		ai->cq[info->cqn].nqps--;
		xport_tm_fini(&s->tm);
		s->x.tm = NULL;
	}
	s->info = NULL;
	s->gen = (uint16_t)((s->gen + 1) & 0xfff);
}

void
ai_srq_detached(struct app_iface *ai, struct ai_op *op)
{
	srq_release(ai, &ai->srq[op->srqn - 1]);
	ai_op_finish(ai, op, op->rc == 0 ? 0 : EIO);
}

int
ai_lcore_srq_limit(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	(void)ai;
	(void)w;
	m->u.srq.x->limit = m->u.srq.limit;
	m->u.srq.x->limit_armed = m->u.srq.limit != 0;
	return 0;
}

int
ai_dp_srq_modify(void *dp, const struct ctl_srq_info *srq)
{
	struct app_iface *ai = dp;
	struct ai_srq *s = &ai->srq[srq->srqn - 1];
	struct ctl_msg m = { .type = CTL_MSG_SRQ_LIMIT };
	struct ai_op *op;

	m.u.srq.x = &s->x;
	m.u.srq.limit = srq->srq_limit;
	if (s->nqps == 0 && srq->xrcd == 0) /* no lcore holds it: ours */
		return ai_lcore_srq_limit(ai, NULL, &m);
	op = ai_op_new(ai, AI_OP_SRQ_LIMIT);
	if (op == NULL)
		return EAGAIN;
	if (ai_send(ai, s->lcore, op, &m) != 0) {
		ai_op_free(ai, op);
		return EAGAIN;
	}
	return ai_op_return(ai, op);
}

void
ai_dp_srq_destroy(void *dp, const struct ctl_srq_info *srq)
{
	struct app_iface *ai = dp;
	struct ai_srq *s = &ai->srq[srq->srqn - 1];
	struct ctl_msg m = { .type = CTL_MSG_SRQ_DETACH };
	struct ai_op *op;

	if (srq->xrcd == 0 && s->x.tm == NULL) { /* lib/ctl destroys it only when no QP uses it */
		srq_release(ai, s);
		return;
	}
	/* an XRC SRQ: TGT QPs of its domain reach it until its lcore says no */
	op = ai_op_new(ai, AI_OP_SRQ_DETACH);
	if (op == NULL) {
		ai->ctl_refused++; /* cannot happen: AI_MAX_OPS > what lib/ctl has in flight */
		ctl_dp_destroy_failed(ai->ctl);
		return;
	}
	op->srqn = srq->srqn;
	m.u.srq.x = &s->x;
	/* not sent: TGT QPs may still reach it (its lcore may read its ops), lib/ctl keeps
	 * its ring and CQ */
	ai_send_release(ai, s->lcore, op, &m);
}

/* Bind CQ @p c to @p lcore for one more QP reference; the first reference sets the engine view up. */
int
ai_cq_bind(struct ai_cq *c, uint32_t lcore)
{
	if (c->nqps > 0)
		return c->lcore == lcore ? (c->nqps++, 0) : -EINVAL;
	c->lcore = lcore;
	c->nqps = 1;
	c->x = (struct xport_cq){
		.ring = c->info->ring.ring, .size = c->info->ring.entries, .arm = ai_cq_arm_word(c->info),
		.bells = &c->info->ctrl->bells,
		.handle = ai_handle(c->gen, c->info->cqn),
	};
	return 0;
}

int
ai_srq_bind(struct ai_srq *s, uint32_t lcore)
{
	if (s->nqps > 0)
		return s->lcore == lcore ? (s->nqps++, 0) : -EINVAL;
	s->lcore = lcore;
	s->nqps = 1;
	return 0;
}

/* ---- engine events -> applications ---- */

struct ai_cq *
ai_cq_of_handle(struct app_iface *ai, uint32_t h)
{
	uint32_t n = h & AI_HANDLE_MASK;

	if (n >= ai->max_cq || ai->cq[n].info == NULL || ai->cq[n].gen != h >> AI_HANDLE_BITS)
		return NULL; /* destroyed meanwhile */
	return &ai->cq[n];
}

struct ai_srq *
ai_srq_of_handle(struct app_iface *ai, uint32_t h)
{
	uint32_t n = h & AI_HANDLE_MASK;

	if (n == 0 || n > ai->max_srq || ai->srq[n - 1].info == NULL ||
	    ai->srq[n - 1].gen != h >> AI_HANDLE_BITS)
		return NULL;
	return &ai->srq[n - 1];
}

void
ai_cq_resize_answered(struct app_iface *ai, struct ai_op *op)
{
	ai_op_finish(ai, op, op->rc == 0 ? 0 : op->rc == -EINVAL ? EINVAL : EAGAIN);
}

void
ai_srq_limit_answered(struct app_iface *ai, struct ai_op *op)
{
	ai_op_finish(ai, op, op->rc == 0 ? 0 : EAGAIN);
}
