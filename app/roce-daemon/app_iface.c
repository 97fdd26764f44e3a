/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl on the dataplane (app_iface.h): the control plane's objects
 * carried out on the worker lcores, engine events back to the applications.
 *
 * Ownership, object by object (doc/architecture.md section 15):
 *  - struct ai_qp/ai_cq/ai_srq bookkeeping: the control thread;
 *  - ai_cq.x / ai_srq.x (the engine's view of a CQ/SRQ): the lcore the CQ
 *    or SRQ is bound to while a QP uses it (nqps > 0), else the control
 *    thread; the hand-over is a worker_call() (its ring is the
 *    release/acquire edge);
 *  - mrs[w]: worker w's lcore (written only by functions run through
 *    worker_call()), or the control thread once the workers stopped.
 */
#include "app_iface.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <rte_cycles.h>
#include <rte_telemetry.h>

#include "ctl.h"
#include "daemon.h"
#include "engine_xport.h"
#include "gid.h"
#include "mr.h"
#include "neigh.h"
#include "xport.h"

#define AI_CALL_TIMEOUT_MS 2000u
#define AI_CALL_RETRIES 15u        /* a destroy waits up to 30 s for a wedged lcore */
#define AI_CALL_RETRIES_SETUP 5u   /* other calls up to 10 s (a starved lcore), then EAGAIN */
#define AI_EVQ 4096u               /* engine events deferred while a request runs */
#define AI_HANDLE_BITS 20u         /* engine CQ/SRQ handle: gen << 20 | number */
#define AI_HANDLE_MASK ((1u << AI_HANDLE_BITS) - 1)
#define AI_MAX_CONNS 256u
#define AI_MAX_AH 4096u
#define AI_QPN_BASE 0x11u          /* worker QP tables hold qpn < max_qps + 17 */
#define AI_UNBOUND UINT32_MAX

/* A CQ as the dataplane knows it; indexed by cqn (lib/ctl's CQ index). */
struct ai_cq {
	const struct ctl_cq_info *info; /* lib/ctl's storage (stable); NULL: free */
	uint16_t gen;
	uint32_t lcore;                 /* while nqps > 0 */
	uint32_t nqps;                  /* QP references (send and receive count apart) */
	struct xport_cq x;              /* the engine's view: owned by `lcore` while nqps > 0 */
};

/* An SRQ; indexed by srqn - 1. */
struct ai_srq {
	const struct ctl_srq_info *info;
	uint16_t gen;
	uint32_t lcore;
	uint32_t nqps;
	struct xport_srq x;
};

/* A QP; indexed by qpn - AI_QPN_BASE. */
struct ai_qp {
	const struct ctl_qp_info *info; /* NULL: free */
	uint32_t cookie;                /* echoed in its engine events */
	uint16_t port;                  /* daemon port (= device index) */
	bool error_reported;            /* an async error event already moved it to ERR */
	struct xport_cfg cfg;           /* what the engine was last given */
};

struct app_iface {
	struct daemon *d;
	struct ctl *ctl;
	struct ctl_server *srv;
	struct ctl_config cfg;
	struct mr_table *mrs[WORKER_MAX];
	struct ai_cq *cq;
	struct ai_srq *srq;
	struct ai_qp *qp;
	uint32_t max_cq, max_srq, max_qp;
	uint32_t next_cookie;
	uint32_t dp_mrs;                /* MRs registered on the lcores */
	unsigned int resolve_ms;        /* bound of one address resolution */
	bool warned_unmapped;
	struct worker_event evq[AI_EVQ];
	uint32_t evq_head, evq_n;
	uint64_t events_dropped;
};

/* ---- telemetry: a snapshot the control thread publishes ---- */

#define AI_STAT_LIST(X) \
	X(conns) X(contexts) X(pd) X(mr) X(channel) X(cq) X(qp) X(srq) X(ah) X(dp_mrs) X(events_dropped)

static struct {
#define AI_STAT_FIELD(name) atomic_uint_fast64_t name;
	AI_STAT_LIST(AI_STAT_FIELD)
#undef AI_STAT_FIELD
	atomic_bool live;
} ai_stats;
static bool ai_stats_registered; /* commands cannot be unregistered: once per process */

static void
stats_publish(struct app_iface *ai)
{
	struct ctl_stats st;

	ctl_get_stats(ai->ctl, &st);
#define AI_STAT_STORE(name, v) atomic_store_explicit(&ai_stats.name, (v), memory_order_relaxed);
	AI_STAT_STORE(conns, st.conns)
	AI_STAT_STORE(contexts, st.contexts)
	AI_STAT_STORE(pd, st.pd)
	AI_STAT_STORE(mr, st.mr)
	AI_STAT_STORE(channel, st.channel)
	AI_STAT_STORE(cq, st.cq)
	AI_STAT_STORE(qp, st.qp)
	AI_STAT_STORE(srq, st.srq)
	AI_STAT_STORE(ah, st.ah)
	AI_STAT_STORE(dp_mrs, ai->dp_mrs)
	AI_STAT_STORE(events_dropped, st.events_dropped + ai->events_dropped)
#undef AI_STAT_STORE
}

static int
tel_app_stats(const char *cmd, const char *params, struct rte_tel_data *t)
{
	(void)cmd;
	(void)params;
	if (!atomic_load_explicit(&ai_stats.live, memory_order_acquire))
		return -ENODEV;
	rte_tel_data_start_dict(t);
#define AI_STAT_ADD(name) \
	rte_tel_data_add_dict_u64(t, #name, \
				  atomic_load_explicit(&ai_stats.name, memory_order_relaxed));
	AI_STAT_LIST(AI_STAT_ADD)
#undef AI_STAT_ADD
	return 0;
}

/* ---- running things on the owning lcore ---- */

/*
 * Run @p fn on @p w's lcore and return its result. Once the daemon is
 * stopping the workers are waited for and @p fn runs right here (nothing
 * else touches worker state then). A timed-out call did not run (worker.h),
 * so it is safe to send again: @p must (a destroy: the memory goes away
 * afterwards) retries for up to 30 s, any other call for up to 10 s, so an
 * lcore starved of CPU for a while (a loaded host) delays a verb instead of
 * failing it.
 */
static int
ai_call(struct app_iface *ai, struct worker *w, worker_fn fn, void *arg, bool must)
{
	struct daemon *d = ai->d;

	for (unsigned int i = 0;; i++) {
		int rc;

		if (daemon_stopping(d))
			daemon_stop_workers(d);
		if (!d->workers_running)
			return fn(w, arg);
		rc = worker_call(w, fn, arg, AI_CALL_TIMEOUT_MS);
		if (rc != -ETIMEDOUT && rc != -ENOBUFS && rc != -ENOMEM)
			return rc;
		if (i + 1 >= (must ? AI_CALL_RETRIES : AI_CALL_RETRIES_SETUP)) {
			if (must)
				fprintf(stderr, "roce-daemon: worker %u does not answer (%s); "
					"giving up on a teardown step\n", w->index, strerror(-rc));
			return rc;
		}
	}
}

/* ---- MRs: one table per lcore, keys from lib/ctl ---- */

struct mr_op {
	struct app_iface *ai;
	const struct ctl_mr_info *mr;
	bool reg;
};

static int
lcore_mr(struct worker *w, void *arg)
{
	struct mr_op *op = arg;
	const struct ctl_mr_info *mr = op->mr;
	struct mr_table *t = op->ai->mrs[w->index];
	int rc;

	if (op->reg && mr->local == NULL) /* fallback: copies into the client (mr.h) */
		return mr_reg_key_indirect(t, mr->lkey, mr->pd, mr->app_addr, mr->iova, mr->length,
					   mr->access & 0x3fu, mr->pid, mr->pidfd);
	if (op->reg)
		return mr_reg_key(t, mr->lkey, mr->pd, (uint64_t)(uintptr_t)mr->local, mr->iova,
				  mr->length, mr->access & 0x3fu);
	rc = mr_dereg(t, mr->lkey);
	return rc == -ENOENT ? 0 : rc;
}

static int
dp_mr_create(void *dp, struct ctl_mr_info *mr)
{
	struct app_iface *ai = dp;
	struct mr_op op = { ai, mr, true };
	unsigned int i;
	int rc = 0;

	if (mr->local == NULL) {
		/* Not shared with us (doc/verbs-shim.md): the lcores copy from/to
		 * the client's pages (process_vm_readv/writev), if we may. */
		rc = mr_indirect_probe(mr->pid, mr->pidfd, mr->app_addr);
		if (!ai->warned_unmapped)
			fprintf(stderr, "roce-daemon: pid %d registered memory the daemon cannot "
				"map (stack, file or read-only pages): %s\n", (int)mr->pid,
				rc == 0 ? "served by copies (slower)" : strerror(-rc));
		ai->warned_unmapped = true;
		if (rc != 0)
			return -rc;
	}
	for (i = 0; i < ai->d->n_workers; i++) {
		rc = ai_call(ai, ai->d->worker[i], lcore_mr, &op, false);
		if (rc != 0)
			break;
	}
	if (rc == 0) {
		ai->dp_mrs++;
		return 0;
	}
	op.reg = false;
	while (i-- > 0)
		ai_call(ai, ai->d->worker[i], lcore_mr, &op, true);
	return rc == -EEXIST || rc == -EINVAL ? EINVAL : rc == -ENOSPC ? ENOMEM : EAGAIN;
}

/* Returns only when no lcore can reach the region any more. */
static void
dp_mr_destroy(void *dp, const struct ctl_mr_info *mr)
{
	struct app_iface *ai = dp;
	struct mr_op op = { ai, mr, false };

	for (unsigned int i = 0; i < ai->d->n_workers; i++)
		ai_call(ai, ai->d->worker[i], lcore_mr, &op, true);
	ai->dp_mrs--;
}

/* ---- CQs and SRQs ---- */

static uint32_t
ai_handle(uint16_t gen, uint32_t num)
{
	return (uint32_t)gen << AI_HANDLE_BITS | num;
}

static int
dp_cq_create(void *dp, const struct ctl_cq_info *cq)
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
	c->x.arm = &to->ctrl->arm;
	c->x.cons_cache = 0;
	c->x.overflowed = false;
	return 0;
}

struct cq_resize_op {
	struct ai_cq *c;
	const struct ctl_cq_info *to, *from;
};

static int
lcore_cq_resize(struct worker *w, void *arg)
{
	struct cq_resize_op *op = arg;

	/*
	 * Control messages run before the engine's poll: first take in the work
	 * the application posted before it asked, so the size check counts the
	 * completions that work has already produced (a sleeping lcore would
	 * otherwise see them only after the move).
	 */
	if (w->engine->poll != NULL)
		w->engine->poll(w, rte_rdtsc());
	return cq_move(op->c, op->to, op->from);
}

static int
dp_cq_resize(void *dp, const struct ctl_cq_info *cq, const struct ctl_cq_info *old)
{
	struct app_iface *ai = dp;
	struct ai_cq *c = &ai->cq[old->cqn];
	struct cq_resize_op op = { c, cq, old };
	int rc;

	/* the producer moves the CQEs: the owner lcore, or us while no QP uses the CQ */
	rc = c->nqps ? ai_call(ai, ai->d->worker[c->lcore], lcore_cq_resize, &op, false)
		     : cq_move(c, cq, old);
	return rc == 0 ? 0 : rc == -EINVAL ? EINVAL : EAGAIN;
}

static void
dp_cq_destroy(void *dp, const struct ctl_cq_info *cq)
{
	struct app_iface *ai = dp;
	struct ai_cq *c = &ai->cq[cq->cqn];

	/* lib/ctl destroys a CQ only when no QP uses it: no lcore holds it */
	c->info = NULL;
	c->gen = (uint16_t)((c->gen + 1) & 0xfff);
}

static int
dp_srq_create(void *dp, const struct ctl_srq_info *srq)
{
	struct app_iface *ai = dp;
	struct ai_srq *s;

	if (srq->srqn == 0 || srq->srqn > ai->max_srq || srq->srqn > AI_HANDLE_MASK)
		return EINVAL;
	s = &ai->srq[srq->srqn - 1];
	s->info = srq;
	s->gen = (uint16_t)((s->gen + 1) & 0xfff);
	s->nqps = 0;
	s->lcore = AI_UNBOUND;
	s->x = (struct xport_srq){
		.ring = srq->ring.ring, .size = srq->ring.entries,
		.handle = ai_handle(s->gen, srq->srqn),
		.limit = srq->srq_limit, .limit_armed = srq->srq_limit != 0,
	};
	return 0;
}

struct srq_limit_op {
	struct xport_srq *x;
	uint32_t limit;
};

static int
lcore_srq_limit(struct worker *w, void *arg)
{
	struct srq_limit_op *op = arg;

	(void)w;
	op->x->limit = op->limit;
	op->x->limit_armed = op->limit != 0;
	return 0;
}

static int
dp_srq_modify(void *dp, const struct ctl_srq_info *srq)
{
	struct app_iface *ai = dp;
	struct ai_srq *s = &ai->srq[srq->srqn - 1];
	struct srq_limit_op op = { &s->x, srq->srq_limit };
	int rc = s->nqps ? ai_call(ai, ai->d->worker[s->lcore], lcore_srq_limit, &op, false)
			 : lcore_srq_limit(NULL, &op);

	return rc == 0 ? 0 : EAGAIN;
}

static void
dp_srq_destroy(void *dp, const struct ctl_srq_info *srq)
{
	struct app_iface *ai = dp;
	struct ai_srq *s = &ai->srq[srq->srqn - 1];

	s->info = NULL;
	s->gen = (uint16_t)((s->gen + 1) & 0xfff);
}

/* Bind CQ @p c to @p lcore for one more QP reference; the first reference sets the engine view up. */
static int
cq_bind(struct ai_cq *c, uint32_t lcore)
{
	if (c->nqps > 0)
		return c->lcore == lcore ? (c->nqps++, 0) : -EINVAL;
	c->lcore = lcore;
	c->nqps = 1;
	c->x = (struct xport_cq){
		.ring = c->info->ring.ring, .size = c->info->ring.entries, .arm = &c->info->ctrl->arm,
		.handle = ai_handle(c->gen, c->info->cqn),
	};
	return 0;
}

static int
srq_bind(struct ai_srq *s, uint32_t lcore)
{
	if (s->nqps > 0)
		return s->lcore == lcore ? (s->nqps++, 0) : -EINVAL;
	s->lcore = lcore;
	s->nqps = 1;
	return 0;
}

/* ---- address vectors ---- */

static bool
gid_is_v4mapped(const uint8_t g[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g, pfx, sizeof(pfx)) == 0;
}

/* The MAC of @p dgid from port @p port, waiting up to the resolution bound. @return 0 or errno. */
static int
ai_resolve_mac(struct app_iface *ai, uint16_t port, const uint8_t dgid[16], uint8_t mac[6])
{
	int rc = neigh_resolve(ai->d, -1, port, dgid, mac);

	if (rc == -EAGAIN)
		rc = neigh_resolve_wait(ai->d, port, dgid, mac, ai->resolve_ms);
	/* Linux (ib_resolve_eth_dmac): an unresolvable neighbour is ETIMEDOUT */
	return rc == 0 ? 0 : ETIMEDOUT;
}

/* lib/qp's resolve hook (qp_sem_device.resolve): modify to RTR waits here. */
static int
ai_resolve(void *ctx, uint8_t port_num, const struct ibv_global_route *grh,
	   const struct qp_sem_gid *sgid, uint8_t *hop_limit)
{
	struct app_iface *ai = ctx;
	int port = daemon_find_gid(ai->d, sgid->gid.raw);
	uint8_t mac[6];

	(void)port_num;
	(void)hop_limit;
	return ai_resolve_mac(ai, (uint16_t)(port < 0 ? 0 : port), grh->dgid.raw, mac);
}

static int
dp_ah_create(void *dp, struct ctl_ah_info *ah)
{
	struct app_iface *ai = dp;

	if (ah->dev >= ai->d->n_ports)
		return EINVAL;
	return ai_resolve_mac(ai, (uint16_t)ah->dev, ah->av.dgid, ah->av.dmac);
}

/* ---- QPs ---- */

static struct ai_qp *
ai_qp_of(struct app_iface *ai, uint32_t qpn)
{
	uint32_t i = qpn - AI_QPN_BASE;

	return i < ai->max_qp ? &ai->qp[i] : NULL;
}

static uint8_t
engine_state(enum ibv_qp_state s)
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

/*
 * The engine configuration of QP @p q for the attributes @p sem.
 * @return 0, or ETIMEDOUT when the path's neighbour does not resolve
 */
static int
qp_cfg(struct app_iface *ai, struct ai_qp *q, const struct qp_sem *sem, struct xport_cfg *c)
{
	const struct ctl_qp_info *info = q->info;
	const struct ibv_qp_attr *a = &sem->attr;
	const struct ctl_port_cfg *pc = &ai->cfg.dev[info->dev].port[0];
	enum ibv_qp_state st = a->qp_state;
	uint8_t mtu = a->path_mtu ? (uint8_t)a->path_mtu : (uint8_t)pc->attr.active_mtu;

	c->type = (uint8_t)info->qp_type;
	c->qpn = info->qpn;
	c->pd = info->pd;
	c->pkey = pc->pkey[a->pkey_index < CTL_PKEY_TBL_LEN ? a->pkey_index : 0];
	c->qkey = a->qkey;
	c->dest_qpn = a->dest_qp_num & 0xffffff;
	c->path_mtu = info->qp_type == IBV_QPT_UD ? (uint8_t)pc->attr.active_mtu : mtu;
	c->sq_psn = a->sq_psn & 0xffffff;
	c->rq_psn = a->rq_psn & 0xffffff;
	c->timeout = a->timeout;
	c->retry_cnt = a->retry_cnt;
	c->rnr_retry = a->rnr_retry;
	c->min_rnr_timer = a->min_rnr_timer;
	c->max_rd_atomic = a->max_rd_atomic > XPORT_MAX_RD_ATOMIC ? XPORT_MAX_RD_ATOMIC
								    : a->max_rd_atomic;
	c->max_dest_rd_atomic = a->max_dest_rd_atomic == 0 ? 1
				: a->max_dest_rd_atomic > XPORT_MAX_RD_ATOMIC ? XPORT_MAX_RD_ATOMIC
									       : a->max_dest_rd_atomic;
	c->access_flags = a->qp_access_flags &
			  (MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC);
	c->sq_sig_all = sem->init.sq_sig_all != 0;
	c->rate_limit_kbps = a->rate_limit;
	c->max_unacked = ai->d->cfg.daemon.max_inflight_packets;
	c->min_window = ai->d->cfg.daemon.min_inflight_packets;
	memset(&c->av, 0, sizeof(c->av));
	if (info->qp_type != IBV_QPT_UD && (st == IBV_QPS_RTR || st == IBV_QPS_RTS ||
					    st == IBV_QPS_SQD || st == IBV_QPS_SQE)) {
		const struct ibv_global_route *g = &a->ah_attr.grh;
		uint8_t si = g->sgid_index < CTL_GID_TBL_LEN ? g->sgid_index : 0;
		int rc;

		memcpy(c->av.dgid, g->dgid.raw, 16);
		memcpy(c->av.sgid, pc->gid[si], 16);
		memcpy(c->av.smac, pc->mac, 6);
		c->av.ipv6 = !gid_is_v4mapped(c->av.sgid);
		c->av.flow_label = g->flow_label & 0xfffff;
		c->av.traffic_class = g->traffic_class;
		c->av.hop_limit = g->hop_limit;
		c->av.sl = a->ah_attr.sl;
		c->av.port_num = 1;
		/* the path resolved at RTR stays: RTR -> RTS never waits for ARP */
		static const uint8_t zero[6];
		if (memcmp(q->cfg.av.dgid, c->av.dgid, 16) == 0 &&
		    memcmp(q->cfg.av.dmac, zero, 6) != 0) {
			memcpy(c->av.dmac, q->cfg.av.dmac, 6);
			return 0;
		}
		rc = ai_resolve_mac(ai, q->port, c->av.dgid, c->av.dmac);
		if (rc != 0)
			return rc;
	}
	return 0;
}

struct qp_op {
	struct app_iface *ai;
	struct ai_qp *q;
	const struct xport_cfg *cfg;
	int state;
	uint32_t cookie; /* modify: the QP's events carry it from then on */
};

static int
lcore_qp_create(struct worker *w, void *arg)
{
	struct qp_op *op = arg;

	return engine_xport_qp_create(w, op->cfg, op->q->port, op->q->cookie);
}

static int
lcore_qp_modify(struct worker *w, void *arg)
{
	struct qp_op *op = arg;

	return engine_xport_qp_modify(w, op->cfg->qpn, op->cfg, op->state, op->cookie);
}

static int
lcore_qp_destroy(struct worker *w, void *arg)
{
	struct qp_op *op = arg;

	return engine_xport_qp_destroy(w, op->q->info->qpn);
}

static struct worker *
qp_worker(struct app_iface *ai, uint32_t qpn)
{
	return ai->d->worker[worker_of_qpn(qpn, ai->d->n_workers)];
}

/* Drop the QP's references on its CQs/SRQ (the engine QP is gone). */
static void
qp_unbind(struct app_iface *ai, const struct ctl_qp_info *info)
{
	ai->cq[info->send_cqn].nqps--;
	ai->cq[info->recv_cqn].nqps--;
	if (info->srqn != UINT32_MAX)
		ai->srq[info->srqn - 1].nqps--;
}

static int
dp_qp_create(void *dp, const struct ctl_qp_info *info)
{
	struct app_iface *ai = dp;
	struct ai_qp *q = ai_qp_of(ai, info->qpn);
	uint32_t lcore = worker_of_qpn(info->qpn, ai->d->n_workers);
	struct ai_cq *scq, *rcq;
	struct ai_srq *srq = NULL;
	struct qp_op op;
	int rc;

	if (q == NULL || info->dev >= ai->d->n_ports || info->send_cqn >= ai->max_cq ||
	    info->recv_cqn >= ai->max_cq ||
	    (info->srqn != UINT32_MAX && (info->srqn == 0 || info->srqn > ai->max_srq)))
		return EINVAL;
	scq = &ai->cq[info->send_cqn];
	rcq = &ai->cq[info->recv_cqn];
	if (info->srqn != UINT32_MAX)
		srq = &ai->srq[info->srqn - 1];
	/* lib/ctl placed the QP with its CQs/SRQ: one producer per CQ ring */
	if (cq_bind(scq, lcore) != 0)
		return EINVAL;
	if (cq_bind(rcq, lcore) != 0) {
		scq->nqps--;
		return EINVAL;
	}
	if (srq != NULL && srq_bind(srq, lcore) != 0) {
		scq->nqps--;
		rcq->nqps--;
		return EINVAL;
	}
	memset(q, 0, sizeof(*q));
	q->info = info;
	q->cookie = ++ai->next_cookie;
	q->port = (uint16_t)info->dev;
	q->cfg = (struct xport_cfg){
		.sq = info->sq.ring, .sq_size = info->sq.entries,
		.rq = srq ? NULL : info->rq.ring, .rq_size = srq ? 0 : info->rq.entries,
		.srq = srq ? &srq->x : NULL,
		.send_cq = &scq->x, .recv_cq = &rcq->x,
		.mrs = ai->mrs[lcore],
	};
	qp_cfg(ai, q, info->sem, &q->cfg); /* RESET: no path to resolve */
	op = (struct qp_op){ ai, q, &q->cfg, -1, q->cookie };
	rc = ai_call(ai, ai->d->worker[lcore], lcore_qp_create, &op, false);
	if (rc != 0) {
		qp_unbind(ai, info);
		q->info = NULL;
		return rc == -EINVAL ? EINVAL : rc == -EEXIST ? EEXIST : ENOMEM;
	}
	return 0;
}

static int
dp_qp_modify(void *dp, const struct ctl_qp_info *info, const struct qp_sem *next,
	     const struct qp_sem_effects *fx)
{
	struct app_iface *ai = dp;
	struct ai_qp *q = ai_qp_of(ai, info->qpn);
	struct xport_cfg c;
	struct qp_op op;
	int rc, state = -1;

	if (q == NULL || q->info != info)
		return EINVAL;
	c = q->cfg;
	rc = qp_cfg(ai, q, next, &c);
	if (rc != 0)
		return rc;
	if (fx->flags & QP_SEM_FX_RESET)
		state = XPORT_STATE_RESET;
	else if (engine_state(fx->new_state) != engine_state(fx->old_state))
		state = engine_state(fx->new_state);
	/*
	 * A reset starts a new life of the QP: its events get a new cookie, so
	 * an error the engine raised before the reset (still on the event ring)
	 * is dropped by qp_event() rather than moving the reset QP to ERR.
	 */
	op = (struct qp_op){ ai, q, &c, state,
			     state == XPORT_STATE_RESET ? ai->next_cookie + 1 : q->cookie };
	rc = ai_call(ai, qp_worker(ai, info->qpn), lcore_qp_modify, &op, false);
	if (rc != 0)
		return rc == -EINVAL || rc == -ENOMEM ? -rc : EAGAIN;
	q->cfg = c;
	if (state == XPORT_STATE_RESET) {
		q->cookie = ++ai->next_cookie;
		q->error_reported = false;
	}
	return 0;
}

static void
dp_qp_destroy(void *dp, const struct ctl_qp_info *info)
{
	struct app_iface *ai = dp;
	struct ai_qp *q = ai_qp_of(ai, info->qpn);
	struct qp_op op = { ai, q, NULL, -1, 0 };

	if (q == NULL || q->info != info)
		return;
	ai_call(ai, qp_worker(ai, info->qpn), lcore_qp_destroy, &op, true);
	qp_unbind(ai, info);
	q->info = NULL;
}

static const struct ctl_dataplane_ops ai_ops = {
	.mr_create = dp_mr_create,
	.mr_destroy = dp_mr_destroy,
	.cq_create = dp_cq_create,
	.cq_resize = dp_cq_resize,
	.cq_destroy = dp_cq_destroy,
	.srq_create = dp_srq_create,
	.srq_modify = dp_srq_modify,
	.srq_destroy = dp_srq_destroy,
	.ah_create = dp_ah_create,
	.qp_create = dp_qp_create,
	.qp_modify = dp_qp_modify,
	.qp_destroy = dp_qp_destroy,
};

/* ---- engine events -> applications ---- */

/*
 * d->on_event: called from control_poll(), which also runs inside a request
 * (address resolution waits there), so events are queued and handled
 * between requests, never in the middle of one.
 */
static void
ai_on_event(struct daemon *d, const struct worker_event *ev, void *arg)
{
	struct app_iface *ai = arg;

	(void)d;
	if (ai->evq_n == AI_EVQ) {
		ai->events_dropped++;
		return;
	}
	ai->evq[(ai->evq_head + ai->evq_n++) % AI_EVQ] = *ev;
}

static struct ai_cq *
cq_of_handle(struct app_iface *ai, uint32_t h)
{
	uint32_t n = h & AI_HANDLE_MASK;

	if (n >= ai->max_cq || ai->cq[n].info == NULL || ai->cq[n].gen != h >> AI_HANDLE_BITS)
		return NULL; /* destroyed meanwhile */
	return &ai->cq[n];
}

static struct ai_srq *
srq_of_handle(struct app_iface *ai, uint32_t h)
{
	uint32_t n = h & AI_HANDLE_MASK;

	if (n == 0 || n > ai->max_srq || ai->srq[n - 1].info == NULL ||
	    ai->srq[n - 1].gen != h >> AI_HANDLE_BITS)
		return NULL;
	return &ai->srq[n - 1];
}

static void
qp_event(struct app_iface *ai, const struct worker_event *ev)
{
	struct ai_qp *q = ai_qp_of(ai, ev->qpn);

	if (q == NULL || q->info == NULL || q->cookie != ev->cookie)
		return; /* raised before a reset, or by a QP destroyed meanwhile
			 * (its QPN may be someone else's now) */
	if (ev->type == XPORT_EV_QP_ERROR) {
		if (ev->code == XPORT_ERR_MODIFY || q->error_reported)
			return; /* the application asked for ERR / the async event did it */
		if (ev->code == XPORT_ERR_CQ_OVERFLOW)
			ctl_qp_event(ai->ctl, ev->qpn, CTL_QP_EV_FATAL, IBV_EVENT_QP_FATAL);
		else
			ctl_qp_event(ai->ctl, ev->qpn, CTL_QP_EV_ERROR, 0);
		q->error_reported = true;
		return;
	}
	switch (ev->code) {
	case ASYNC_QP_FATAL:
	case ASYNC_QP_REQ_ERR:
	case ASYNC_QP_ACCESS_ERR:
		ctl_qp_event(ai->ctl, ev->qpn, CTL_QP_EV_FATAL, ev->code);
		q->error_reported = true;
		break;
	case ASYNC_COMM_EST:
		ctl_qp_event(ai->ctl, ev->qpn, CTL_QP_EV_COMM_EST, 0);
		break;
	case ASYNC_SQ_DRAINED:
		ctl_qp_event(ai->ctl, ev->qpn, CTL_QP_EV_SQ_DRAINED, 0);
		break;
	default:
		/* LAST_WQE_REACHED: lib/qp raised it with the move to ERR */
		break;
	}
}

static void
ai_event(struct app_iface *ai, const struct worker_event *ev)
{
	struct ai_cq *c;
	struct ai_srq *s;

	if (ev->qpn != UINT32_MAX) {
		qp_event(ai, ev);
		return;
	}
	if (ev->type == XPORT_EV_CQ_NOTIFY) {
		c = cq_of_handle(ai, ev->handle);
		if (c != NULL)
			ipc_cq_signal(c->info->ctrl, c->info->event_fd);
		return;
	}
	if (ev->type != XPORT_EV_ASYNC)
		return;
	if (ev->code == ASYNC_CQ_ERR) {
		c = cq_of_handle(ai, ev->handle);
		if (c != NULL)
			ctl_raise_event(ai->ctl, IPC_OBJ_CQ, c->info->cqn, IBV_EVENT_CQ_ERR);
	} else if (ev->code == ASYNC_SRQ_LIMIT_REACHED || ev->code == ASYNC_SRQ_ERR) {
		s = srq_of_handle(ai, ev->handle);
		if (s != NULL)
			ctl_raise_event(ai->ctl, IPC_OBJ_SRQ, s->info->srqn, ev->code);
	}
}

static unsigned int
ai_drain_events(struct app_iface *ai)
{
	unsigned int n = 0;

	while (ai->evq_n > 0) {
		struct worker_event ev = ai->evq[ai->evq_head];

		ai->evq_head = (ai->evq_head + 1) % AI_EVQ;
		ai->evq_n--;
		ai_event(ai, &ev);
		n++;
	}
	return n;
}

/* Control-loop hook: engine events, then the clients' requests. */
static int
ai_poll(void *arg, int timeout_ms)
{
	struct app_iface *ai = arg;
	int work = (int)ai_drain_events(ai);
	int n = ctl_server_poll(ai->srv, work ? 0 : timeout_ms);

	if (n > 0)
		work += n;
	work += (int)ai_drain_events(ai);
	stats_publish(ai);
	return work;
}

/* ---- set-up ---- */

/* One device per port, as lib/ctl describes devices. */
static void
device_cfg(const struct daemon *d, unsigned int p, struct ctl_device_cfg *dev)
{
	const struct port *port = &d->port[p];
	struct ctl_port_cfg *pc = &dev->port[0];
	struct ipc_device_attr *a = &dev->attr;
	uint32_t speed = 0;
	bool up = port_link(port, &speed);

	memset(dev, 0, sizeof(*dev));
	snprintf(dev->name, sizeof(dev->name), "dpdk_roce%u", p);
	gid_device_attr(&d->cfg, port->mac, 1, a);
	/* what one WQE and the engine can hold */
	if (a->max_sge > WQE_MAX_SGE)
		a->max_sge = WQE_MAX_SGE;
	if (a->max_sge_rd > WQE_MAX_SGE)
		a->max_sge_rd = WQE_MAX_SGE;
	if (a->max_srq_sge > WQE_MAX_SGE)
		a->max_srq_sge = WQE_MAX_SGE;
	if (a->max_inline_data > WQE_MAX_INLINE)
		a->max_inline_data = WQE_MAX_INLINE;
	if (a->max_qp_rd_atom > XPORT_MAX_RD_ATOMIC)
		a->max_qp_rd_atom = XPORT_MAX_RD_ATOMIC;
	if (a->max_qp_init_rd_atom > XPORT_MAX_RD_ATOMIC)
		a->max_qp_init_rd_atom = XPORT_MAX_RD_ATOMIC;
	a->max_ah = AI_MAX_AH;
	dev->num_comp_vectors = 1;
	gid_port_attr(port->mtu, up, speed, &pc->attr);
	for (unsigned int i = 0; i < port->gids.n && i < CTL_GID_TBL_LEN; i++) {
		if (!port->gids.entry[i].valid)
			continue;
		memcpy(pc->gid[i], port->gids.entry[i].gid, 16);
		pc->gid_type[i] = IBV_GID_TYPE_ROCE_V2;
		pc->gid_valid[i] = true;
	}
	pc->pkey[0] = 0xffff;
	memcpy(pc->mac, port->mac, 6);
}

/* mkdir the directory of the socket (/run/roce-dpdk) if it is missing. */
static void
make_parent_dir(const char *path)
{
	char dir[CONFIG_PATH_LEN];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		fprintf(stderr, "roce-daemon: mkdir %s: %s\n", dir, strerror(errno));
}

static void
ai_free(struct app_iface *ai)
{
	for (unsigned int i = 0; i < WORKER_MAX; i++)
		mr_table_destroy(ai->mrs[i]);
	free(ai->cq);
	free(ai->srq);
	free(ai->qp);
	free(ai);
}

struct app_iface *
app_iface_create(struct daemon *d, char *err, size_t errlen)
{
	const struct config_daemon *cd = &d->cfg.daemon;
	struct app_iface *ai = calloc(1, sizeof(*ai));
	struct ctl_config *cfg;

	if (ai == NULL) {
		snprintf(err, errlen, "application interface: out of memory");
		return NULL;
	}
	ai->d = d;
	cfg = &ai->cfg;
	cfg->ndevices = d->n_ports < CTL_MAX_DEVICES ? d->n_ports : CTL_MAX_DEVICES;
	for (unsigned int p = 0; p < cfg->ndevices; p++)
		device_cfg(d, p, &cfg->dev[p]);
	cfg->limits = (struct ctl_limits){
		.max_conns = AI_MAX_CONNS,
		.max_pd = cd->max_pds,
		.max_mr = cd->max_mrs,
		.max_channels = cd->max_cqs,
		.max_cq = cd->max_cqs,
		.max_qp = cd->max_qps,
		.max_srq = cd->max_srqs ? cd->max_srqs : 1,
		.max_ah = AI_MAX_AH,
		.qpn_base = AI_QPN_BASE,
		.n_lcores = d->n_workers,
	};
	cfg->dp_ops = &ai_ops;
	cfg->dp = ai;
	cfg->resolve = ai_resolve;
	cfg->resolve_ctx = ai;
	ai->max_cq = cfg->limits.max_cq;
	ai->max_srq = cfg->limits.max_srq;
	ai->max_qp = cfg->limits.max_qp;
	/* ARP/ND give up after neigh_retries probes: wait that long, plus one interval */
	ai->resolve_ms = cd->neigh_retry_ms * (cd->neigh_retries + 1);
	if (ai->resolve_ms > 10000)
		ai->resolve_ms = 10000;
	ai->cq = calloc(ai->max_cq, sizeof(*ai->cq));
	ai->srq = calloc(ai->max_srq, sizeof(*ai->srq));
	ai->qp = calloc(ai->max_qp, sizeof(*ai->qp));
	if (ai->cq == NULL || ai->srq == NULL || ai->qp == NULL) {
		snprintf(err, errlen, "application interface: out of memory");
		goto fail;
	}
	for (unsigned int w = 0; w < d->n_workers; w++) {
		/* keys are (ctl MR index + 1) << 8 | gen: slots 1..max_mr */
		ai->mrs[w] = mr_table_create(cd->max_mrs + 1);
		if (ai->mrs[w] == NULL) {
			snprintf(err, errlen, "no memory for %u MRs", cd->max_mrs);
			goto fail;
		}
	}
	ai->ctl = ctl_create(cfg);
	if (ai->ctl == NULL) {
		snprintf(err, errlen, "control plane: %s", strerror(errno));
		goto fail;
	}
	make_parent_dir(cd->socket_path);
	ai->srv = ctl_server_create(ai->ctl, cd->socket_path);
	if (ai->srv == NULL) {
		snprintf(err, errlen, "[daemon] socket = %s: %s", cd->socket_path, strerror(errno));
		ctl_destroy(ai->ctl);
		goto fail;
	}
	if (daemon_add_hook(d, ai_poll, ai) != 0) {
		snprintf(err, errlen, "no room for the application interface hook");
		ctl_server_destroy(ai->srv);
		ctl_destroy(ai->ctl);
		goto fail;
	}
	d->on_event = ai_on_event;
	d->on_event_arg = ai;
	stats_publish(ai);
	if (cd->telemetry && !ai_stats_registered && rte_telemetry_register_cmd("/roce/app/stats", tel_app_stats,
					   "Application objects (connections, PDs, MRs, CQs, QPs...) "
					   "and MRs on the lcores. No parameters") == 0)
		ai_stats_registered = true;
	atomic_store_explicit(&ai_stats.live, true, memory_order_release);
	return ai;
fail:
	ai_free(ai);
	return NULL;
}

void
app_iface_destroy(struct app_iface *ai)
{
	struct daemon *d;

	if (ai == NULL)
		return;
	d = ai->d;
	ai_drain_events(ai);
	/* every client: DEVICE_FATAL, then its objects (ctl_server_destroy) */
	ctl_server_destroy(ai->srv);
	ctl_destroy(ai->ctl);
	atomic_store_explicit(&ai_stats.live, false, memory_order_release);
	for (unsigned int h = 0; h < d->n_hooks; h++) {
		if (d->hook[h].arg == ai) {
			d->hook[h] = d->hook[--d->n_hooks];
			break;
		}
	}
	d->on_event = NULL;
	d->on_event_arg = NULL;
	ai_free(ai);
}
