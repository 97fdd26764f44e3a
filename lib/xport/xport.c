/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transport engine: the QP object, packet dispatch to the roles, the
 * activation loop, timers, completions, the error state and its flush,
 * scatter/gather helpers and the frame builder.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xport_internal.h"

static const char *const counter_names[] = {
#define XPORT_COUNTER_NAME(sym, desc) #sym,
	XPORT_COUNTER_LIST(XPORT_COUNTER_NAME)
#undef XPORT_COUNTER_NAME
};

static const char *const counter_descs[] = {
#define XPORT_COUNTER_DESC(sym, desc) desc,
	XPORT_COUNTER_LIST(XPORT_COUNTER_DESC)
#undef XPORT_COUNTER_DESC
};

static const char *const err_names[] = {
#define XPORT_ERR_NAME(sym, desc) #sym,
	XPORT_ERR_LIST(XPORT_ERR_NAME)
#undef XPORT_ERR_NAME
};

const char *
xport_counter_name(enum xport_counter c)
{
	return (unsigned)c < XPORT_CNT_COUNT ? counter_names[c] : "?";
}

const char *
xport_counter_desc(enum xport_counter c)
{
	return (unsigned)c < XPORT_CNT_COUNT ? counter_descs[c] : "?";
}

const char *
xport_err_name(enum xport_err e)
{
	return (unsigned)e < XPORT_ERR_COUNT ? err_names[e] : "?";
}

const uint64_t *
xport_qp_counters(const struct xport_qp *qp)
{
	return qp->cnt;
}

uint64_t
xport_qp_counters_dirty(struct xport_qp *qp)
{
	uint64_t m = qp->cnt_dirty;

	qp->cnt_dirty = 0;
	return m;
}

enum xport_state
xport_qp_state(const struct xport_qp *qp)
{
	return (enum xport_state)qp->state;
}

uint32_t
xport_qp_send_window(const struct xport_qp *qp)
{
	return qp->req.window;
}

uint32_t
xport_qp_sq_psn(const struct xport_qp *qp)
{
	return qp->req.psn;
}

uint32_t
xport_qp_rq_psn(const struct xport_qp *qp)
{
	return qp->resp.epsn;
}

/* ---- lifetime ---------------------------------------------------------- */

/* A ring of @p trusted slots (0: the header's) of @p elem_size records. */
static bool
ring_ok(const struct spsc_ring *r, uint32_t trusted, uint32_t elem_size)
{
	if (!r)
		return false;
	uint32_t size = trusted ? trusted : r->size;
	return r->elem_size == elem_size && size && (size & (size - 1)) == 0 && size <= (1u << 30);
}

/* A receive slot stride wqe.h's rq_wqe_stride() gives for the SGEs it holds. */
static bool
rq_stride_ok(uint32_t stride)
{
	return rq_wqe_stride(rq_wqe_max_sge(stride)) == stride;
}

static uint32_t
sq_slots_of(const struct xport_cfg *cfg)
{
	return cfg->sq_size ? cfg->sq_size : cfg->sq->size;
}

static bool rc_limits_ok(const struct xport_cfg *cfg);

/*
 * XRC (IBTA 9.8.2): an RC QP with one side only. INI sends (SQ, send CQ; no
 * receive side); TGT receives into the XRC SRQs its requests name (an SQ
 * the daemon keeps to itself, no CQ, no RQ, a domain and an SRQ lookup).
 */
static bool
xrc_cfg_valid(const struct xport_cfg *cfg)
{
	if (cfg->type != XPORT_RC || cfg->rq || cfg->srq || !cfg->mrs ||
	    !ring_ok(cfg->sq, cfg->sq_size, sizeof(struct sq_wqe)))
		return false;
	if (cfg->xrc == XPORT_XRC_INI)
		return cfg->send_cq && ring_ok(cfg->send_cq->ring, cfg->send_cq->size,
					       sizeof(struct cqe)) && rc_limits_ok(cfg);
	return cfg->xrc == XPORT_XRC_TGT && cfg->xrc_srq && cfg->xrcd && rc_limits_ok(cfg);
}

static bool
cfg_valid(const struct xport_cfg *cfg)
{
	if (cfg->type != XPORT_RC && cfg->type != XPORT_UC && cfg->type != XPORT_UD &&
	    cfg->type != XPORT_RAW)
		return false;
	/* a raw send is one frame: at least an Ethernet header, at most a bounce slot */
	if (cfg->type == XPORT_RAW &&
	    (cfg->raw_frame_max < sizeof(struct roce_eth_hdr) || cfg->raw_frame_max > XPORT_BOUNCE_FRAME ||
	     cfg->xrc != XPORT_XRC_NONE))
		return false;
	if (roce_mtu_bytes(cfg->path_mtu) == 0 || cfg->qpn > ROCE_QPN_MASK ||
	    cfg->dest_qpn > ROCE_QPN_MASK)
		return false;
	if (cfg->xrc != XPORT_XRC_NONE)
		return xrc_cfg_valid(cfg);
	if (!ring_ok(cfg->sq, cfg->sq_size, sizeof(struct sq_wqe)) || !cfg->send_cq ||
	    !cfg->recv_cq || !ring_ok(cfg->send_cq->ring, cfg->send_cq->size, sizeof(struct cqe)) ||
	    !ring_ok(cfg->recv_cq->ring, cfg->recv_cq->size, sizeof(struct cqe)) || !cfg->mrs)
		return false;
	uint32_t stride = xport_rq_stride(cfg->srq ? cfg->srq->stride : cfg->rq_stride);

	if (!rq_stride_ok(stride) || (cfg->srq ? !ring_ok(cfg->srq->ring, cfg->srq->size, stride)
					       : !ring_ok(cfg->rq, cfg->rq_size, stride)))
		return false;
	return cfg->type != XPORT_RC || rc_limits_ok(cfg);
}

static bool
rc_limits_ok(const struct xport_cfg *cfg)
{
	return cfg->max_rd_atomic <= XPORT_MAX_RD_ATOMIC && cfg->max_dest_rd_atomic != 0 &&
	       cfg->max_dest_rd_atomic <= XPORT_MAX_RD_ATOMIC && cfg->retry_cnt <= 7 &&
	       cfg->rnr_retry <= 7 && cfg->timeout <= 31 && cfg->min_rnr_timer <= 31;
}

/* Responder resources a configuration needs: READ/ATOMIC are RC only; at least one. */
static uint32_t
res_slots_of(const struct xport_cfg *cfg)
{
	return cfg->type == XPORT_RC && cfg->max_dest_rd_atomic ? cfg->max_dest_rd_atomic : 1;
}

/* Object layout: the QP, its shadow SQ, its responder resources (create's count). */
static size_t
obj_size(void)
{
	return (sizeof(struct xport_qp) + 63) & ~(size_t)63;
}

/* SGEs a shadow slot holds (xport_cfg.sq_max_sge; all with an SRQ: tag matching, XRC TGT). */
static uint32_t
sq_sge_of(const struct xport_cfg *cfg)
{
	if (cfg->srq || cfg->xrc == XPORT_XRC_TGT || cfg->sq_max_sge == 0 ||
	    cfg->sq_max_sge > WQE_MAX_SGE)
		return WQE_MAX_SGE;
	return cfg->sq_max_sge;
}

/* Bytes of a shadow slot holding @p sge SGEs (or 16 * sge inline bytes). */
static size_t
swqe_bytes(uint32_t sge)
{
	size_t a = _Alignof(struct xport_swqe);
	return (offsetof(struct xport_swqe, wqe) + offsetof(struct sq_wqe, sg_list) +
		sge * sizeof(struct wr_sge) + a - 1) & ~(a - 1);
}
_Static_assert(offsetof(struct sq_wqe, sg_list) + WQE_MAX_SGE * sizeof(struct wr_sge) ==
		       sizeof(struct sq_wqe) &&
	       WQE_MAX_INLINE == WQE_MAX_SGE * sizeof(struct wr_sge),
	       "a full shadow slot is a whole sq_wqe: SGEs and inline data share its tail");

static size_t
res_offset(const struct xport_cfg *cfg)
{
	size_t a = _Alignof(struct xport_res);
	return (obj_size() + (size_t)sq_slots_of(cfg) * swqe_bytes(sq_sge_of(cfg)) + a - 1) &
	       ~(a - 1);
}

size_t
xport_qp_mem_size(const struct xport_cfg *cfg)
{
	if (!cfg_valid(cfg))
		return 0;
	return res_offset(cfg) + res_slots_of(cfg) * sizeof(struct xport_res);
}

static void
l3_from_av(struct roce_l3 *l3, const struct wr_av *av, uint32_t lqpn, uint32_t rqpn)
{
	memset(l3, 0, sizeof(*l3));
	memcpy(l3->dmac, av->dmac, 6);
	memcpy(l3->smac, av->smac, 6);
	l3->vlan_present = av->vlan_present != 0;
	l3->vlan_tci = av->vlan_tci;
	l3->ipv6 = av->ipv6 != 0;
	memcpy(l3->sgid, av->sgid, 16);
	memcpy(l3->dgid, av->dgid, 16);
	l3->traffic_class = av->traffic_class;
	l3->hop_limit = av->hop_limit ? av->hop_limit : 64;
	l3->flow_label = av->flow_label & 0xfffff;
	l3->udp_sport = av->udp_sport ? av->udp_sport
				      : roce_udp_sport(av->flow_label & 0xfffff, lqpn, rqpn);
}

/* Header template for frames of this QP (towards the connected peer). */
static void
tmpl_init(struct xport_qp *qp)
{
	struct roce_pkt tp, *t = &tp;
	memset(t, 0, sizeof(*t));
	l3_from_av(&t->l3, &qp->cfg.av, qp->cfg.qpn, qp->cfg.dest_qpn);
	xport_cc_qos(qp->cfg.cc, &t->l3);
	t->pkey = qp->cfg.pkey;
	t->dest_qpn = qp->cfg.dest_qpn;
	qp->tmpl_l3 = t->l3;
	memcpy(qp->tmpl_bth, (const uint8_t *)t + sizeof(t->l3), sizeof(qp->tmpl_bth));
}

void
xport_frame_set_av(struct xport_frame *f, const struct wr_av *av, uint32_t lqpn, uint32_t rqpn)
{
	l3_from_av(&f->pkt.l3, av, lqpn, rqpn);
}

static void derive(struct xport_qp *qp);

static void
qp_reset_progress(struct xport_qp *qp)
{
	xport_req_reset(qp);
	xport_comp_reset(qp);
	xport_resp_reset(qp);
	memset(qp->timer_at, 0, sizeof(qp->timer_at));
	xport_cc_reset(qp);
	qp->last_wqe_event = false;
	qp->comm_est_event = false;
	qp->drained_event = false;
}

struct xport_qp *
xport_qp_init(void *mem, const struct xport_cfg *cfg)
{
	size_t size = xport_qp_mem_size(cfg);
	if (!mem || size == 0)
		return NULL;
	memset(mem, 0, size);
	struct xport_qp *qp = mem;
	qp->cfg = *cfg;
	qp->state = XPORT_STATE_RESET;
	derive(qp);
	qp->swqe = (struct xport_swqe *)((uint8_t *)mem + obj_size());
	qp->sq_mask = sq_slots_of(cfg) - 1;
	qp->sq_max_sge = (uint8_t)sq_sge_of(cfg);
	qp->swqe_stride = (uint32_t)swqe_bytes(qp->sq_max_sge);
	qp->rq_mask = cfg->rq ? (cfg->rq_size ? cfg->rq_size : cfg->rq->size) - 1 : 0;
	qp->resp.res = (struct xport_res *)((uint8_t *)mem + res_offset(cfg));
	qp->res_cap = res_slots_of(cfg);
	tmpl_init(qp);
	qp_reset_progress(qp);
	return qp;
}

/* Values derived from the configuration. */
static void
derive(struct xport_qp *qp)
{
	const struct xport_cfg *cfg = &qp->cfg;
	qp->mtu = roce_mtu_bytes(cfg->path_mtu);
	qp->mtu_shift = (uint8_t)(7 + cfg->path_mtu);
	qp->ack_req_every = cfg->ack_req_every ? cfg->ack_req_every : XPORT_ACK_REQ_EVERY;
	qp->max_unacked = cfg->max_unacked ? cfg->max_unacked : XPORT_MAX_UNACKED;
	if (qp->max_unacked > (1u << 22))
		qp->max_unacked = 1u << 22;
	qp->min_window = cfg->min_window ? cfg->min_window : XPORT_MIN_WINDOW;
	if (qp->min_window > qp->max_unacked)
		qp->min_window = qp->max_unacked;
	/* a live QP keeps its window, inside the new bounds */
	if (qp->req.window == 0 || qp->req.window > qp->max_unacked)
		qp->req.window = qp->max_unacked;
	if (qp->req.window < qp->min_window)
		qp->req.window = qp->min_window;
	if (qp->cfg.max_rd_atomic == 0)
		qp->cfg.max_rd_atomic = 1;
	qp->cfg.max_dest_rd_atomic = (uint8_t)res_slots_of(cfg); /* the ring's length */
	qp->ack_timeout_ns = cfg->type == XPORT_RC ? roce_ack_timeout_nsec(cfg->timeout) : 0;
}

/* Reverse responder resources [i, j). */
static void
res_reverse(struct xport_res *res, uint32_t i, uint32_t j)
{
	while (i + 1 < j) {
		struct xport_res t = res[i];
		res[i++] = res[--j];
		res[j] = t;
	}
}

/*
 * Make the responder resource ring @p n slots long (from xport_qp_modify(),
 * on the owner's thread between packets: never on the packet path). The
 * resources keep their age order, the oldest in slot 0; a shorter ring keeps
 * the newest @p n (a requester may not have more outstanding). The storage
 * moves to the heap when the QP has fewer than @p n slots.
 * @return 0, or -ENOMEM (nothing changed)
 */
static int
res_resize(struct xport_qp *qp, uint32_t n)
{
	struct xport_resp *r = &qp->resp;
	uint32_t old = qp->cfg.max_dest_rd_atomic, keep = old < n ? old : n;
	struct xport_res *res = r->res;

	if (n == old)
		return 0;
	if (n > qp->res_cap) {
		res = calloc(n, sizeof(*res));
		if (!res)
			return -ENOMEM;
	}
	/* oldest first: rotate [0, old) left by res_next, keep the newest */
	uint32_t k = r->res_next < old ? r->res_next : 0;
	res_reverse(r->res, 0, k);
	res_reverse(r->res, k, old);
	res_reverse(r->res, 0, old);
	memmove(res, r->res + (old - keep), keep * sizeof(*res));
	if (res != r->res) {
		if (qp->res_heap)
			free(r->res);
		r->res = res;
		qp->res_cap = n;
		qp->res_heap = true;
	}
	memset(res + keep, 0, (qp->res_cap - keep) * sizeof(*res));
	r->res_next = keep == n ? 0 : keep;
	r->res_emit = r->res_next; /* xport_resp_emit() scans from the oldest */
	r->res_pending = 0;
	for (uint32_t i = 0; i < keep; i++)
		r->res_pending += res[i].pending;
	return 0;
}

int
xport_qp_modify(struct xport_qp *qp, const struct xport_cfg *cfg)
{
	const struct xport_cfg *o = &qp->cfg;
	if (!cfg_valid(cfg) || cfg->type != o->type || cfg->xrc != o->xrc || cfg->qpn != o->qpn ||
	    cfg->sq != o->sq ||
	    cfg->rq != o->rq || cfg->srq != o->srq || cfg->send_cq != o->send_cq ||
	    cfg->recv_cq != o->recv_cq || cfg->mrs != o->mrs || cfg->handle != o->handle ||
	    sq_slots_of(cfg) != qp->sq_mask + 1 || sq_sge_of(cfg) != qp->sq_max_sge ||
	    (cfg->rq && (cfg->rq_size ? cfg->rq_size : cfg->rq->size) != qp->rq_mask + 1))
		return -EINVAL;
	if (res_resize(qp, res_slots_of(cfg)) != 0)
		return -ENOMEM;
	uint32_t sq_psn = o->sq_psn, rq_psn = o->rq_psn;
	uint16_t ip_id = qp->tmpl_l3.ip_id;
	uint8_t algo = o->cc ? o->cc->algo : XPORT_CC_NONE;
	qp->cfg = *cfg;
	if (!cfg->cc || cfg->cc->algo == XPORT_CC_NONE || cfg->cc->algo != algo)
		xport_cc_reset(qp); /* no (or another) reaction point: line rate */
	derive(qp);
	tmpl_init(qp);
	qp->tmpl_l3.ip_id = ip_id;
	if (qp->state == XPORT_STATE_RESET) {
		qp_reset_progress(qp); /* the PSNs start here */
	} else {
		/* live QP: the PSNs are progress, not configuration, except that
		 * RTR -> RTS carries the first PSN (IBV_QP_SQ_PSN) while the
		 * requester has sent nothing yet: it starts there */
		qp->cfg.rq_psn = rq_psn;
		if (qp->state == XPORT_STATE_RTR && cfg->sq_psn != sq_psn) {
			xport_req_reset(qp);
			xport_comp_reset(qp);
		} else {
			qp->cfg.sq_psn = sq_psn;
		}
	}
	return 0;
}

struct xport_qp *
xport_qp_create(const struct xport_cfg *cfg)
{
	size_t size = xport_qp_mem_size(cfg);
	if (size == 0)
		return NULL;
	void *mem = aligned_alloc(64, (size + 63) & ~(size_t)63);
	if (!mem)
		return NULL;
	struct xport_qp *qp = xport_qp_init(mem, cfg);
	if (!qp)
		free(mem);
	return qp;
}

void
xport_qp_fini(struct xport_qp *qp)
{
	if (qp && qp->res_heap) {
		free(qp->resp.res);
		qp->resp.res = NULL;
		qp->res_heap = false;
		qp->res_cap = 0;
	}
}

void
xport_qp_destroy(struct xport_qp *qp)
{
	xport_qp_fini(qp);
	free(qp);
}

/* ---- outputs ----------------------------------------------------------- */

void
xport_event(struct xport_out *out, enum xport_event_type type, uint8_t code, uint32_t handle)
{
	for (uint32_t i = 0; i < out->nevents; i++) {
		const struct xport_event *e = &out->events[i];
		if (e->type == type && e->code == code && e->handle == handle)
			return; /* already reported in this context */
	}
	if (out->nevents == XPORT_OUT_EVENTS)
		return; /* the caller sizes its flushes (see xport_out) */
	out->events[out->nevents++] = (struct xport_event){
		.type = (uint8_t)type, .code = code, .handle = handle };
}

/* Slow path of xport_cq_reserve(): the cached consumer index says full. */
struct cqe *
xport_cq_full(struct xport_qp *qp, struct xport_cq *cq, struct xport_out *out)
{
	struct spsc_ring *r = cq->ring;
	/* engine: sole producer */
	uint32_t prod = __atomic_load_n(&r->prod, __ATOMIC_RELAXED) + cq->staged;

	if (!cq->overflowed) {
		uint32_t size = cq_slots(cq);
		cq->cons_cache = __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE);
		if (prod - cq->cons_cache < size)
			return spsc_ring_slot_in(r, size - 1, sizeof(struct cqe), prod);
		/* CQ overrun -> affiliated async CQ_ERR, the QP goes to error */
		cq->overflowed = true;
		xport_event(out, XPORT_EV_ASYNC, ASYNC_CQ_ERR, cq->handle);
		xport_qp_enter_error(qp, XPORT_ERR_CQ_OVERFLOW, out);
	}
	cnt_inc(qp, XPORT_CNT_CQ_OVERFLOW);
	return NULL;
}

/* Slow path of xport_cq_commit(): the CQ is armed for notification. */
void
xport_cq_notify(struct xport_cq *cq, bool solicited, struct xport_out *out)
{
	uint32_t a = __atomic_load_n(cq->arm, __ATOMIC_ACQUIRE);
	if (a == XPORT_CQ_ARM_NEXT || (a == XPORT_CQ_ARM_SOLICITED && solicited)) {
		if (__atomic_exchange_n(cq->arm, XPORT_CQ_ARM_NONE, __ATOMIC_ACQ_REL))
			xport_event(out, XPORT_EV_CQ_NOTIFY, 0, cq->handle);
	}
}

bool
xport_cq_post(struct xport_qp *qp, struct xport_cq *cq, const struct cqe *c, bool solicited,
	      struct xport_out *out)
{
	struct cqe *slot = xport_cq_reserve(qp, cq, out);
	if (!slot)
		return false;
	*slot = *c;
	xport_cq_commit(cq, slot, solicited, out);
	return true;
}

void
xport_qp_enter_error(struct xport_qp *qp, enum xport_err why, struct xport_out *out)
{
	if (qp->state == XPORT_STATE_ERR)
		return;
	qp->state = XPORT_STATE_ERR;
	xport_event(out, XPORT_EV_QP_ERROR, (uint8_t)why, qp->cfg.handle);
	out->more = true; /* the flush runs in xport_qp_poll() */
}

/*
 * One of the engine's own WQEs of a tag matching rendezvous completed
 * (xport_resp.c resp_tm_first() starts it): never a send completion. The
 * READ: the entry's second completion on the receive CQ, TM_RECV with
 * DATA_VALID (byte_len rvh.len) or the READ's error status (the QP is in
 * error then, as after any failed READ, and a flushed READ completes with
 * WR_FLUSH_ERR: the entry's buffer is the application's again either
 * way), then the FIN SEND (the TMH the READ carries, inline). The FIN:
 * nothing (a failed FIN is the QP's error).
 * @return false if the QP went to error (CQ overflow)
 */
static bool
tm_rndv_complete(struct xport_qp *qp, const struct xport_swqe *w, uint64_t now,
		 struct xport_out *out)
{
	struct xport_tmh h = { .op = XPORT_TMH_RNDV, .len = w->length };
	struct xport_tm_entry hit = { .wr_id = w->wqe.wr_id };
	struct sq_wqe fin = { .wr_id = w->wqe.wr_id, .opcode = WR_SEND,
			      .send_flags = WR_FLAG_INLINE, .inline_len = XPORT_TMH_LEN };
	uint8_t status = w->status, err = w->err;
	struct xport_cq *cq = qp_recv_cq(qp);
	struct cqe *c;

	if (w->tm != SWQE_TM_RNDV_READ)
		return true;
	/* the shadow slot of w may take the FIN: copy what is needed first */
	memcpy(fin.inline_data, w->wqe.wr.rdma.head.inline_data, XPORT_TMH_LEN);
	c = cq ? xport_cq_reserve(qp, cq, out) : NULL;
	if (!c)
		return cq == NULL;
	*c = (struct cqe){
		.wr_id = hit.wr_id,
		.status = status,
		.opcode = WC_TM_RECV,
		.vendor_err = err,
		.qp_num = qp->cfg.qpn,
		.timestamp = now,
	};
	if (status == WC_SUCCESS)
		xport_tm_recv_cqe(c, XPORT_TM_RNDV, XPORT_TM_CQE_RNDV_DONE, &h, &hit, 0);
	xport_cq_commit(cq, c, false, out);
	if (status == WC_SUCCESS && qp->state != XPORT_STATE_ERR)
		xport_req_tm_inject(qp, SWQE_TM_FIN, &fin, XPORT_TMH_LEN);
	return true;
}

/*
 * Complete the WQE at the SQ head with its status (CQE when signaled or in
 * error: IBA 10.7.3.1 errors always complete) and give the slot back.
 * The slot is released before the CQE is published (both release stores,
 * in this order): an application that sees the CQE and posts at once finds
 * the room it just got back (max_send_wr 1). The CQE is built from the
 * shadow WQE, which only this lcore fetches into.
 * @return false if the QP went to error (CQ overflow)
 */
bool
xport_sq_complete_head(struct xport_qp *qp, uint64_t now, struct xport_out *out, bool stage)
{
	uint32_t head = qp->comp.head;
	const struct xport_swqe *w = swqe_at(qp, head);

	if (wr_kind_rd_atomic(w->kind) &&
	    (int32_t)(qp->req.cur - head) > 0 && qp->req.rd_inflight)
		qp->req.rd_inflight--;
	qp->req.kick = true; /* a limit (rd_atomic, fence, window) may have opened */
	qp->comp.head = head + 1;
	if (w->tm != SWQE_TM_NONE)
		qp->comp.skew++; /* the engine's own: no ring slot */
	else
		spsc_ring_release_to(qp->cfg.sq, qp->comp.head - qp->comp.skew);
	if ((int32_t)(qp->req.cur - qp->comp.head) < 0) {
		qp->req.cur = qp->comp.head;
		qp->req.offset = 0;
	}
	if (w->tm != SWQE_TM_NONE)
		return tm_rndv_complete(qp, w, now, out);
	if (!w->signaled && w->status == WC_SUCCESS)
		return true;
	struct cqe *c = xport_cq_reserve(qp, qp->cfg.send_cq, out);
	if (!c)
		return false;
	xport_sq_cqe(c, qp, w, now);
	xport_cq_stage(qp->cfg.send_cq, false, w->status);
	if (!stage)
		xport_cq_publish(qp->cfg.send_cq, out);
	return true;
}

/* ---- scatter/gather ---------------------------------------------------- */

uint32_t
xport_sg_total(const struct wr_sge *sg, uint32_t nsge)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < nsge; i++)
		total += sg[i].length;
	return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

/* Gather list of [offset, offset + len) of a WQE's SGEs (general case, indirect MRs). */
int
xport_sg_gather_slow(struct xport_qp *qp, const struct xport_swqe *w, uint32_t offset,
		     uint32_t len, struct xport_out *out, struct xport_frame *f)
{
	const struct wr_sge *sg = w->wqe.sg_list;
	uint32_t i = 0, n = 0, bounced = 0;
	uint8_t *host;

	while (offset >= sg[i].length) { /* offset < message length: terminates */
		offset -= sg[i].length;
		i++;
	}
	while (len) {
		uint32_t take = sg[i].length - offset;
		if (take > len)
			take = len;
		enum mr_status st = mr_check(qp->cfg.mrs, sg[i].lkey, qp->cfg.pd,
					     sg[i].addr + offset, take, 0, &host);
		if (st == MR_INDIRECT) {
			/* not mapped here: copy it into the frame's bounce slot */
			host = xport_bounce_read(qp, out, f, bounced, sg[i].lkey, host, take);
			if (!host)
				return -1;
			bounced += take;
		} else if (st != MR_OK) {
			return -1;
		}
		f->seg[n].addr = host;
		f->seg[n].len = take;
		n++;
		len -= take;
		offset = 0;
		i++;
	}
	f->nseg = n;
	return 0;
}

/* Place [offset, offset + len) into a scatter list (general case). */
enum mr_status
xport_sg_scatter_slow(struct xport_qp *qp, const struct wr_sge *sg, uint32_t nsge,
		      uint32_t offset, const uint8_t *src, uint32_t len)
{
	uint32_t i = 0;
	while (i < nsge && offset >= sg[i].length) {
		offset -= sg[i].length;
		i++;
	}
	while (len) {
		if (i >= nsge)
			return MR_ERR_RANGE;
		uint32_t put = sg[i].length - offset;
		if (put > len)
			put = len;
		enum mr_status st = xport_mr_write(qp, sg[i].lkey, sg[i].addr + offset,
						   MR_ACCESS_LOCAL_WRITE, src, put);
		if (st != MR_OK)
			return st;
		src += put;
		len -= put;
		offset = 0;
		i++;
	}
	return MR_OK;
}

/* ---- error state flush ------------------------------------------------- */

static void
flush_recv(struct xport_qp *qp, uint64_t wr_id, struct xport_out *out, uint64_t now)
{
	struct cqe c = {
		.wr_id = wr_id,
		.status = WC_WR_FLUSH_ERR,
		.opcode = WC_RECV,
		.vendor_err = XPORT_ERR_FLUSHED,
		.qp_num = qp->cfg.qpn,
		.timestamp = now,
	};
	struct xport_cq *cq = qp_recv_cq(qp);

	if (cq) /* an XRC SRQ destroyed meanwhile took its CQ's references along */
		xport_cq_post(qp, cq, &c, false, out);
}

/* Flush up to XPORT_FLUSH_BUDGET posted WQEs (IBA: all outstanding and
 * newly posted WRs complete with WR_FLUSH_ERR in the error state). */
static void
flush_step(struct xport_qp *qp, uint64_t now, struct xport_out *out)
{
	uint32_t budget = XPORT_FLUSH_BUDGET;
	struct spsc_ring *sq = qp->cfg.sq;
	uint32_t prod = spsc_ring_prod_acquire(sq);
	/* fetched (the engine's own WQEs too), then the ring's unfetched */
	uint32_t avail = prod - (qp->comp.head - qp->req.skew);

	/* A producer more than a ring ahead broke the ring (the requester
	 * fetches nothing then, xport_req.c): flush only what was fetched, or
	 * its client's one store would keep this lcore flushing forever. */
	if (prod - (qp->comp.head - qp->comp.skew) > qp->sq_mask + 1)
		avail = qp->req.fetch - qp->comp.head;
	while (avail && budget) {
		uint32_t head = qp->comp.head;
		struct xport_swqe *w = swqe_at(qp, head);
		if ((int32_t)(qp->req.fetch - head) <= 0) {
			/* never fetched: take wr_id/opcode from the ring */
			const struct sq_wqe *rw = sq_ring_at(qp, head - qp->req.skew);
			w->tm = SWQE_TM_NONE;
			w->wqe.wr_id = rw->wr_id;
			w->wqe.opcode = rw->opcode;
			w->wc_opcode = wr_opcode_desc(w->wqe.opcode).wc_opcode;
			w->status = WC_SUCCESS;
			w->kind = SWQE_SEND;
			w->length = 0;
			qp->req.fetch = head + 1;
		}
		if (w->status == WC_SUCCESS) {
			w->status = WC_WR_FLUSH_ERR;
			w->err = XPORT_ERR_FLUSHED;
			w->length = 0;
		}
		xport_sq_complete_head(qp, now, out, false);
		avail--;
		budget--;
	}
	qp->req.cur = qp->req.fetch = qp->comp.head;
	qp->req.offset = 0;
	qp->req.rd_inflight = 0;
	qp->req.tm_resv = 0;

	xport_resp_flush(qp, now, out);
	if (qp->resp.have_recv) {
		flush_recv(qp, qp->resp.recv.wr_id, out, now);
		qp->resp.have_recv = false;
	}
	if (qp->cfg.rq) {
		struct spsc_ring *rq = qp->cfg.rq;
		uint32_t used = spsc_ring_prod_acquire(rq) - spsc_ring_cons_index(rq);

		if (used > qp->rq_mask + 1)
			used = 0; /* overrun: a broken ring, as the SQ's above */
		while (budget && used--) {
			const struct rq_wqe *rw =
				spsc_ring_slot_in(rq, qp->rq_mask, xport_rq_stride(qp->cfg.rq_stride),
						  spsc_ring_cons_index(rq));
			uint64_t wr_id = rw->wr_id;

			spsc_ring_release(rq, 1); /* room before the CQE (xport_sq_complete_head) */
			flush_recv(qp, wr_id, out, now);
			budget--;
		}
	} else if (qp->cfg.srq && !qp->last_wqe_event) {
		/* an SRQ QP in error -> Last WQE Reached (affiliated async event) */
		qp->last_wqe_event = true;
		xport_event(out, XPORT_EV_ASYNC, ASYNC_QP_LAST_WQE_REACHED, qp->cfg.handle);
	}
	if (budget == 0)
		out->more = true;
}

/* ---- timers ------------------------------------------------------------ */

static bool
timer_action(struct xport_qp *qp, struct xport_out *out, enum xport_timer t, uint64_t at)
{
	if (out->ntimers == XPORT_OUT_TIMERS) {
		out->more = true;
		return false;
	}
	out->timers[out->ntimers++] = (struct xport_timer_action){
		.qp_handle = qp->cfg.handle,
		.timer = (uint8_t)t,
		.arm = at != 0,
		.expires_ns = at,
	};
	qp->timer_at[t] = at;
	return true;
}

static bool
rc_outstanding(const struct xport_qp *qp)
{
	return psn_lt(qp->comp.psn, qp->req.psn_max) || qp->comp.head != qp->req.cur;
}

/* Bring the armed timers in line with what the QP needs now. */
static void
sync_timers(struct xport_qp *qp, struct xport_out *out)
{
	bool live = qp->state == XPORT_STATE_RTS || qp->state == XPORT_STATE_SQD;
	uint64_t at = qp->timer_at[XPORT_TIMER_RETRY];
	uint64_t want = 0;

	if (live && qp->req.rnr_wait) {
		want = qp->req.rnr_until;
		if (at != want)
			timer_action(qp, out, XPORT_TIMER_RETRY, want);
	} else {
		if (live && qp->ack_timeout_ns && rc_outstanding(qp))
			want = qp->comp.progress_ns + qp->ack_timeout_ns;
		/* lazy: an earlier deadline stays armed and is re-checked on expiry */
		if (want ? (at == 0 || at > want) : at != 0)
			timer_action(qp, out, XPORT_TIMER_RETRY, want);
	}
	uint64_t pace = (live && qp->req.pace_wait) ? qp->req.pace_next : 0;
	if (pace != qp->timer_at[XPORT_TIMER_PACE])
		timer_action(qp, out, XPORT_TIMER_PACE, pace);
	uint64_t cc = live ? xport_cc_deadline(qp) : 0;
	if (cc != qp->timer_at[XPORT_TIMER_CC])
		timer_action(qp, out, XPORT_TIMER_CC, cc);
}

/* ---- activation -------------------------------------------------------- */

/* SQ Drained (affiliated async event) once nothing is outstanding in SQD. */
static void
check_drained(struct xport_qp *qp, struct xport_out *out)
{
	if (qp->state == XPORT_STATE_SQD && !qp->drained_event &&
	    qp->comp.head == qp->req.cur && qp->req.offset == 0 &&
	    !psn_lt(qp->comp.psn, qp->req.psn_max)) {
		qp->drained_event = true;
		xport_event(out, XPORT_EV_ASYNC, ASYNC_SQ_DRAINED, qp->cfg.handle);
	}
}

static void
activate(struct xport_qp *qp, uint64_t now, struct xport_out *out)
{
	switch (qp->state) {
	case XPORT_STATE_RTS:
	case XPORT_STATE_SQD:
		xport_resp_emit(qp, now, out);
		xport_req_run(qp, now, out);
		check_drained(qp, out);
		break;
	case XPORT_STATE_RTR:
		xport_resp_emit(qp, now, out);
		break;
	case XPORT_STATE_ERR:
		flush_step(qp, now, out);
		break;
	default:
		break;
	}
	sync_timers(qp, out);
}

/* After received packets: only the work they can have created. */
static void
activate_after_rx(struct xport_qp *qp, uint64_t now, struct xport_out *out)
{
	if (qp->state != XPORT_STATE_RTS && qp->state != XPORT_STATE_SQD &&
	    qp->state != XPORT_STATE_RTR) {
		activate(qp, now, out);
		return;
	}
	if (qp->resp.ack_pending || qp->resp.res_pending)
		xport_resp_emit(qp, now, out);
	if (qp->req.kick && qp->state != XPORT_STATE_RTR)
		xport_req_run(qp, now, out);
	if (__builtin_expect(qp->state == XPORT_STATE_SQD, 0))
		check_drained(qp, out);
	if (qp->cfg.type == XPORT_RC || qp->rp.limited)
		sync_timers(qp, out);
}

void
xport_qp_poll(struct xport_qp *qp, uint64_t now, struct xport_out *out)
{
	activate(qp, now, out);
}

bool
xport_qp_idle(const struct xport_qp *qp)
{
	const struct xport_req *req = &qp->req;

	/* SQD reports its drain, ERR flushes, RESET is never polled */
	if (qp->state != XPORT_STATE_RTS && qp->state != XPORT_STATE_RTR)
		return false;
	/* responder: an ACK/NAK or READ responses still to send */
	if (qp->resp.ack_pending || qp->resp.res_pending)
		return false;
	/*
	 * requester: a rewind, or a fetched WQE held by a limit an ACK lifts
	 * (window, READ/ATOMIC depth, fence). An RNR back-off or the pacer
	 * ends with a timer of its own: waiting for it needs no poll.
	 */
	if (req->kick || (req->cur != req->fetch && !req->rnr_wait && !req->pace_wait))
		return false;
	/* nothing posted since (in RTR too: such a post waits for RTS). The
	 * requester's last run just read the index and found nothing: not
	 * again, it is a line the application's core writes on every post and
	 * a poll of a caught-up QP would miss on it twice (issue 18). A post
	 * since then is seen by the next poll, long before IDLE_AFTER_NS of
	 * idle polls lets the QP go idle (the daemon's engine_xport.c). */
	if (req->caught_up)
		return true;
	return spsc_ring_prod_acquire(qp->cfg.sq) == req->fetch - req->skew;
}

uint32_t
xport_qp_sq_fetched(const struct xport_qp *qp)
{
	return qp->req.fetch - qp->req.skew; /* a ring index */
}

static uint8_t
transport_of(const struct xport_qp *qp)
{
	switch (qp->cfg.type) {
	case XPORT_RC:
		return qp->cfg.xrc ? ROCE_TRANSPORT_XRC : ROCE_TRANSPORT_RC;
	case XPORT_UC:
		return ROCE_TRANSPORT_UC;
	case XPORT_UD:
		return ROCE_TRANSPORT_UD;
	default:
		return 0xff; /* RAW_PACKET: no RoCE packet is for it (xport_qp_raw_rx()) */
	}
}

static bool
gid_eq(const uint8_t *a, const uint8_t *b)
{
	uint64_t a0, a1, b0, b1;
	memcpy(&a0, a, 8);
	memcpy(&a1, a + 8, 8);
	memcpy(&b0, b, 8);
	memcpy(&b1, b + 8, 8);
	return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

/*
 * IBA 10.9.3 (P_Key matching): the low 15 bits equal and not 0, and at least
 * one of the two a full member (bit 15): two limited members may not talk.
 */
static bool
pkey_match(uint16_t a, uint16_t b)
{
	return (a & 0x7fff) != 0 && ((a ^ b) & 0x7fff) == 0 && ((a | b) & 0x8000) != 0;
}

/* What rx_filter() needs of the QP, read once per burst (its configuration
 * does not change within one). */
struct rx_match {
	uint32_t qpn;
	uint16_t pkey;
	uint8_t transport;     /* transport_of() */
	bool pkey_self;        /* pkey_match(pkey, pkey): a packet with the QP's own key */
	bool check_sgid;       /* connected: the source GID is the peer's */
};

static void
rx_match_init(struct rx_match *m, const struct xport_qp *qp)
{
	m->qpn = qp->cfg.qpn;
	m->pkey = qp->cfg.pkey;
	m->transport = transport_of(qp);
	m->pkey_self = pkey_match(qp->cfg.pkey, qp->cfg.pkey);
	m->check_sgid = qp->cfg.type != XPORT_UD;
}

/* Checks common to both directions; @return the counter to drop with, or
 * XPORT_CNT_COUNT to accept. */
static enum xport_counter
rx_filter(const struct xport_qp *qp, const struct rx_match *m, const struct roce_pkt *pkt)
{
	if (pkt->dest_qpn != m->qpn)
		return XPORT_CNT_DROP_DEST_QP;
	if (roce_opcode_transport(pkt->opcode) != m->transport)
		return XPORT_CNT_DROP_TRANSPORT;
	if (pkt->pkey == m->pkey ? !m->pkey_self : !pkey_match(pkt->pkey, m->pkey))
		return XPORT_CNT_DROP_PKEY;
	if (m->check_sgid && !gid_eq(pkt->l3.sgid, qp->cfg.av.dgid))
		return XPORT_CNT_DROP_SOURCE;
	return XPORT_CNT_COUNT;
}

void
xport_qp_rx_burst(struct xport_qp *qp, const struct roce_pkt *const pkts[], uint32_t n,
		  uint64_t now, struct xport_out *out)
{
	struct rx_match m;
	uint32_t rx_pkts = 0;
	uint64_t rx_bytes = 0;

	rx_match_init(&m, qp);
	for (uint32_t i = 0; i < n; i++) {
		const struct roce_pkt *pkt = pkts[i];
		const struct roce_opcode_desc *d = roce_opcode_desc(pkt->opcode);

		if (__builtin_expect(pkt->opcode == ROCE_OP_CNP, 0)) {
			/* congestion notification for this QP as a sender (xport_cc.c) */
			if (pkt->dest_qpn != qp->cfg.qpn)
				cnt_inc(qp, XPORT_CNT_DROP_DEST_QP);
			else
				xport_cc_rx_cnp(qp, pkt, now);
			continue;
		}
		enum xport_counter drop = rx_filter(qp, &m, pkt);

		if (drop != XPORT_CNT_COUNT || !d) {
			cnt_inc(qp, d ? drop : XPORT_CNT_DROP_TRANSPORT);
			continue;
		}
		bool request = (d->kind & ROCE_KIND_REQUEST) != 0;
		struct roce_pkt rc_twin;
		if (__builtin_expect(qp->cfg.xrc != XPORT_XRC_NONE, 0)) {
			/* INI only sends, TGT only receives (IBTA 9.8.2) */
			if (request != (qp->cfg.xrc == XPORT_XRC_TGT)) {
				cnt_inc(qp, XPORT_CNT_DROP_XRC_ROLE);
				continue;
			}
			/* the roles run XRC packets as their RC twins (opcode & 0x1f) */
			rc_twin = *pkt;
			rc_twin.opcode &= (uint8_t)(ROCE_TRANSPORT_UC - 1);
			pkt = &rc_twin;
		}
		if (qp->state == XPORT_STATE_RESET || qp->state == XPORT_STATE_ERR ||
		    (!request && qp->state == XPORT_STATE_RTR)) {
			cnt_inc(qp, XPORT_CNT_DROP_STATE);
			continue;
		}
		rx_pkts++; /* counted once for the burst, below */
		rx_bytes += pkt->payload_len;
		/* ECN Congestion Experienced (RFC 3168 section 5): the notification point */
		if (__builtin_expect((pkt->l3.traffic_class & 3) == 3, 0))
			xport_cc_rx_ce(qp, pkt, now, out);
		if (__builtin_expect(qp->state == XPORT_STATE_RTR && !qp->comm_est_event, 0)) {
			/* first packet received in RTR -> Communication Established */
			qp->comm_est_event = true;
			xport_event(out, XPORT_EV_ASYNC, ASYNC_COMM_EST, qp->cfg.handle);
		}
		if (request)
			xport_resp_rx(qp, pkt, now, out);
		else
			xport_comp_rx(qp, pkt, now, out);
	}
	/* the CQEs the burst staged (completer, responder): one release store
	 * and one fence per CQ and burst, not per packet; still before this
	 * call returns, so before any ACK or response it built leaves */
	xport_cq_publish(qp->cfg.send_cq, out);
	xport_cq_publish(qp->cfg.recv_cq, out);
	if (rx_pkts) {
		cnt_add(qp, XPORT_CNT_RX_PKTS, rx_pkts);
		cnt_add(qp, XPORT_CNT_RX_BYTES, rx_bytes);
	}
	activate_after_rx(qp, now, out);
}

void
xport_qp_rx(struct xport_qp *qp, const struct roce_pkt *pkt, uint64_t now, struct xport_out *out)
{
	xport_qp_rx_burst(qp, &pkt, 1, now, out);
}

void
xport_qp_timer_expired(struct xport_qp *qp, enum xport_timer timer, uint64_t now,
		       struct xport_out *out)
{
	if ((unsigned)timer >= XPORT_TIMER_COUNT)
		return;
	if (qp->timer_at[timer] == 0 || now < qp->timer_at[timer]) {
		activate(qp, now, out); /* stale expiry: nothing armed that is due */
		return;
	}
	qp->timer_at[timer] = 0;
	if (qp->state == XPORT_STATE_RTS || qp->state == XPORT_STATE_SQD) {
		if (timer == XPORT_TIMER_CC) {
			xport_cc_timer(qp, now);
		} else if (timer == XPORT_TIMER_PACE) {
			qp->req.pace_wait = false;
		} else if (qp->req.rnr_wait) {
			if (now >= qp->req.rnr_until) {
				qp->req.rnr_wait = false; /* resend from the NAKed PSN */
				cnt_inc(qp, XPORT_CNT_RNR_RETRY);
				qp->comp.progress_ns = now; /* the ACK timer restarts */
			}
		} else {
			xport_comp_timeout(qp, now, out);
		}
	}
	activate(qp, now, out);
}

void
xport_qp_set_state(struct xport_qp *qp, enum xport_state state, uint64_t now,
		   struct xport_out *out)
{
	switch (state) {
	case XPORT_STATE_RESET:
		/* to RESET: posted WRs are removed without completions (IBA 10.3.1) */
		qp->state = XPORT_STATE_RESET;
		spsc_ring_release_to(qp->cfg.sq, spsc_ring_prod_acquire(qp->cfg.sq));
		if (qp->cfg.rq)
			spsc_ring_release_to(qp->cfg.rq, spsc_ring_prod_acquire(qp->cfg.rq));
		for (int t = 0; t < XPORT_TIMER_COUNT; t++)
			if (qp->timer_at[t])
				timer_action(qp, out, (enum xport_timer)t, 0);
		qp_reset_progress(qp);
		break;
	case XPORT_STATE_ERR:
		xport_qp_enter_error(qp, XPORT_ERR_MODIFY, out);
		break;
	case XPORT_STATE_RTR:
	case XPORT_STATE_RTS:
	case XPORT_STATE_SQD:
		if (qp->state == XPORT_STATE_RESET) {
			/* first activation: sync progress with the configured PSNs */
			qp_reset_progress(qp);
		}
		if (qp->state != XPORT_STATE_ERR) {
			if (state == XPORT_STATE_SQD && qp->state != XPORT_STATE_SQD)
				qp->drained_event = false;
			qp->state = (uint8_t)state;
		}
		break;
	}
	if (state == XPORT_STATE_RTS)
		qp->comp.progress_ns = now;
	activate(qp, now, out);
}

void
xport_qp_cq_error(struct xport_qp *qp, struct xport_cq *cq, uint64_t now, struct xport_out *out)
{
	cq->overflowed = true;
	xport_event(out, XPORT_EV_ASYNC, ASYNC_CQ_ERR, cq->handle);
	xport_qp_enter_error(qp, XPORT_ERR_CQ_OVERFLOW, out);
	activate(qp, now, out);
}
