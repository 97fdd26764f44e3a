/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl on the dataplane (app_iface.h): the control plane's objects
 * carried out on the worker lcores, engine events back to the applications.
 *
 * Nothing here waits. A dataplane callback of lib/ctl that needs an lcore
 * starts an operation (struct ai_op): it sends control messages by value
 * (ctl_msg.h) to the owning lcore, or to every lcore for an MR, defers its
 * answer (ctl_dp_defer()) and returns. The control loop drains the lcores'
 * answers (ai_answers()) and, once an operation has all of them, hands
 * the result to lib/ctl (ctl_dp_done()), which answers the client. An
 * address resolution is an operation too: it waits for the neighbour table
 * (ai_resolve_tick()), not in a loop. Meanwhile every other client is served.
 *
 * Ownership, object by object (doc/architecture.md section 15):
 *  - struct ai_qp/ai_cq/ai_srq/ai_op bookkeeping: the control thread;
 *  - ai_cq.x / ai_srq.x (the engine's view of a CQ/SRQ): the lcore the CQ
 *    or SRQ is bound to while a QP uses it (nqps > 0), else the control
 *    thread; the hand-over is a control message (its ring is the
 *    release/acquire edge);
 *  - mrs[w]: worker w's lcore (written only by MR_REG/MR_DEREG messages), or
 *    the control thread once the workers stopped.
 */
#include "app_iface.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <rte_telemetry.h>

#include "ctl.h"
#include "config.h"
#include "ctl_msg.h"
#include "daemon.h"
#include "engine_xport.h"
#include "gid.h"
#include "gsi.h"
#include "mr.h"
#include "neigh.h"
#include "xport.h"

#define AI_HANDLE_BITS 20u         /* engine CQ/SRQ handle: gen << 20 | number */
#define AI_HANDLE_MASK ((1u << AI_HANDLE_BITS) - 1)
#define AI_MAX_CONNS 256u
#define AI_MAX_AH 4096u
#define AI_QPN_BASE 0x11u          /* worker QP tables hold qpn < max_qps + 17 */
#define AI_UNBOUND UINT32_MAX
/* operations in flight: one request per connection, teardown steps, detached flushes */
#define AI_MAX_OPS (4u * AI_MAX_CONNS)
#define AI_OP_NONE UINT32_MAX      /* ctl_msg.op of a message nobody waits for */
/*
 * Messages per lcore waiting for room on its ring. Requests and teardown
 * steps have at most one message per lcore in flight each (2 x AI_MAX_CONNS,
 * ring included); the rest is room for messages nobody waits for (event
 * flushes, MRs told to lcores without the PD's QPs). 216 B each.
 */
#define AI_BACKLOG 2048u
/*
 * Backlog slots only releases (QP_DESTROY, MR_DEREG) may take: an lcore that
 * is not told to let go of a QP or an MR would keep using memory lib/ctl
 * frees. A release that still finds no room fails closed: lib/ctl
 * quarantines the object (ctl_dp_destroy_failed(), destroys_held).
 */
#define AI_RELEASE_RESERVE 1024u
#define AI_ANSWER_BURST 32u
#define AI_BRISK_US 2000u          /* after a send, the loop looks for answers this often... */
#define AI_BRISK_SLEEP_US 20u      /* ...pausing this long between looks */

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

/* What an operation is, and so what its answers mean. */
enum ai_op_kind {
	AI_OP_FREE,
	AI_OP_MR_REG,       /* MR_REG to every lcore */
	AI_OP_MR_UNDO,      /* MR_DEREG to the lcores that took a refused MR_REG */
	AI_OP_MR_DEREG,     /* MR_DEREG to every lcore */
	AI_OP_CQ_RESIZE,
	AI_OP_SRQ_LIMIT,
	AI_OP_AH_RESOLVE,   /* waits for the neighbour table */
	AI_OP_QP_RESOLVE,   /* a modify waiting for the neighbour table, then QP_MODIFY */
	AI_OP_QP_CREATE,
	AI_OP_QP_MODIFY,
	AI_OP_QP_DESTROY,
};

/*
 * One dataplane operation in flight: lib/ctl's token, the answers it still
 * expects and what to do with them. Indexed by ctl_msg.op.
 */
struct ai_op {
	uint8_t kind;             /* enum ai_op_kind */
	bool in_call;             /* its dataplane callback has not returned yet */
	bool finished;            /* ... and it finished already (workers stopped): `result` */
	int result;               /* positive errno for lib/ctl */
	uint64_t token;           /* ctl_dp_defer(); CTL_DP_TOKEN_NONE: nobody waits */
	uint32_t waiting;         /* answers still expected */
	uint32_t ok_mask;         /* MR_REG: the lcores that registered it */
	bool held;                /* a release message could not be sent: an lcore may hold the object */
	int rc;                   /* first error among the answers (-errno) */
	uint32_t qpn;             /* QP operations */
	const struct ctl_mr_info *mr;
	struct ctl_ah_info *ah;   /* AH_RESOLVE: lib/ctl's record (held busy until the answer) */
	struct xport_cfg cfg;     /* QP_MODIFY: the engine's configuration once taken */
	int state;                /* QP_MODIFY: engine state, or -1 */
	uint32_t epoch;           /* QP_MODIFY: the QP's event epoch once taken */
	uint16_t port;            /* resolution: daemon port, destination, where the MAC goes */
	uint8_t dgid[16];
	uint8_t *mac;
	uint64_t deadline;        /* resolution: TSC */
	bool resolving;           /* counted in ops_resolving: ai_resolve_tick() looks at it */
	uint32_t next;            /* free list */
};

/* Messages for one lcore that found its ring full (or too many outstanding). */
struct ai_backlog {
	struct ctl_msg msg[AI_BACKLOG];
	uint32_t head, n;
	uint32_t outstanding;     /* sent, answer not drained yet: <= WORKER_CTL_RING */
};

struct app_iface {
	struct daemon *d;
	struct ctl *ctl;
	struct ctl_server *srv;
	struct ctl_config cfg;
	struct mr_table *mrs[WORKER_MAX];
	struct ah_table *ahs;           /* UD address vectors: written here, read by every lcore */
	struct ai_cq *cq;
	struct ai_srq *srq;
	struct ai_qp *qp;
	uint32_t max_cq, max_srq, max_qp, max_pd;
	uint32_t *pd_qps;               /* [pd * n_workers + lcore]: QPs of the PD on the lcore */
	uint32_t next_cookie;
	uint32_t dp_mrs;                /* MRs registered on the lcores */
	unsigned int resolve_ms;        /* bound of one address resolution */
	bool warned_unmapped;
	struct ai_op *ops;              /* AI_MAX_OPS */
	uint32_t op_free;               /* free list head */
	uint32_t ops_inflight;
	uint32_t ops_resolving;         /* AI_OP_*_RESOLVE: ai_resolve_tick() has work */
	struct ai_backlog *bl[WORKER_MAX];
	uint64_t brisk_until;           /* TSC: answers are expected soon */
	uint64_t ctl_backlogged;        /* messages that waited for ring room */
	uint64_t ctl_refused;           /* operations refused: backlog full (EAGAIN) */
	uint64_t ctl_told_errors;       /* refusals of messages nobody waited for */
	_Atomic uint32_t stall_req[WORKER_MAX]; /* app_iface_stall_worker(): ms, any thread */
	uint64_t events_dropped;
	uint64_t cq_signals_dropped;    /* channel bytes lost: the application's channel was full */
	uint64_t destroys_held;         /* destroys an lcore might not have done: quarantined */
	struct gsi *gsi;                /* QP1: the CM's MADs (gsi.h) */
	struct ctl_cm_ops cm_ops;       /* lib/ctl's rdma_cm reaches the wire through these */
};

/* ---- telemetry: a snapshot the control thread publishes ---- */

#define AI_STAT_LIST(X) \
	X(conns) X(contexts) X(pd) X(mr) X(channel) X(cq) X(qp) X(srq) X(ah) X(dp_mrs) \
	X(events_dropped) X(ops_inflight) X(ctl_backlogged) X(ctl_refused) X(ctl_told_errors) \
	X(cq_signals_dropped) X(events_coalesced) X(destroys_held) X(quarantined) \
	X(quarantined_bytes) X(qkey_refused) X(quota_refused) X(conns_refused)

static struct {
#define AI_STAT_FIELD(name) atomic_uint_fast64_t name;
	AI_STAT_LIST(AI_STAT_FIELD)
#undef AI_STAT_FIELD
	atomic_bool live;
} ai_stats;
static bool ai_stats_registered; /* commands cannot be unregistered: once per process */

/*
 * rdma_cm counters (/roce/cm): the GSI's (gsi.h), the rdma_cm layer's
 * (lib/ctl CTL_CM_CTR_LIST) and the CM agent's (lib/cm CM_CTR_LIST, "cm_"
 * + name), snapshot by the control thread like ai_stats.
 */
static struct {
	atomic_uint_fast64_t gsi[GSI_CTR_COUNT];
	atomic_uint_fast64_t rdma_cm[CTL_CM_CTR_COUNT];
	atomic_uint_fast64_t cm[CM_CTR_COUNT];
	atomic_uint_fast64_t ids, channels;
} ai_cm_stats;
static bool ai_cm_stats_registered;

/* Engine events the workers could not pass on (worker_event_post()). */
static uint64_t
ai_events_lost(const struct app_iface *ai)
{
	uint64_t n = 0;

	for (unsigned int wi = 0; wi < ai->d->n_workers; wi++)
		n += __atomic_load_n(&ai->d->worker[wi]->events_lost, __ATOMIC_RELAXED);
	return n;
}

/* Engine events dropped as repeats of one still waiting in a worker's spill. */
static uint64_t
ai_events_coalesced(const struct app_iface *ai)
{
	uint64_t n = 0;

	for (unsigned int wi = 0; wi < ai->d->n_workers; wi++)
		n += __atomic_load_n(&ai->d->worker[wi]->events_coalesced, __ATOMIC_RELAXED);
	return n;
}

static void
cm_stats_publish(struct app_iface *ai)
{
	const uint64_t *g = ai->gsi ? gsi_counters(ai->gsi) : NULL;
	const uint64_t *r = ctl_cm_stats(ai->ctl);
	const uint64_t *c = ctl_cm_counters(ai->ctl);
	uint32_t ids = 0, chs = 0;

	for (unsigned int i = 0; g != NULL && i < GSI_CTR_COUNT; i++)
		atomic_store_explicit(&ai_cm_stats.gsi[i], g[i], memory_order_relaxed);
	for (unsigned int i = 0; r != NULL && i < CTL_CM_CTR_COUNT; i++)
		atomic_store_explicit(&ai_cm_stats.rdma_cm[i], r[i], memory_order_relaxed);
	for (unsigned int i = 0; c != NULL && i < CM_CTR_COUNT; i++)
		atomic_store_explicit(&ai_cm_stats.cm[i], c[i], memory_order_relaxed);
	ctl_cm_usage(ai->ctl, &ids, &chs);
	atomic_store_explicit(&ai_cm_stats.ids, ids, memory_order_relaxed);
	atomic_store_explicit(&ai_cm_stats.channels, chs, memory_order_relaxed);
}

static int
tel_cm_stats(const char *cmd, const char *params, struct rte_tel_data *t)
{
	static const char *const gsi_names[] = {
#define GSI_CTR_NAME(sym, name, desc) name,
		GSI_CTR_LIST(GSI_CTR_NAME)
#undef GSI_CTR_NAME
	};
	static const char *const rdma_cm_names[] = {
#define CTL_CM_CTR_NAME(sym, name, desc) name,
		CTL_CM_CTR_LIST(CTL_CM_CTR_NAME)
#undef CTL_CM_CTR_NAME
	};
	char name[64];

	(void)cmd;
	(void)params;
	if (!atomic_load_explicit(&ai_stats.live, memory_order_acquire))
		return -ENODEV;
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_u64(t, "rdma_cm_ids", atomic_load(&ai_cm_stats.ids));
	rte_tel_data_add_dict_u64(t, "rdma_cm_channels", atomic_load(&ai_cm_stats.channels));
	for (unsigned int i = 0; i < GSI_CTR_COUNT; i++)
		rte_tel_data_add_dict_u64(t, gsi_names[i], atomic_load(&ai_cm_stats.gsi[i]));
	for (unsigned int i = 0; i < CTL_CM_CTR_COUNT; i++)
		rte_tel_data_add_dict_u64(t, rdma_cm_names[i], atomic_load(&ai_cm_stats.rdma_cm[i]));
	for (int i = 0; i < CM_CTR_COUNT; i++) {
		snprintf(name, sizeof(name), "cm_%s", cm_ctr_name(i));
		rte_tel_data_add_dict_u64(t, name, atomic_load(&ai_cm_stats.cm[i]));
	}
	return 0;
}

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
	AI_STAT_STORE(events_dropped, st.events_dropped + ai->events_dropped + ai->d->events_dropped +
				      ai_events_lost(ai))
	AI_STAT_STORE(ops_inflight, ai->ops_inflight)
	AI_STAT_STORE(ctl_backlogged, ai->ctl_backlogged)
	AI_STAT_STORE(ctl_refused, ai->ctl_refused)
	AI_STAT_STORE(ctl_told_errors, ai->ctl_told_errors)
	AI_STAT_STORE(cq_signals_dropped, ai->cq_signals_dropped)
	AI_STAT_STORE(events_coalesced, ai_events_coalesced(ai))
	AI_STAT_STORE(destroys_held, ai->destroys_held)
	AI_STAT_STORE(quarantined, st.quarantined)
	AI_STAT_STORE(quarantined_bytes, st.quarantined_bytes)
	AI_STAT_STORE(qkey_refused, st.qkey_refused)
	AI_STAT_STORE(quota_refused, st.quota_refused)
	AI_STAT_STORE(conns_refused, st.conns_refused)
#undef AI_STAT_STORE
	cm_stats_publish(ai);
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

/* ---- operations and messages ---- */

static struct ai_op *
op_new(struct app_iface *ai, enum ai_op_kind kind)
{
	struct ai_op *op;
	uint32_t i = ai->op_free;

	if (i == UINT32_MAX)
		return NULL;
	op = &ai->ops[i];
	ai->op_free = op->next;
	memset(op, 0, sizeof(*op));
	op->kind = (uint8_t)kind;
	op->in_call = true;
	op->state = -1;
	ai->ops_inflight++;
	return op;
}

static uint32_t
op_index(const struct app_iface *ai, const struct ai_op *op)
{
	return (uint32_t)(op - ai->ops);
}

static void
op_free(struct app_iface *ai, struct ai_op *op)
{
	if (op->resolving)
		ai->ops_resolving--;
	op->kind = AI_OP_FREE;
	op->next = ai->op_free;
	ai->op_free = op_index(ai, op);
	ai->ops_inflight--;
}

/*
 * @p op is over with @p result (0 or a positive errno). Inside its callback
 * (the workers stopped, so everything ran at once) the callback returns it;
 * afterwards lib/ctl gets it, which may start other operations.
 */
static void
op_finish(struct app_iface *ai, struct ai_op *op, int result)
{
	uint64_t token = op->token;

	if (op->in_call) {
		op->finished = true;
		op->result = result;
		return;
	}
	op_free(ai, op);
	if (token != CTL_DP_TOKEN_NONE)
		ctl_dp_done(ai->ctl, token, result);
}

/*
 * The end of a dataplane callback that started @p op: its result if it is
 * over already, else 0 with the answer deferred (lib/ctl waits for
 * ctl_dp_done(); outside a request nobody waits and the operation ends on
 * its own).
 */
static int
op_return(struct app_iface *ai, struct ai_op *op)
{
	int result = op->result;

	op->in_call = false;
	if (op->finished) {
		op_free(ai, op);
		return result;
	}
	op->token = ctl_dp_defer(ai->ctl);
	return 0;
}

static void ai_answer(struct app_iface *ai, const struct ctl_msg *m);

/* Run @p m as its lcore would, here: only once the workers stopped. */
static void
ai_run_here(struct app_iface *ai, unsigned int wi, struct ctl_msg *m)
{
	worker_ctl_run(ai->d->worker[wi], m);
	ai_answer(ai, m);
}

/* Move what waits in lcore @p wi's backlog onto its ring, as room allows. */
static unsigned int
ai_backlog_flush(struct app_iface *ai, unsigned int wi)
{
	struct ai_backlog *b = ai->bl[wi];
	unsigned int n = 0;

	while (b->n > 0 && b->outstanding < WORKER_CTL_RING &&
	       worker_ctl_send(ai->d->worker[wi], &b->msg[b->head]) == 0) {
		b->head = (b->head + 1) % AI_BACKLOG;
		b->n--;
		b->outstanding++;
		n++;
	}
	return n;
}

/*
 * Send @p m for operation @p op (NULL: nobody waits for the answer) to
 * lcore @p wi. A full ring (or as many
 * messages outstanding as its answer ring holds) puts it in the backlog,
 * in order behind what waits there.
 * @return 0, or -ENOBUFS when even the backlog is full (nothing sent)
 */
/* A message that makes an lcore let go of memory lib/ctl will free. */
static bool
ai_release(const struct ctl_msg *m)
{
	return m->type == CTL_MSG_QP_DESTROY || m->type == CTL_MSG_MR_DEREG;
}

static int
ai_send(struct app_iface *ai, unsigned int wi, struct ai_op *op, struct ctl_msg *m)
{
	struct daemon *d = ai->d;
	struct ai_backlog *b = ai->bl[wi];

	m->op = op != NULL ? op_index(ai, op) : AI_OP_NONE;
	m->rc = 0;
	if (op != NULL)
		op->waiting++;
	if (daemon_stopping(d))
		daemon_stop_workers(d);
	if (!d->workers_running) {
		ai_run_here(ai, wi, m);
		return 0;
	}
	ai->brisk_until = rte_get_tsc_cycles() + d->tsc_hz / 1000000 * AI_BRISK_US;
	if (b->n == 0 && b->outstanding < WORKER_CTL_RING &&
	    worker_ctl_send(d->worker[wi], m) == 0) {
		b->outstanding++;
		return 0;
	}
	if (b->n >= (ai_release(m) ? AI_BACKLOG : AI_BACKLOG - AI_RELEASE_RESERVE)) {
		if (op != NULL)
			op->waiting--;
		ai->ctl_refused++;
		return -ENOBUFS;
	}
	b->msg[(b->head + b->n++) % AI_BACKLOG] = *m;
	ai->ctl_backlogged++;
	return 0;
}

/* Drain every lcore's answers and refill its ring from the backlog. @return answers */
static unsigned int
ai_answers(struct app_iface *ai)
{
	struct ctl_msg m[AI_ANSWER_BURST];
	unsigned int work = 0;

	for (unsigned int wi = 0; wi < ai->d->n_workers; wi++) {
		unsigned int n = worker_ctl_answers(ai->d->worker[wi], m, RTE_DIM(m));

		ai->bl[wi]->outstanding -= n;
		for (unsigned int i = 0; i < n; i++)
			ai_answer(ai, &m[i]);
		work += n + ai_backlog_flush(ai, wi);
	}
	return work;
}

/*
 * Once the workers stopped (shutdown): run what is still queued for them
 * here, so every operation gets its answer.
 */
static void
ai_drain_stopped(struct app_iface *ai)
{
	struct daemon *d = ai->d;

	daemon_stop_workers(d);
	for (unsigned int wi = 0; wi < d->n_workers; wi++) {
		struct ai_backlog *b = ai->bl[wi];
		struct ctl_msg m;

		/* in the order the lcore ran them: answered, kept answers, still queued */
		ai_answers(ai);
		for (uint32_t k = 0; k < d->worker[wi]->ctl_ans_n; k++) {
			b->outstanding--;
			ai_answer(ai, &d->worker[wi]->ctl_ans[k]);
		}
		d->worker[wi]->ctl_ans_n = 0;
		while (rte_ring_sc_dequeue_elem(d->worker[wi]->ctl_in, &m, sizeof(m)) == 0) {
			b->outstanding--;
			ai_run_here(ai, wi, &m);
		}
		while (b->n > 0) {
			m = b->msg[b->head];
			b->head = (b->head + 1) % AI_BACKLOG;
			b->n--;
			ai_run_here(ai, wi, &m);
		}
	}
}

/* ---- MRs: one table per lcore, keys from lib/ctl ---- */

static int
lcore_mr_reg(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	struct mr_table *t = ai->mrs[w->index];

	if (m->u.mr.local == 0) /* fallback: copies into the client (mr.h) */
		return mr_reg_key_indirect(t, m->u.mr.key, m->u.mr.pd, m->u.mr.app_addr,
					   m->u.mr.iova, m->u.mr.length, m->u.mr.access,
					   m->u.mr.pid, m->u.mr.mem_fd);
	return mr_reg_key(t, m->u.mr.key, m->u.mr.pd, m->u.mr.local, m->u.mr.iova, m->u.mr.length,
			  m->u.mr.access);
}

static int
lcore_mr_dereg(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	int rc = mr_dereg(ai->mrs[w->index], m->u.mr.key);

	return rc == -ENOENT ? 0 : rc;
}

static void
mr_msg(struct ctl_msg *m, enum ctl_msg_type type, const struct ctl_mr_info *mr)
{
	memset(m, 0, sizeof(*m));
	m->type = (uint16_t)type;
	m->u.mr.key = mr->lkey;
	m->u.mr.pd = mr->pd;
	m->u.mr.access = mr->access & 0x3fu;
	m->u.mr.pid = mr->pid;
	m->u.mr.mem_fd = mr->mem_fd;
	m->u.mr.local = (uint64_t)(uintptr_t)mr->local;
	m->u.mr.app_addr = mr->app_addr;
	m->u.mr.iova = mr->iova;
	m->u.mr.length = mr->length;
}

static void op_answered(struct app_iface *ai, struct ai_op *op);

/*
 * Send @p type for @p op's MR to the lcores in @p wait (@p op waits for
 * their answers) and in @p tell (nobody waits). The operation is held
 * meanwhile, so answers given at once (workers stopped) cannot finish it
 * before every message went out. A message that finds no room fails the
 * operation (-ENOBUFS), after the answers of those sent.
 */
static void
mr_fan_out(struct app_iface *ai, struct ai_op *op, enum ctl_msg_type type, uint32_t wait,
	   uint32_t tell)
{
	struct ctl_msg m;

	op->waiting++;
	for (unsigned int wi = 0; wi < ai->d->n_workers; wi++) {
		if (!((wait | tell) & 1u << wi))
			continue;
		mr_msg(&m, type, op->mr);
		if (ai_send(ai, wi, wait & 1u << wi ? op : NULL, &m) == 0)
			continue;
		if (type == CTL_MSG_MR_DEREG) {
			/* every other lcore is still told; this one may keep the MR */
			op->held = true;
			continue;
		}
		if (wait & 1u << wi) {
			if (op->rc == 0)
				op->rc = -ENOBUFS;
			break;
		}
	}
	if (--op->waiting == 0)
		op_answered(ai, op);
}

static uint32_t
all_workers(const struct app_iface *ai)
{
	return ai->d->n_workers >= 32 ? UINT32_MAX : (1u << ai->d->n_workers) - 1;
}

/*
 * The lcores an MR of PD @p pd must be on (or gone from) before the client
 * hears back: those running a QP of that PD. The others cannot touch the
 * MR until a QP of the PD comes to them, and its QP_CREATE follows the MR
 * message on their ring; they are told without being waited for, so a
 * stopped lcore delays only the clients whose QPs it runs.
 */
static uint32_t
mr_lcores(const struct app_iface *ai, uint32_t pd)
{
	uint32_t mask = 0;

	for (unsigned int wi = 0; wi < ai->d->n_workers && pd < ai->max_pd; wi++)
		if (ai->pd_qps[pd * ai->d->n_workers + wi] > 0)
			mask |= 1u << wi;
	return mask;
}

/* lib/ctl's errno for a refused registration */
static int
mr_errno(int rc)
{
	return rc == -EEXIST || rc == -EINVAL ? EINVAL : rc == -ENOSPC ? ENOMEM : EAGAIN;
}

/* Every lcore answered MR_REG / the undo: done, or undo where it was taken. */
static void
mr_reg_answered(struct app_iface *ai, struct ai_op *op)
{
	if (op->rc == 0) {
		ai->dp_mrs++;
		op_finish(ai, op, 0);
		return;
	}
	if (op->kind == AI_OP_MR_REG) {
		uint32_t told = all_workers(ai) & ~mr_lcores(ai, op->mr->pd);

		op->kind = AI_OP_MR_UNDO; /* its answers come back here */
		mr_fan_out(ai, op, CTL_MSG_MR_DEREG, op->ok_mask, told);
		return;
	}
	op_finish(ai, op, mr_errno(op->rc));
}

static int
dp_mr_create(void *dp, struct ctl_mr_info *mr)
{
	struct app_iface *ai = dp;
	struct ai_op *op;
	uint32_t wait;
	int rc;

	if (mr->local == NULL) {
		/* Not shared with us (doc/verbs-shim.md): the lcores copy from/to
		 * the client's pages (process_vm_readv/writev), if we may. */
		rc = mr_indirect_probe(mr->pid, mr->mem_fd, mr->app_addr);
		if (!ai->warned_unmapped)
			fprintf(stderr, "roce-daemon: pid %d registered memory the daemon cannot "
				"map (stack, file or read-only pages): %s\n", (int)mr->pid,
				rc == 0 ? "served by copies (slower)" : strerror(-rc));
		ai->warned_unmapped = true;
		if (rc != 0)
			return -rc;
	}
	op = op_new(ai, AI_OP_MR_REG);
	if (op == NULL)
		return EAGAIN;
	op->mr = mr;
	wait = mr_lcores(ai, mr->pd);
	mr_fan_out(ai, op, CTL_MSG_MR_REG, wait, all_workers(ai) & ~wait);
	return op_return(ai, op);
}

/* Complete only when no lcore can reach the region any more. */
static void
dp_mr_destroy(void *dp, const struct ctl_mr_info *mr)
{
	struct app_iface *ai = dp;
	struct ai_op *op = op_new(ai, AI_OP_MR_DEREG);
	uint32_t wait;

	if (op == NULL) {
		ai->ctl_refused++; /* cannot happen: AI_MAX_OPS > what lib/ctl has in flight */
		return;
	}
	op->mr = mr;
	wait = mr_lcores(ai, mr->pd);
	mr_fan_out(ai, op, CTL_MSG_MR_DEREG, wait, all_workers(ai) & ~wait);
	if (op->held)
		ai->destroys_held++;
	if (op_return(ai, op) != 0)
		ctl_dp_destroy_failed(ai->ctl); /* lib/ctl keeps the memory for good */
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

static int
lcore_cq_resize(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
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

static int
dp_cq_resize(void *dp, const struct ctl_cq_info *cq, const struct ctl_cq_info *old)
{
	struct app_iface *ai = dp;
	struct ai_cq *c = &ai->cq[old->cqn];
	struct ctl_msg m = { .type = CTL_MSG_CQ_RESIZE };
	struct ai_op *op;

	/* the producer moves the CQEs: the owner lcore, or us while no QP uses the CQ */
	if (c->nqps == 0)
		return cq_move(c, cq, old) == 0 ? 0 : EINVAL;
	op = op_new(ai, AI_OP_CQ_RESIZE);
	if (op == NULL)
		return EAGAIN;
	m.u.cq.view = c;
	m.u.cq.to = cq;
	m.u.cq.from = old;
	if (ai_send(ai, c->lcore, op, &m) != 0) {
		op_free(ai, op);
		return EAGAIN;
	}
	return op_return(ai, op);
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

static int
lcore_srq_limit(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	(void)ai;
	(void)w;
	m->u.srq.x->limit = m->u.srq.limit;
	m->u.srq.x->limit_armed = m->u.srq.limit != 0;
	return 0;
}

static int
dp_srq_modify(void *dp, const struct ctl_srq_info *srq)
{
	struct app_iface *ai = dp;
	struct ai_srq *s = &ai->srq[srq->srqn - 1];
	struct ctl_msg m = { .type = CTL_MSG_SRQ_LIMIT };
	struct ai_op *op;

	m.u.srq.x = &s->x;
	m.u.srq.limit = srq->srq_limit;
	if (s->nqps == 0) /* no lcore holds it: ours */
		return lcore_srq_limit(ai, NULL, &m);
	op = op_new(ai, AI_OP_SRQ_LIMIT);
	if (op == NULL)
		return EAGAIN;
	if (ai_send(ai, s->lcore, op, &m) != 0) {
		op_free(ai, op);
		return EAGAIN;
	}
	return op_return(ai, op);
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

/*
 * lib/qp's resolve hook (qp_sem_device.resolve), inside the modify's
 * checks: it only starts the resolution (the modify waits for it in
 * dp_qp_modify, asynchronously). Without a route there is nothing to wait
 * for: ETIMEDOUT at once, as Linux (ib_resolve_eth_dmac) answers an
 * unresolvable neighbour.
 */
static int
ai_resolve(void *ctx, uint8_t port_num, const struct ibv_global_route *grh,
	   const struct qp_sem_gid *sgid, uint8_t *hop_limit)
{
	struct app_iface *ai = ctx;
	int port = daemon_find_gid(ai->d, sgid->gid.raw);
	uint8_t mac[6];
	int rc;

	(void)port_num;
	(void)hop_limit;
	rc = neigh_resolve(ai->d, -1, (uint16_t)(port < 0 ? 0 : port), grh->dgid.raw, mac);
	return rc == 0 || rc == -EAGAIN ? 0 : ETIMEDOUT;
}

/*
 * Start resolving the MAC of @p dgid from @p port into @p mac for @p op:
 * at once when known (op_finish-free: @return 0), else @p op waits in the
 * neighbour table (ai_resolve_tick()) until the answer or the bound.
 * @return 0 resolved, -EAGAIN waiting, ETIMEDOUT unresolvable
 */
static int
ai_resolve_start(struct app_iface *ai, struct ai_op *op, uint16_t port, const uint8_t dgid[16],
		 uint8_t *mac)
{
	int rc = neigh_resolve(ai->d, -1, port, dgid, mac);

	if (rc == 0)
		return 0;
	if (rc != -EAGAIN)
		return ETIMEDOUT;
	op->port = port;
	memcpy(op->dgid, dgid, 16);
	op->mac = mac;
	op->deadline = rte_get_tsc_cycles() + ai->d->tsc_hz / 1000 * ai->resolve_ms;
	op->resolving = true;
	ai->ops_resolving++;
	return -EAGAIN;
}

/*
 * The resolved vector of @p ah goes into the table the lcores send UD WQEs
 * from (by handle, for QPs of its PD only): the application's ring names
 * the handle, never the addresses. @return 0 or EINVAL (beyond the table)
 */
static int
ah_publish(struct app_iface *ai, const struct ctl_ah_info *ah)
{
	return ah_table_set(ai->ahs, ah->ahn, ah->pd, &ah->av) == 0 ? 0 : EINVAL;
}

static int
dp_ah_create(void *dp, struct ctl_ah_info *ah)
{
	struct app_iface *ai = dp;
	struct ai_op *op;
	int rc;

	if (ah->dev >= ai->d->n_ports || ah->ahn >= ai->ahs->capacity)
		return EINVAL;
	op = op_new(ai, AI_OP_AH_RESOLVE);
	if (op == NULL)
		return EAGAIN;
	/* ah->av is lib/ctl's storage, kept (busy) until the answer */
	op->ah = ah;
	rc = ai_resolve_start(ai, op, (uint16_t)ah->dev, ah->av.dgid, ah->av.dmac);
	if (rc != -EAGAIN) {
		op_free(ai, op);
		return rc == 0 ? ah_publish(ai, ah) : rc;
	}
	return op_return(ai, op);
}

/* The handle answers no more; a WQE already fetched keeps its own copy. */
static void
dp_ah_destroy(void *dp, const struct ctl_ah_info *ah)
{
	struct app_iface *ai = dp;

	ah_table_clear(ai->ahs, ah->ahn);
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
 * @return true when c->av.dmac is still to be resolved (a new path)
 */
static bool
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
	c->cc = info->dev < ai->d->n_ports ? &ai->d->port[info->dev].cc : NULL;
	memset(&c->av, 0, sizeof(c->av));
	if (info->qp_type != IBV_QPT_UD && (st == IBV_QPS_RTR || st == IBV_QPS_RTS ||
					    st == IBV_QPS_SQD || st == IBV_QPS_SQE)) {
		const struct ibv_global_route *g = &a->ah_attr.grh;
		uint8_t si = g->sgid_index < CTL_GID_TBL_LEN ? g->sgid_index : 0;

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
			return false;
		}
		return true;
	}
	return false;
}

static int
lcore_qp_create(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	(void)ai;
	return engine_xport_qp_create(w, &m->u.qp.cfg, m->u.qp.port, m->u.qp.epoch);
}

static int
lcore_qp_modify(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	(void)ai;
	return engine_xport_qp_modify(w, m->u.qp.cfg.qpn, &m->u.qp.cfg, m->u.qp.state,
				      m->u.qp.epoch);
}

static int
lcore_qp_destroy(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
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
	ai->cq[info->send_cqn].nqps--;
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

static int
dp_qp_create(void *dp, const struct ctl_qp_info *info)
{
	struct app_iface *ai = dp;
	struct ai_qp *q = ai_qp_of(ai, info->qpn);
	uint32_t lcore = qp_lcore(ai, info->qpn);
	struct ai_cq *scq, *rcq;
	struct ai_srq *srq = NULL;
	struct ai_op *op;
	struct ctl_msg m;

	if (q == NULL || info->dev >= ai->d->n_ports || info->send_cqn >= ai->max_cq ||
	    info->recv_cqn >= ai->max_cq ||
	    (info->srqn != UINT32_MAX && (info->srqn == 0 || info->srqn > ai->max_srq)))
		return EINVAL;
	scq = &ai->cq[info->send_cqn];
	rcq = &ai->cq[info->recv_cqn];
	if (info->srqn != UINT32_MAX)
		srq = &ai->srq[info->srqn - 1];
	op = op_new(ai, AI_OP_QP_CREATE);
	if (op == NULL)
		return EAGAIN;
	/* lib/ctl placed the QP with its CQs/SRQ: one producer per CQ ring */
	if (cq_bind(scq, lcore) != 0)
		goto einval;
	if (cq_bind(rcq, lcore) != 0) {
		scq->nqps--;
		goto einval;
	}
	if (srq != NULL && srq_bind(srq, lcore) != 0) {
		scq->nqps--;
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
		.srq = srq ? &srq->x : NULL,
		.send_cq = &scq->x, .recv_cq = &rcq->x,
		.mrs = ai->mrs[lcore],
		.mws = ctl_mw_table(ai->ctl), /* one for all lcores (lib/xport mw.h) */
		.ahs = ai->ahs,
	};
	qp_cfg(ai, q, info->sem, &q->cfg); /* RESET: no path to resolve */
	op->qpn = info->qpn;
	qp_msg(&m, CTL_MSG_QP_CREATE, q, &q->cfg, -1, q->cookie);
	if (ai_send(ai, lcore, op, &m) != 0) {
		qp_unbind(ai, info);
		q->info = NULL;
		op_free(ai, op);
		return EAGAIN;
	}
	return op_return(ai, op);
einval:
	op_free(ai, op);
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

static int
dp_qp_modify(void *dp, const struct ctl_qp_info *info, const struct qp_sem *next,
	     const struct qp_sem_effects *fx)
{
	struct app_iface *ai = dp;
	struct ai_qp *q = ai_qp_of(ai, info->qpn);
	struct ai_op *op;
	int rc, state = -1;

	if (q == NULL || q->info != info)
		return EINVAL;
	op = op_new(ai, AI_OP_QP_RESOLVE);
	if (op == NULL)
		return EAGAIN;
	op->qpn = info->qpn;
	op->cfg = q->cfg;
	if (fx->flags & QP_SEM_FX_RESET)
		state = XPORT_STATE_RESET;
	else if (engine_state(fx->new_state) != engine_state(fx->old_state))
		state = engine_state(fx->new_state);
	op->state = state;
	/*
	 * A reset starts a new life of the QP: its events get a new epoch, so
	 * an error the engine raised before the reset (still on the event ring)
	 * is dropped by qp_event() rather than moving the reset QP to ERR.
	 */
	op->epoch = state == XPORT_STATE_RESET ? ++ai->next_cookie : q->cookie;
	rc = 0;
	if (qp_cfg(ai, q, next, &op->cfg)) {
		/* a new path: the modify waits for its neighbour, asynchronously */
		rc = ai_resolve_start(ai, op, q->port, op->cfg.av.dgid, op->cfg.av.dmac);
		if (rc == -EAGAIN)
			return op_return(ai, op);
	}
	if (rc == 0)
		rc = qp_modify_send(ai, op);
	if (rc != 0) {
		op_free(ai, op);
		return rc;
	}
	return op_return(ai, op);
}

static void
dp_qp_destroy(void *dp, const struct ctl_qp_info *info)
{
	struct app_iface *ai = dp;
	struct ai_qp *q = ai_qp_of(ai, info->qpn);
	struct ai_op *op;
	struct ctl_msg m;

	if (q == NULL || q->info != info)
		return;
	op = op_new(ai, AI_OP_QP_DESTROY);
	if (op == NULL) {
		ai->ctl_refused++; /* cannot happen: AI_MAX_OPS > what lib/ctl has in flight */
		return;
	}
	op->qpn = info->qpn;
	qp_msg(&m, CTL_MSG_QP_DESTROY, q, &q->cfg, -1, 0);
	if (ai_send(ai, qp_lcore(ai, info->qpn), op, &m) != 0) {
		/*
		 * No room even in the release reserve: the QP stays on its lcore,
		 * so lib/ctl must never free its rings (nor its CQs' and SRQ's).
		 * Its PD stays counted on that lcore (MRs of the PD still wait
		 * for it); a new QP under its QPN is refused there (EEXIST).
		 */
		q->info = NULL;
		ai->destroys_held++;
		op_free(ai, op);
		ctl_dp_destroy_failed(ai->ctl);
		return;
	}
	if (op_return(ai, op) != 0)
		ctl_dp_destroy_failed(ai->ctl);
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
	.ah_destroy = dp_ah_destroy,
	.qp_create = dp_qp_create,
	.qp_modify = dp_qp_modify,
	.qp_destroy = dp_qp_destroy,
};

/* ---- the lcore side: one handler per message (daemon.ctl_msg_fn) ---- */

typedef int (*ai_lcore_fn)(struct app_iface *ai, struct worker *w, const struct ctl_msg *m);

#define AI_LCORE_FN_PING NULL   /* worker.c runs these itself */
#define AI_LCORE_FN_STALL NULL
#define AI_LCORE_FN_QP_CREATE lcore_qp_create
#define AI_LCORE_FN_QP_MODIFY lcore_qp_modify
#define AI_LCORE_FN_QP_DESTROY lcore_qp_destroy
#define AI_LCORE_FN_MR_REG lcore_mr_reg
#define AI_LCORE_FN_MR_DEREG lcore_mr_dereg
#define AI_LCORE_FN_CQ_RESIZE lcore_cq_resize
#define AI_LCORE_FN_SRQ_LIMIT lcore_srq_limit

static const ai_lcore_fn ai_lcore_fns[CTL_MSG_COUNT] = {
#define AI_LCORE_FN(sym, name) [CTL_MSG_##sym] = AI_LCORE_FN_##sym,
	CTL_MSG_LIST(AI_LCORE_FN)
#undef AI_LCORE_FN
};

/* Runs on the owner lcore (worker_ctl_run()). */
static int
ai_lcore_run(struct worker *w, struct ctl_msg *m, void *arg)
{
	ai_lcore_fn fn = m->type < CTL_MSG_COUNT ? ai_lcore_fns[m->type] : NULL;

	return fn != NULL ? fn(arg, w, m) : -ENOTSUP;
}

/* ---- answers ---- */

/* One answer of an lcore, for operation m->op. */
static void
ai_answer(struct app_iface *ai, const struct ctl_msg *m)
{
	struct ai_op *op = m->op < AI_MAX_OPS ? &ai->ops[m->op] : NULL;

	if (op == NULL || op->kind == AI_OP_FREE || op->waiting == 0) {
		/* nobody waits (an MR told to an lcore without its PD's QPs, a test's STALL) */
		if (m->rc != 0 && m->rc != -ENOENT)
			ai->ctl_told_errors++;
		return;
	}
	if (m->rc != 0 && op->rc == 0)
		op->rc = m->rc;
	if (m->rc == 0 && m->type == CTL_MSG_MR_REG)
		op->ok_mask |= 1u << m->worker;
	if (--op->waiting == 0)
		op_answered(ai, op);
}

/* Every answer of @p op is in: what they mean for its object, then lib/ctl's answer. */
static void
op_answered(struct app_iface *ai, struct ai_op *op)
{
	struct ai_qp *q;

	switch (op->kind) {
	case AI_OP_MR_REG:
	case AI_OP_MR_UNDO:
		mr_reg_answered(ai, op);
		break;
	case AI_OP_MR_DEREG:
		ai->dp_mrs--;
		op_finish(ai, op, op->held || (op->rc != 0 && op->rc != -ENOENT) ? EIO : 0);
		break;
	case AI_OP_CQ_RESIZE:
		op_finish(ai, op, op->rc == 0 ? 0 : op->rc == -EINVAL ? EINVAL : EAGAIN);
		break;
	case AI_OP_SRQ_LIMIT:
		op_finish(ai, op, op->rc == 0 ? 0 : EAGAIN);
		break;
	case AI_OP_QP_CREATE:
		q = ai_qp_of(ai, op->qpn);
		if (op->rc != 0) {
			qp_unbind(ai, q->info);
			q->info = NULL;
		}
		op_finish(ai, op, op->rc == 0 ? 0 : op->rc == -EINVAL ? EINVAL
					      : op->rc == -EEXIST ? EEXIST : ENOMEM);
		break;
	case AI_OP_QP_MODIFY:
		q = ai_qp_of(ai, op->qpn);
		if (op->rc == 0) {
			q->cfg = op->cfg;
			if (op->epoch != q->cookie) {
				q->cookie = op->epoch;
				q->error_reported = false;
			}
		}
		op_finish(ai, op, op->rc == 0 ? 0 : op->rc == -EINVAL || op->rc == -ENOMEM
						    ? -op->rc : EAGAIN);
		break;
	case AI_OP_QP_DESTROY:
		q = ai_qp_of(ai, op->qpn);
		qp_unbind(ai, q->info);
		q->info = NULL;
		/* -ENOENT: the lcore had no such QP, so it holds nothing */
		op_finish(ai, op, op->rc != 0 && op->rc != -ENOENT ? EIO : 0);
		break;
	default:
		break;
	}
}

/* Operations waiting for a neighbour: resolved, or out of time. @return those that moved */
static unsigned int
ai_resolve_tick(struct app_iface *ai)
{
	uint64_t now = rte_get_tsc_cycles();
	unsigned int n = 0;

	for (uint32_t i = 0; i < AI_MAX_OPS && ai->ops_resolving > 0; i++) {
		struct ai_op *op = &ai->ops[i];
		int rc;

		if (!op->resolving)
			continue;
		rc = neigh_resolve(ai->d, -1, op->port, op->dgid, op->mac);
		if (rc == -EAGAIN && now < op->deadline && !daemon_stopping(ai->d))
			continue;
		n++;
		op->resolving = false;
		ai->ops_resolving--;
		if (rc != 0) {
			/* Linux (ib_resolve_eth_dmac): an unresolvable neighbour is ETIMEDOUT */
			op_finish(ai, op, ETIMEDOUT);
		} else if (op->kind == AI_OP_QP_RESOLVE) {
			rc = qp_modify_send(ai, op);
			if (rc != 0)
				op_finish(ai, op, rc);
		} else {
			op_finish(ai, op, ah_publish(ai, op->ah));
		}
	}
	return n;
}

/* ---- engine events -> applications ---- */

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

/*
 * d->on_event, from control_poll(): nothing in the control thread nests
 * any more (no request waits inside the loop), so events are handled at once.
 */
static void
ai_on_event(struct daemon *d, const struct worker_event *ev, void *arg)
{
	struct app_iface *ai = arg;
	struct ai_cq *c;
	struct ai_srq *s;

	(void)d;
	if (ev->qpn != UINT32_MAX) {
		qp_event(ai, ev);
		return;
	}
	if (ev->type == XPORT_EV_CQ_NOTIFY) {
		c = cq_of_handle(ai, ev->handle);
		/* A channel the application does not read loses the byte, never blocks us. */
		if (c != NULL && ipc_cq_signal(c->info->ctrl, c->info->event_fd) != 0)
			ai->cq_signals_dropped++;
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

uint32_t
app_iface_lcore_mrs(const struct app_iface *ai, unsigned int worker)
{
	if (worker >= ai->d->n_workers || ai->mrs[worker] == NULL)
		return 0;
	return __atomic_load_n(&ai->mrs[worker]->count, __ATOMIC_RELAXED);
}

int
app_iface_stall_worker(struct app_iface *ai, unsigned int worker, unsigned int ms)
{
	if (worker >= ai->d->n_workers || ms == 0)
		return -EINVAL;
	atomic_store_explicit(&ai->stall_req[worker], ms, memory_order_release);
	return 0;
}

/* Stall requests of a test (app_iface_stall_worker()) become STALL messages. */
static void
ai_stall_requests(struct app_iface *ai)
{
	for (unsigned int wi = 0; wi < ai->d->n_workers; wi++) {
		uint32_t ms = atomic_exchange_explicit(&ai->stall_req[wi], 0, memory_order_acquire);
		struct ctl_msg m = { .type = CTL_MSG_STALL };

		if (ms == 0)
			continue;
		m.u.stall_ms = ms;
		ai_send(ai, wi, NULL, &m);
	}
}

/* Control-loop hook: the lcores' answers, resolutions, then the clients' requests. */
static int
ai_poll(void *arg, int timeout_ms)
{
	struct app_iface *ai = arg;
	int work = (int)ai_answers(ai);
	int n;

	ai_stall_requests(ai);
	if (ai->ops_resolving > 0)
		work += (int)ai_resolve_tick(ai);
	work += (int)ctl_cm_tick(ai->ctl);
	/*
	 * Answers of the lcores arrive on rings, not descriptors: right after a
	 * send the loop looks again soon instead of sleeping a whole period.
	 */
	if (work == 0 && timeout_ms > 0 && rte_get_tsc_cycles() < ai->brisk_until) {
		struct timespec ts = { 0, AI_BRISK_SLEEP_US * 1000L };

		timeout_ms = 0;
		nanosleep(&ts, NULL);
	}
	n = ctl_server_poll(ai->srv, work ? 0 : timeout_ms);
	if (n > 0)
		work += n;
	stats_publish(ai);
	return work;
}

/* ---- rdma_cm: the CM's wire (lib/ctl ctl_cm_ops) ---- */

static int
ai_cm_send(void *ctx, const struct cm_path *to, const uint8_t *mad)
{
	struct app_iface *ai = ctx;

	return ai->gsi ? gsi_send(ai->gsi, to, mad) : -ENETDOWN;
}

/*
 * rdma_resolve_addr's neighbour: no route is ENETUNREACH at once; an
 * unanswered ARP/ND keeps the id waiting until its own timeout, which
 * then reports ETIMEDOUT, as the kernel's rdma_resolve_addr does.
 */
static int
ai_cm_resolve(void *ctx, uint32_t dev, const uint8_t dgid[16], uint8_t mac[6])
{
	struct app_iface *ai = ctx;
	uint8_t nh[16];
	int rc;

	if (dev >= ai->d->n_ports || !neigh_next_hop(ai->d, (uint16_t)dev, dgid, nh))
		return -ENETUNREACH;
	rc = neigh_resolve(ai->d, -1, (uint16_t)dev, dgid, mac);
	return rc == 0 ? 0 : -EAGAIN;
}

static const struct ctl_cm_ops ai_cm_ops = {
	.send_mad = ai_cm_send,
	.resolve = ai_cm_resolve,
};

/* A MAD from QP1 (gsi_input()): to the CM. */
static void
ai_gsi_rx(void *arg, const struct cm_path *from, const uint8_t *mad, uint32_t len)
{
	struct app_iface *ai = arg;

	ctl_cm_rx(ai->ctl, from, mad, len);
}

/*
 * d->on_link, from control_poll(): a port's link changed. ibv_query_port
 * answers the new state from now on, and every context of the port's device
 * gets IBV_EVENT_PORT_ACTIVE or IBV_EVENT_PORT_ERR when the state flips.
 */
static void
ai_on_link(struct daemon *d, unsigned int port, const struct link_sample *now, void *arg)
{
	struct app_iface *ai = arg;
	struct ipc_port_attr attr;

	gid_port_attr(now->mtu != 0 ? now->mtu : d->port[port].mtu, now->up, now->speed_mbps, &attr);
	(void)ctl_set_port_attr(ai->ctl, port, 1, &attr);
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
	gid_port_attr(port->link_known && port->link_mtu ? port->link_mtu : port->mtu, up, speed, &pc->attr);
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

/* [daemon] allowed_users / allowed_groups into lib/ctl's access lists (config.c checked them). */
static int
ai_access(const struct config_daemon *cd, struct ctl_access *a, char *err, size_t errlen)
{
	uint32_t ids[CONFIG_MAX_ALLOWED];
	int nu = config_id_list(cd->allowed_users, false, ids, CONFIG_MAX_ALLOWED), ng;

	_Static_assert(CONFIG_MAX_ALLOWED == CTL_MAX_ALLOWED, "one bound for both");
	memset(a, 0, sizeof(*a));
	for (int i = 0; i < nu; i++)
		a->uids[i] = ids[i];
	ng = config_id_list(cd->allowed_groups, true, ids, CONFIG_MAX_ALLOWED);
	for (int i = 0; i < ng; i++)
		a->gids[i] = ids[i];
	if (nu < 0 || ng < 0) {
		snprintf(err, errlen, "[daemon] allowed_users/allowed_groups: unknown name");
		return -1;
	}
	a->n_uids = (uint32_t)nu;
	a->n_gids = (uint32_t)ng;
	return 0;
}

/*
 * The socket's owner, group and mode from [daemon] (socket_owner,
 * socket_group, socket_mode), not the umask: who may connect at all.
 */
static int
ai_socket_perms(const struct config_daemon *cd, char *err, size_t errlen)
{
	uint32_t uid = (uint32_t)-1, gid = (uint32_t)-1;
	unsigned long mode = strtoul(cd->socket_mode, NULL, 8);

	if ((cd->socket_owner[0] != '\0' && config_user_id(cd->socket_owner, &uid) != 0) ||
	    (cd->socket_group[0] != '\0' && config_group_id(cd->socket_group, &gid) != 0)) {
		snprintf(err, errlen, "[daemon] socket_owner/socket_group: unknown name");
		return -1;
	}
	if (chown(cd->socket_path, (uid_t)uid, (gid_t)gid) != 0 ||
	    chmod(cd->socket_path, (mode_t)(mode & 07777)) != 0) {
		snprintf(err, errlen, "[daemon] socket = %s: %s", cd->socket_path, strerror(errno));
		return -1;
	}
	return 0;
}

static void
ai_free(struct app_iface *ai)
{
	for (unsigned int i = 0; i < WORKER_MAX; i++) {
		mr_table_destroy(ai->mrs[i]);
		free(ai->bl[i]);
	}
	ah_table_destroy(ai->ahs);
	free(ai->ops);
	free(ai->pd_qps);
	free(ai->cq);
	free(ai->srq);
	free(ai->qp);
	gsi_destroy(ai->gsi);
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
		.max_mw = cd->max_mrs, /* windows: as many as MRs (gid.c reports it) */
		.qpn_base = AI_QPN_BASE,
		.n_lcores = d->n_workers,
	};
	cfg->quota = (struct ctl_quota){
		.max_pd = cd->client_max_pds,
		.max_mr = cd->client_max_mrs,
		.max_cq = cd->client_max_cqs,
		.max_channels = cd->client_max_cqs,
		.max_qp = cd->client_max_qps,
		.max_srq = cd->client_max_srqs,
		.max_ah = cd->client_max_ahs,
		.max_mr_bytes = (uint64_t)cd->client_max_mr_mb << 20,
		.max_conns_per_user = cd->user_max_conns,
	};
	if (ai_access(cd, &cfg->access, err, errlen) != 0) {
		free(ai);
		return NULL;
	}
	cfg->dp_ops = &ai_ops;
	cfg->dp = ai;
	cfg->resolve = ai_resolve;
	cfg->resolve_ctx = ai;
	ai->cm_ops = ai_cm_ops;
	ai->cm_ops.ctx = ai;
	cfg->cm_ops = &ai->cm_ops;
	ai->gsi = gsi_create(d, ai_gsi_rx, ai);
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
	ai->ops = calloc(AI_MAX_OPS, sizeof(*ai->ops));
	ai->max_pd = cfg->limits.max_pd;
	ai->pd_qps = calloc((size_t)ai->max_pd * d->n_workers + 1, sizeof(*ai->pd_qps));
	ai->ahs = ah_table_create(AI_MAX_AH); /* lib/ctl's AH numbers are its table indexes */
	if (ai->cq == NULL || ai->srq == NULL || ai->qp == NULL || ai->ops == NULL ||
	    ai->pd_qps == NULL || ai->ahs == NULL || ai->gsi == NULL) {
		snprintf(err, errlen, "application interface: out of memory");
		goto fail;
	}
	for (uint32_t i = 0; i < AI_MAX_OPS; i++)
		ai->ops[i].next = i + 1 < AI_MAX_OPS ? i + 1 : UINT32_MAX;
	ai->op_free = 0;
	for (unsigned int w = 0; w < d->n_workers; w++) {
		ai->bl[w] = calloc(1, sizeof(*ai->bl[w]));
		if (ai->bl[w] == NULL) {
			snprintf(err, errlen, "application interface: out of memory");
			goto fail;
		}
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
	if (ai_socket_perms(cd, err, errlen) != 0) {
		ctl_server_destroy(ai->srv);
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
	d->on_link = ai_on_link;
	d->on_link_arg = ai;
	d->ctl_msg_fn = ai_lcore_run;
	d->ctl_msg_arg = ai;
	d->gsi = ai->gsi;
	stats_publish(ai);
	if (cd->telemetry && !ai_cm_stats_registered &&
	    rte_telemetry_register_cmd("/roce/cm", tel_cm_stats,
				       "rdma_cm: ids, channels, QP1 MADs, CM messages sent/received/"
				       "retried/rejected, malformed MADs. No parameters") == 0)
		ai_cm_stats_registered = true;
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
	/*
	 * The lcores stop first; what they still had to do runs here and every
	 * operation in flight gets its answer. Then every client gets
	 * DEVICE_FATAL and its objects go (ctl_server_destroy), all at once.
	 */
	ai_drain_stopped(ai);
	ai_resolve_tick(ai);
	ctl_server_destroy(ai->srv);
	ctl_destroy(ai->ctl);
	d->gsi = NULL;
	atomic_store_explicit(&ai_stats.live, false, memory_order_release);
	for (unsigned int h = 0; h < d->n_hooks; h++) {
		if (d->hook[h].arg == ai) {
			d->hook[h] = d->hook[--d->n_hooks];
			break;
		}
	}
	d->on_event = NULL;
	d->on_event_arg = NULL;
	d->on_link = NULL;
	d->on_link_arg = NULL;
	d->ctl_msg_fn = NULL;
	d->ctl_msg_arg = NULL;
	ai_free(ai);
}
