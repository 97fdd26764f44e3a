/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Responder: executes inbound requests and owes responses
 * (IBTA Vol. 1 9.7, 9.9; Linux rxe_resp.c).
 *
 * Per packet: sequence check (new / duplicate / out of sequence), opcode
 * sequence and validity, resources (receive WQE; READ/ATOMIC resource),
 * lengths, R_Key check before any byte moves, then execution. Responses
 * are not sent from the packet path: the packet path records what is owed
 * (responder resources with pending READ responses / ATOMIC ACKs, and one
 * coalesced ACK/NAK), and xport_resp_emit() sends it in PSN order, bounded
 * by the output space. A READ is answered in as many activations as it
 * needs; the ACK owed for later requests waits behind it.
 *
 * Error classes (IBTA 9.9.3): B (sequence, RNR) -> NAK, QP stays;
 * C (invalid request, access, length, operational) -> NAK then QP error;
 * D (duplicate not in the resources) -> silent drop. UC/UD never NAK:
 * they drop (and count).
 *
 * XRC (IBTA 9.8.2): a TGT QP runs its requests as RC (xport.c hands their
 * RC twins over); the XRCETH picks the SRQ, whose receive WQEs, CQ and PD
 * serve the message (qp_srq(), qp_recv_cq(), qp_resp_pd()).
 */
#include <string.h>

#include "xport_internal.h"

#define RESP_STEP_LIST(X) \
	X(CHECK_PSN, "new, duplicate or out of sequence") \
	X(WRITE_ONLY, "an in-order RC WRITE ONLY into a direct region: every check, place, owe the ACK") \
	X(SEND_ONLY, "an in-order RC SEND ONLY (with immediate): the checks, then EXECUTE") \
	X(READ_REQUEST, "an in-order RC READ of a direct region: the checks, then EXECUTE") \
	X(CHECK_OP_SEQ, "FIRST/MIDDLE/LAST order") \
	X(CHECK_XRC, "XRC TGT: the XRCETH names a live SRQ of the QP's domain") \
	X(CHECK_OP_VALID, "QP access flags; UD Q_Key") \
	X(CHECK_RESOURCE, "receive WQE for SEND and WRITE-with-immediate; READ/ATOMIC resource") \
	X(CHECK_LENGTH, "payload vs MTU, message vs buffer and RETH, atomic alignment") \
	X(CHECK_RKEY, "R_Key, PD, access, range before any byte moves") \
	X(EXECUTE, "place data, run the atomic, record the READ") \
	X(ATOMIC_WRITE, "store the 8 bytes at once, owe the empty READ response") \
	X(FLUSH, "order every earlier write before the response, owe it") \
	X(COMPLETE, "receive completion at the end of the message") \
	X(ACKNOWLEDGE, "owe an ACK when AckReq is set") \
	X(DUPLICATE, "re-ACK SEND/WRITE, replay READ/ATOMIC from the resources") \
	X(NAK_SEQ, "owe one PSN sequence error NAK") \
	X(RNR, "owe an RNR NAK carrying min_rnr_timer") \
	X(CLASS_C, "owe an error NAK, then the QP goes to error") \
	X(UC_DROP, "UC: drop the message in progress") \
	X(RECV_ERROR, "UC/UD: complete the receive WQE in error") \
	X(DROP, "exit: drop the packet (counted)") \
	X(DONE, "exit")

enum resp_step {
#define RESP_STEP_ENUM(sym, desc) RESP_##sym,
	RESP_STEP_LIST(RESP_STEP_ENUM)
#undef RESP_STEP_ENUM
	RESP_STEP_COUNT
};

static const char *const resp_step_names[] = {
#define RESP_STEP_NAME(sym, desc) #sym,
	RESP_STEP_LIST(RESP_STEP_NAME)
#undef RESP_STEP_NAME
};

const char *
xport_resp_step_name(unsigned step)
{
	return step < RESP_STEP_COUNT ? resp_step_names[step] : "?";
}

/* Test an opcode property of the packet being processed. */
#define HAS(ctx, KIND) (((ctx)->kind & ROCE_KIND_##KIND) != 0)

/* Requests that take a responder resource (replayed, never executed twice). */
#define ROCE_KIND_RESOURCE \
	(ROCE_KIND_READ | ROCE_KIND_ATOMIC | ROCE_KIND_ATOMIC_WRITE | ROCE_KIND_FLUSH)

/* MR/QP access an RDMA FLUSH of placement type @p plt needs (IBTA 1.5; rxe
 * check_qp_attr_access, check_rkey). */
static uint32_t
flush_access(uint8_t plt)
{
	return ((plt & ROCE_FLUSH_GLOBAL) ? MR_ACCESS_FLUSH_GLOBAL : 0) |
	       ((plt & ROCE_FLUSH_PERSISTENT) ? MR_ACCESS_FLUSH_PERSISTENT : 0);
}

struct resp_ctx {
	const struct roce_pkt *pkt;
	uint16_t kind;            /* enum roce_kind_bit set of the opcode (tested directly) */
	uint8_t nak;              /* CLASS_C syndrome */
	uint8_t recv_status;      /* status for the receive WQE in CLASS_C / RECV_ERROR */
	enum xport_counter drop;  /* DROP reason */
	uint8_t *host;            /* checked address (ATOMIC) */
	enum mr_status host_st;   /* MR_OK, or MR_INDIRECT: host is in the MR's owner process */
};

void
xport_resp_reset(struct xport_qp *qp)
{
	struct xport_res *res = qp->resp.res; /* storage, not progress */

	memset(&qp->resp, 0, sizeof(qp->resp));
	memset(res, 0, qp->res_cap * sizeof(*res));
	qp->resp.res = res;
	qp->resp.epsn = qp->cfg.rq_psn & ROCE_PSN_MASK;
}

void
xport_resp_flush(struct xport_qp *qp, uint64_t now, struct xport_out *out)
{
	(void)now;
	(void)out;
	struct xport_resp *r = &qp->resp;
	r->res_pending = 0;
	for (unsigned i = 0; i < qp->cfg.max_dest_rd_atomic; i++)
		r->res[i].pending = false;
	r->ack_pending = false;
	r->msg = RESP_MSG_NONE;
}

static inline void
owe(struct xport_qp *qp, uint8_t syndrome, uint32_t psn)
{
	qp->resp.ack_pending = true;
	qp->resp.ack_syndrome = syndrome;
	qp->resp.ack_psn = psn;
}

/*
 * @return receive WQEs published in @p ring (of @p size slots) beyond its
 * consumer index @p cons. @p seen is the engine's copy of the untrusted producer
 * index: its line, which the application's core writes on every post, is
 * read again only once the WQEs it showed are taken (as the requester's SQ
 * index, req_get_wqe()); an application that posts a receive per
 * completion would otherwise cost a line from its core per message. The
 * acquire of that read covers the WQEs it showed.
 */
static uint32_t
recv_avail(const struct spsc_ring *ring, uint32_t size, uint32_t cons, uint32_t *seen)
{
	uint32_t used = *seen - cons;

	if ((int32_t)used <= 0 || used > size) {
		*seen = spsc_ring_prod_acquire(ring);
		used = *seen - cons;
		if ((int32_t)used <= 0)
			return 0; /* nothing, or an index behind ours */
	}
	return used > size ? size : used;
}

/* Take the next receive WQE from the SRQ or the RQ. */
bool
xport_resp_take_recv(struct xport_qp *qp, struct xport_out *out)
{
	struct xport_resp *r = &qp->resp;
	struct xport_srq *srq = qp_srq(qp);
	struct spsc_ring *ring = srq ? srq->ring : qp->cfg.rq;
	uint32_t size = srq ? srq_slots(srq) : qp->rq_mask + 1;
	uint32_t stride = xport_rq_stride(srq ? srq->stride : qp->cfg.rq_stride);
	uint32_t cons = spsc_ring_cons_index(ring);
	uint32_t avail = recv_avail(ring, size, cons, srq ? &srq->prod_seen : &r->rq_prod_seen);

	if (avail == 0)
		return false;
	const struct rq_wqe *src = spsc_ring_slot_in(ring, size - 1, stride, cons);
	r->recv.wr_id = src->wr_id;
	r->recv.num_sge = src->num_sge;
	if (r->recv.num_sge > rq_wqe_max_sge(stride))
		r->recv.num_sge = 0; /* malformed (beyond its slot): capacity 0, the message will not fit */
	uint64_t cap = 0;
	for (uint32_t i = 0; i < r->recv.num_sge; i++) {
		struct wr_sge sge = src->sg_list[i]; /* read once: the capacity is what was copied */

		r->recv.sg_list[i] = sge;
		cap += sge.length;
	}
	spsc_ring_release(ring, 1);
	r->recv_cap = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
	r->have_recv = true;
	r->tm_v = 0;
	r->tm_skip = 0;
	/* SRQ limit event when the count falls below the limit (one shot) */
	if (srq && srq->limit_armed && spsc_ring_count_in(ring, size) < srq->limit) {
		srq->limit_armed = false;
		xport_event(out, XPORT_EV_ASYNC, ASYNC_SRQ_LIMIT_REACHED, srq->handle);
	}
	return true;
}

static enum resp_step
resp_check_psn(struct xport_qp *qp, struct resp_ctx *ctx)
{
	struct xport_resp *r = &qp->resp;
	uint32_t psn = ctx->pkt->psn;

	switch (qp->cfg.type) {
	case XPORT_UD:
		return RESP_CHECK_OP_VALID;
	case XPORT_UC:
		if (psn != r->epsn) {
			/* UC: a packet was lost, the message in progress is dropped */
			if (r->msg != RESP_MSG_NONE)
				cnt_inc(qp, XPORT_CNT_DROP_UC_MSG);
			r->msg = RESP_MSG_NONE;
			r->epsn = psn;
		}
		return RESP_CHECK_OP_SEQ;
	default:
		break;
	}
	if (r->error_after_ack) {
		ctx->drop = XPORT_CNT_DROP_STATE;
		return RESP_DROP;
	}
	int32_t d = roce_psn_cmp(psn, r->epsn);
	if (d < 0)
		return RESP_DUPLICATE;
	if (d > 0) {
		ctx->drop = XPORT_CNT_DROP_PSN_OOS;
		return r->nak_sent ? RESP_DROP : RESP_NAK_SEQ;
	}
	r->nak_sent = false;
	return RESP_CHECK_OP_SEQ;
}

static enum resp_step
resp_check_op_seq(struct xport_qp *qp, struct resp_ctx *ctx)
{
	struct xport_resp *r = &qp->resp;
	bool ok;

	switch (r->msg) {
	case RESP_MSG_SEND:
		ok = HAS(ctx, SEND) && !HAS(ctx, FIRST);
		break;
	case RESP_MSG_WRITE:
		ok = HAS(ctx, WRITE) && !HAS(ctx, FIRST);
		break;
	default:
		ok = HAS(ctx, FIRST);
		break;
	}
	if (ok)
		return qp->cfg.xrc == XPORT_XRC_TGT ? RESP_CHECK_XRC : RESP_CHECK_OP_VALID;
	if (qp_is_rc(qp)) {
		ctx->nak = ROCE_AETH_NAK_INVALID_REQ;
		return RESP_CLASS_C;
	}
	if HAS(ctx, FIRST) { /* UC: the previous message lost its end; start over */
		cnt_inc(qp, XPORT_CNT_DROP_UC_MSG);
		r->msg = RESP_MSG_NONE;
		return RESP_CHECK_OP_VALID;
	}
	return RESP_UC_DROP;
}

/*
 * XRC TGT (IBTA 9.8.2, 9.3.5): the XRCETH names the XRC SRQ of the request.
 * An SRQ that does not exist (or is being destroyed) or belongs to another
 * XRC domain than the QP is an invalid request (class C: NAK, the QP goes
 * to error); so is a message whose packets name different SRQs.
 */
static enum resp_step
resp_check_xrc(struct xport_qp *qp, struct resp_ctx *ctx)
{
	struct xport_resp *r = &qp->resp;
	uint32_t srqn = ctx->pkt->xrc_srqn;
	struct xport_srq *s;
	uint32_t live;

	if (!HAS(ctx, FIRST)) {
		if (qp_srq(qp) != NULL && qp->resp.xsrq_srqn == srqn)
			return RESP_CHECK_OP_VALID;
		goto refuse;
	}
	s = qp->cfg.xrc_srq(qp->cfg.xrc_ctx, srqn);
	live = s ? __atomic_load_n(&s->xrc_live, __ATOMIC_ACQUIRE) : 0;
	/* xrc_live first: the rest of the SRQ is read only once it is ours */
	if (live == 0 || s->xrcd != qp->cfg.xrcd)
		goto refuse;
	r->xsrq = s;
	r->xsrq_handle = live;
	r->xsrq_srqn = srqn;
	return RESP_CHECK_OP_VALID;
refuse:
	cnt_inc(qp, XPORT_CNT_NAK_XRC_SRQ_TX);
	ctx->nak = ROCE_AETH_NAK_INVALID_REQ;
	return RESP_CLASS_C;
}

static enum resp_step
resp_check_op_valid(struct xport_qp *qp, struct resp_ctx *ctx)
{
	uint32_t need = 0;

	if (qp->cfg.type == XPORT_UD) {
		/* drop on Q_Key mismatch */
		if (ctx->pkt->deth.qkey != qp->cfg.qkey) {
			ctx->drop = XPORT_CNT_DROP_QKEY;
			return RESP_DROP;
		}
		return RESP_CHECK_RESOURCE;
	}
	/* every WRITE packet, not only the FIRST: modify_qp may take the right
	 * away mid-message (rxe check_op_valid: RXE_WRITE_MASK) */
	if (HAS(ctx, WRITE) || HAS(ctx, ATOMIC_WRITE))
		need = MR_ACCESS_REMOTE_WRITE;
	else if HAS(ctx, FLUSH)
		need = flush_access(ctx->pkt->feth.placement);
	else if HAS(ctx, READ)
		need = MR_ACCESS_REMOTE_READ;
	else if HAS(ctx, ATOMIC)
		need = MR_ACCESS_REMOTE_ATOMIC;
	if ((qp->cfg.access_flags & need) == need)
		return RESP_CHECK_RESOURCE;
	if (qp_is_rc(qp)) {
		ctx->nak = ROCE_AETH_NAK_INVALID_REQ;
		return RESP_CLASS_C;
	}
	return RESP_UC_DROP;
}

static enum resp_step class_c_or_drop(struct xport_qp *qp, struct resp_ctx *ctx, uint8_t nak);

/*
 * A rendezvous SEND matched entry @p idx (xport_tm_peek() RNDV, room for
 * the READ checked): the entry is consumed and becomes the receive, but
 * nothing of the message is placed (recv_cap unbounded); the message's
 * completion (MATCH) starts the READ (post_recv_cqe()). rvh.len past the
 * entry's SGEs is a local length error: the entry completes with
 * LOC_LEN_ERR and the sender gets an invalid request NAK.
 */
static enum resp_step
resp_tm_rndv(struct xport_qp *qp, struct resp_ctx *ctx, uint32_t idx, const struct xport_tmh *h)
{
	struct xport_resp *r = &qp->resp;
	struct xport_tm_entry hit;
	uint64_t cap = 0;

	xport_tm_commit(qp_srq(qp)->tm, XPORT_TM_RNDV, idx, &hit);
	r->recv.wr_id = hit.wr_id;
	r->recv.num_sge = hit.num_sge;
	for (uint32_t i = 0; i < hit.num_sge; i++) {
		r->recv.sg_list[i] = hit.sg[i];
		cap += hit.sg[i].length;
	}
	r->recv_cap = UINT32_MAX;
	r->have_recv = true;
	r->tm_skip = 0;
	r->tm_v = (uint8_t)(XPORT_TM_RNDV + 1);
	r->tm_h = *h;
	cnt_inc(qp, XPORT_CNT_TM_RNDV);
	if (h->len > cap || h->len > (1u << 31)) {
		ctx->recv_status = WC_LOC_LEN_ERR;
		ctx->nak = ROCE_AETH_NAK_INVALID_REQ;
		return RESP_CLASS_C;
	}
	qp->req.tm_resv = 1; /* the slot is the READ's (xport_req_tm_room()) */
	return RESP_CHECK_LENGTH;
}

/*
 * The QP's own READ of a matched rendezvous (its MATCH completion is out):
 * rvh.len bytes from rvh.va/rkey into the entry's SGEs (the completer
 * checks each response against them with their lkeys, as for any READ),
 * then the FIN (xport.c tm_rndv_complete()), a TMH FIN with the tag and
 * app_ctx of the RNDV.
 */
static void
tm_rndv_start(struct xport_qp *qp)
{
	struct xport_resp *r = &qp->resp;
	const struct xport_tmh *h = &r->tm_h;
	struct sq_wqe rd = { .wr_id = r->recv.wr_id, .opcode = WR_RDMA_READ,
			     .num_sge = (uint8_t)r->recv.num_sge };
	uint8_t fin[XPORT_TMH_LEN] = { XPORT_TMH_FIN };

	rd.wr.rdma.remote_addr = h->va;
	rd.wr.rdma.rkey = h->rkey;
	memcpy(rd.sg_list, r->recv.sg_list, r->recv.num_sge * sizeof(rd.sg_list[0]));
	for (int i = 0; i < 4; i++)
		fin[4 + i] = (uint8_t)(h->app_ctx >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		fin[8 + i] = (uint8_t)(h->tag >> (56 - 8 * i));
	_Static_assert(sizeof(rd.wr.rdma.head.inline_data) == XPORT_TMH_LEN, "the FIN's TMH");
	memcpy(rd.wr.rdma.head.inline_data, fin, XPORT_TMH_LEN);
	qp->req.tm_resv = 0;
	xport_req_tm_inject(qp, SWQE_TM_RNDV_READ, &rd, h->len);
}

/*
 * The first packet of a SEND to a QP of a tag matching SRQ (xport_tm.h):
 * its TMH decides where the message goes. EAGER: into the matched entry,
 * past the TMH; unexpected (RNDV too: no rendezvous here, software reads
 * the RVH) and NO_TAG: whole into the SRQ's next receive. Nothing changes
 * before the data has a place: no receive is RNR with the list as it was.
 * A TMH that does not parse is an invalid request (counted).
 */
static enum resp_step
resp_tm_first(struct xport_qp *qp, struct resp_ctx *ctx, struct xport_out *out)
{
	const struct roce_pkt *pkt = ctx->pkt;
	struct xport_resp *r = &qp->resp;
	struct xport_tm *tm = qp_srq(qp)->tm;
	struct xport_tm_entry hit;
	struct xport_tmh h;
	enum xport_tm_verdict v;
	uint32_t idx = 0;

	if (xport_tmh_parse(pkt->payload, pkt->payload_len, &h) != 0) {
		cnt_inc(qp, XPORT_CNT_TM_BAD_TMH);
		return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_INVALID_REQ);
	}
	v = xport_tm_peek(tm, &h, !qp_is_rc(qp), &idx);
	if (v == XPORT_TM_RNDV) {
		/* the QP's own READ needs RTS and a slot of the send shadow: else
		 * RNR, the list untouched (the sender retries) */
		if (qp->state != XPORT_STATE_RTS || !xport_req_tm_room(qp))
			return RESP_RNR;
		return resp_tm_rndv(qp, ctx, idx, &h);
	}
	if (v == XPORT_TM_EAGER) {
		uint64_t cap = XPORT_TMH_LEN; /* the TMH is not placed: it takes no room */

		xport_tm_commit(tm, v, idx, &hit);
		r->recv.wr_id = hit.wr_id;
		r->recv.num_sge = hit.num_sge;
		for (uint32_t i = 0; i < hit.num_sge; i++) {
			r->recv.sg_list[i] = hit.sg[i];
			cap += hit.sg[i].length;
		}
		r->recv_cap = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
		r->have_recv = true;
		r->tm_skip = XPORT_TMH_LEN;
	} else {
		if (!xport_resp_take_recv(qp, out)) {
			if (qp_is_rc(qp))
				return RESP_RNR;
			ctx->drop = XPORT_CNT_DROP_NO_RECV;
			return qp->cfg.type == XPORT_UC ? RESP_UC_DROP : RESP_DROP;
		}
		xport_tm_commit(tm, v, idx, NULL);
	}
	r->tm_v = (uint8_t)(v + 1);
	r->tm_h = h;
	return RESP_CHECK_LENGTH;
}

static enum resp_step
resp_check_resource(struct xport_qp *qp, struct resp_ctx *ctx, struct xport_out *out)
{
	struct xport_resp *r = &qp->resp;
	bool need_recv = (HAS(ctx, SEND) && HAS(ctx, FIRST)) ||
			 (HAS(ctx, WRITE) && HAS(ctx, IMM) && HAS(ctx, LAST));

	if (need_recv && !r->have_recv && HAS(ctx, SEND) && qp_srq(qp) != NULL &&
	    qp_srq(qp)->tm != NULL) {
		enum resp_step step = resp_tm_first(qp, ctx, out);

		if (step != RESP_CHECK_LENGTH)
			return step;
	} else if (need_recv && !r->have_recv && !xport_resp_take_recv(qp, out)) {
		if (qp_is_rc(qp))
			return RESP_RNR;
		ctx->drop = XPORT_CNT_DROP_NO_RECV;
		if (qp->cfg.type == XPORT_UC)
			r->msg = RESP_MSG_NONE;
		return qp->cfg.type == XPORT_UC ? RESP_UC_DROP : RESP_DROP;
	}
	if (ctx->kind & ROCE_KIND_RESOURCE) {
		/* the oldest resource is reused (rxe get_rsp_res). Still sending its
		 * original responses = more RD/ATOMIC than max_dest_rd_atomic; a
		 * queued replay is stale: a new PSN means the requester moved past it. */
		const struct xport_res *oldest = &r->res[r->res_next];
		if (oldest->pending && !oldest->replay) {
			ctx->nak = ROCE_AETH_NAK_INVALID_REQ;
			return RESP_CLASS_C;
		}
	}
	return RESP_CHECK_LENGTH;
}

static enum resp_step
class_c_or_drop(struct xport_qp *qp, struct resp_ctx *ctx, uint8_t nak)
{
	if (qp_is_rc(qp)) {
		ctx->nak = nak;
		return RESP_CLASS_C;
	}
	return RESP_UC_DROP;
}

static enum resp_step
resp_check_length(struct xport_qp *qp, struct resp_ctx *ctx)
{
	const struct roce_pkt *pkt = ctx->pkt;
	struct xport_resp *r = &qp->resp;
	uint32_t len = pkt->payload_len;

	/* an RDMA message is at most 2^31 bytes: a larger RETH DMA length is an
	 * invalid request, for WRITE as for READ (rxe check_length) */
	if (roce_pkt_has(pkt, ROCE_HDR_RETH) && pkt->reth.length > (1u << 31))
		return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_INVALID_REQ);
	if HAS(ctx, READ)
		return RESP_CHECK_RKEY;
	if HAS(ctx, ATOMIC_WRITE) {
		/* IBTA 1.5: 8 bytes (the parser checked the payload), naturally aligned */
		if (pkt->reth.length != 8 || (pkt->reth.va & 7))
			return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_INVALID_REQ);
		return RESP_CHECK_RKEY;
	}
	if HAS(ctx, FLUSH) {
		/* a placement type of neither or unknown bits, a reserved selectivity */
		uint8_t plt = pkt->feth.placement;
		if (plt == 0 || (plt & ~(ROCE_FLUSH_GLOBAL | ROCE_FLUSH_PERSISTENT)) ||
		    pkt->feth.selectivity > ROCE_FLUSH_MR)
			return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_INVALID_REQ);
		return RESP_CHECK_RKEY;
	}
	if HAS(ctx, ATOMIC) {
		if (pkt->atmeth.va & 7) /* misaligned atomic -> invalid request */
			return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_INVALID_REQ);
		return RESP_CHECK_RKEY;
	}
	/* FIRST and MIDDLE carry exactly one MTU, LAST/ONLY at most one */
	if (len > qp->mtu || (!HAS(ctx, LAST) && len != qp->mtu)) {
		if (qp->cfg.type == XPORT_UD) {
			ctx->drop = XPORT_CNT_DROP_UD_LEN;
			return RESP_DROP;
		}
		return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_INVALID_REQ);
	}
	if HAS(ctx, SEND) {
		uint32_t have = HAS(ctx, FIRST) ? 0 : r->msg_len;
		uint32_t grh = qp->cfg.type == XPORT_UD ? XPORT_UD_GRH_LEN : 0;
		if ((uint64_t)have + grh + len > r->recv_cap) {
			ctx->recv_status = WC_LOC_LEN_ERR;
			if (qp->cfg.type == XPORT_UD) {
				cnt_inc(qp, XPORT_CNT_DROP_UD_LEN);
				return RESP_RECV_ERROR;
			}
			return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_INVALID_REQ);
		}
		return RESP_EXECUTE;
	}
	/* WRITE: the RETH length bounds the message and must match it at the end */
	uint64_t total = (uint64_t)(HAS(ctx, FIRST) ? 0 : r->msg_len) + len;
	uint32_t dma_len = HAS(ctx, FIRST) ? pkt->reth.length : r->write_len;
	if (total > dma_len || (HAS(ctx, LAST) && total != dma_len))
		return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_INVALID_REQ);
	return HAS(ctx, FIRST) ? RESP_CHECK_RKEY : RESP_EXECUTE;
}

static enum resp_step
resp_check_rkey(struct xport_qp *qp, struct resp_ctx *ctx)
{
	const struct roce_pkt *pkt = ctx->pkt;
	uint64_t va;
	uint32_t rkey, len, access;

	if HAS(ctx, ATOMIC) {
		va = pkt->atmeth.va;
		rkey = pkt->atmeth.rkey;
		len = 8;
		access = MR_ACCESS_REMOTE_ATOMIC;
	} else if HAS(ctx, FLUSH) {
		va = pkt->reth.va;
		rkey = pkt->reth.rkey;
		len = pkt->reth.length;
		access = flush_access(pkt->feth.placement);
		if (pkt->feth.selectivity == ROCE_FLUSH_MR) {
			/* the whole region: key, PD and access, no range (rxe: an MR
			 * key; a window key is refused) */
			const struct mr_entry *e = mw_key_is_mw(rkey) ? NULL
					: mr_lookup(qp->cfg.mrs, rkey);
			va = e ? e->iova : 0;
			len = 0;
			if (!e)
				return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_REM_ACC_ERR);
		}
	} else {
		va = pkt->reth.va;
		rkey = pkt->reth.rkey;
		len = pkt->reth.length;
		access = HAS(ctx, READ) ? MR_ACCESS_REMOTE_READ : MR_ACCESS_REMOTE_WRITE;
		if (len == 0)
			return RESP_EXECUTE; /* a zero-length RDMA checks no R_Key */
	}
	/* a FLUSH of a range checks its R_Key even when the range is empty */
	ctx->host_st = xport_key_check(qp, rkey, va, len, access, &ctx->host);
	if (ctx->host_st != MR_OK && ctx->host_st != MR_INDIRECT)
		return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_REM_ACC_ERR);
	/*
	 * The wire VA was checked for 8-byte alignment (check_length), but the
	 * host address is what the CPU touches: an IOVA the application chose
	 * apart from its buffer can put it anywhere (a split lock on x86, a
	 * SIGBUS on arm64). Misaligned: invalid request, as rxe does for the
	 * virtual address it maps (IBA 9.4.5 ATOMIC: naturally aligned).
	 */
	if ((HAS(ctx, ATOMIC) || HAS(ctx, ATOMIC_WRITE)) && ((uintptr_t)ctx->host & 7) != 0) {
		cnt_inc(qp, XPORT_CNT_ATOMIC_HOST_MISALIGNED);
		return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_INVALID_REQ);
	}
	if HAS(ctx, ATOMIC_WRITE)
		return RESP_ATOMIC_WRITE;
	return HAS(ctx, FLUSH) ? RESP_FLUSH : RESP_EXECUTE;
}

/* The 40-byte GRH at the head of a UD receive buffer: the
 * IPv6 header, or 20 zero bytes then the IPv4 header (as Linux does). */
static enum mr_status
write_ud_grh(struct xport_qp *qp, const struct roce_pkt *pkt)
{
	uint8_t hdr[128];
	uint8_t grh[XPORT_UD_GRH_LEN] = { 0 };
	size_t l2 = sizeof(struct roce_eth_hdr) +
		    (pkt->l3.vlan_present ? sizeof(struct roce_vlan_hdr) : 0);

	if (roce_build_headers(pkt, hdr, sizeof(hdr)) != 0) {
		if (pkt->l3.ipv6)
			memcpy(grh, hdr + l2, sizeof(struct roce_ipv6_hdr));
		else
			memcpy(grh + 20, hdr + l2, sizeof(struct roce_ipv4_hdr));
	}
	return xport_sg_scatter(qp, qp->resp.recv.sg_list, qp->resp.recv.num_sge, 0, grh,
				sizeof(grh));
}

static void
record_resource(struct xport_qp *qp, const struct xport_res *res)
{
	struct xport_resp *r = &qp->resp;
	uint32_t n = qp->cfg.max_dest_rd_atomic;
	if (r->res[r->res_next].pending) {
		/* only a stale replay gets here (resp_check_resource): drop it */
		r->res[r->res_next].pending = false;
		r->res_pending--;
		cnt_inc(qp, XPORT_CNT_DROP_STALE_REPLAY);
		if (r->res_emit == r->res_next) /* the next slot is the oldest now */
			r->res_emit = r->res_next + 1 == n ? 0 : r->res_next + 1;
	}
	if (r->res_pending == 0)
		r->res_emit = r->res_next; /* the oldest with responses to send */
	r->res[r->res_next] = *res;
	if (++r->res_next == n)
		r->res_next = 0;
	r->res_pending++;
	/* the response covers every ACK or NAK owed before it */
	if (r->ack_pending && psn_le(r->ack_psn, res->first_psn))
		r->ack_pending = false;
}

static enum resp_step
resp_execute(struct xport_qp *qp, struct resp_ctx *ctx)
{
	const struct roce_pkt *pkt = ctx->pkt;
	struct xport_resp *r = &qp->resp;
	uint32_t psn = pkt->psn;

	if HAS(ctx, READ) {
		uint32_t len = pkt->reth.length;
		uint32_t n = len ? (len + qp->mtu - 1) >> qp->mtu_shift : 1;
		struct xport_res res = {
			.type = RES_READ, .pending = true,
			.first_psn = psn, .last_psn = roce_psn_add(psn, n - 1), .next_psn = psn,
			.va = pkt->reth.va, .rkey = pkt->reth.rkey, .length = len,
		};
		record_resource(qp, &res);
		r->epsn = roce_psn_add(psn, n);
		r->msn++;
		return RESP_DONE;
	}
	if HAS(ctx, ATOMIC) {
		/* executed once, on the owning lcore; the application may read concurrently */
		bool cas = pkt->opcode == ROCE_OP_RC_COMPARE_SWAP;
		uint64_t orig;
		if (__builtin_expect(ctx->host_st == MR_OK, 1)) {
			uint64_t *p = (uint64_t *)(void *)ctx->host;
			if (cas) {
				orig = pkt->atmeth.compare;
				__atomic_compare_exchange_n(p, &orig, pkt->atmeth.swap_add, false,
							    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			} else {
				orig = __atomic_fetch_add(p, pkt->atmeth.swap_add, __ATOMIC_SEQ_CST);
			}
		} else if (xport_fallback(qp, mr_indirect_atomic(qp->cfg.mrs, pkt->atmeth.rkey,
								  ctx->host, cas, pkt->atmeth.compare,
								  pkt->atmeth.swap_add, &orig)) != MR_OK) {
			/* not atomic against the owner's CPU (mr.h); failed: owner gone */
			return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_REM_ACC_ERR);
		}
		struct xport_res res = {
			.type = RES_ATOMIC, .pending = true,
			.first_psn = psn, .last_psn = psn, .next_psn = psn,
			.va = pkt->atmeth.va, .rkey = pkt->atmeth.rkey, .length = 8,
			.atomic_orig = orig,
		};
		record_resource(qp, &res);
		r->epsn = roce_psn_add(psn, 1);
		r->msn++;
		return RESP_DONE;
	}
	uint32_t len = pkt->payload_len;
	if HAS(ctx, FIRST) {
		r->msg_len = 0;
		r->msg = HAS(ctx, LAST) ? RESP_MSG_NONE : (HAS(ctx, SEND) ? RESP_MSG_SEND : RESP_MSG_WRITE);
		if HAS(ctx, WRITE) {
			r->write_va = pkt->reth.va;
			r->write_rkey = pkt->reth.rkey;
			r->write_len = pkt->reth.length;
		}
	} else if HAS(ctx, LAST) {
		r->msg = RESP_MSG_NONE;
	}
	if HAS(ctx, SEND) {
		if (qp->cfg.type == XPORT_UD) {
			if (write_ud_grh(qp, pkt) != MR_OK)
				goto op_err;
			r->msg_len = XPORT_UD_GRH_LEN;
		}
		/* tag matching EAGER: the TMH heads the first packet, the entry gets the rest */
		uint32_t skip = HAS(ctx, FIRST) ? r->tm_skip : 0;
		uint32_t off = HAS(ctx, FIRST) ? r->msg_len : r->msg_len - r->tm_skip;
		/* rendezvous: the headers only, nothing is placed (the READ brings the data) */
		if (r->tm_v != XPORT_TM_RNDV + 1 && len > skip && xport_sg_scatter(qp, r->recv.sg_list, r->recv.num_sge, off,
						   pkt->payload + skip, len - skip) != MR_OK)
			goto op_err;
	} else if (len) {
		/* FIRST/ONLY: checked for the whole message (resp_check_rkey); later
		 * packets check their part again (the key may have been invalidated
		 * meanwhile), as does every packet of an indirect region */
		if (HAS(ctx, FIRST) && ctx->host_st == MR_OK)
			memcpy(ctx->host, pkt->payload, len);
		else if (xport_mr_write(qp, r->write_rkey, r->write_va + r->msg_len,
					MR_ACCESS_REMOTE_WRITE, pkt->payload, len) != MR_OK)
			return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_REM_ACC_ERR);
	}
	r->msg_len += len;
	if (qp->cfg.type != XPORT_UD)
		r->epsn = roce_psn_add(psn, 1);
	if HAS(ctx, LAST) {
		r->msn++;
		if (HAS(ctx, SEND) || HAS(ctx, IMM))
			return RESP_COMPLETE;
	}
	return RESP_ACKNOWLEDGE;
op_err:
	/* the receive buffer is not writable: local protection at the
	 * responder, remote operational error for the requester (9.9.3.1.3) */
	ctx->recv_status = WC_LOC_PROT_ERR;
	if (qp->cfg.type == XPORT_UD)
		return RESP_RECV_ERROR;
	return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_REM_OP_ERR);
}

/* Record the executed ATOMIC WRITE or FLUSH at @p psn; its response is owed. */
static enum resp_step
owe_empty_read_resp(struct xport_qp *qp, uint32_t psn)
{
	struct xport_res res = {
		.type = RES_EMPTY_READ_RESP, .pending = true,
		.first_psn = psn, .last_psn = psn, .next_psn = psn,
	};

	record_resource(qp, &res);
	qp->resp.epsn = roce_psn_add(psn, 1);
	qp->resp.msn++;
	return RESP_DONE;
}

/*
 * RDMA ATOMIC WRITE (IBTA 1.5; rxe atomic_write_reply): the 8 payload bytes,
 * as they are on the wire, replace the aligned word in one store, so a
 * reader on the application's CPU sees the old or the new value, never a
 * mix. Executed once; a duplicate replays the response only.
 */
static enum resp_step
resp_atomic_write(struct xport_qp *qp, struct resp_ctx *ctx)
{
	const struct roce_pkt *pkt = ctx->pkt;
	uint64_t v;

	memcpy(&v, pkt->payload, sizeof(v));
	if (__builtin_expect(ctx->host_st == MR_OK, 1))
		__atomic_store_n((uint64_t *)(void *)ctx->host, v, __ATOMIC_SEQ_CST);
	else if (xport_fallback(qp, mr_indirect_write(qp->cfg.mrs, pkt->reth.rkey, ctx->host,
						      &v, sizeof(v))) != MR_OK)
		/* one pwrite of the owner's memory: not atomic against its CPU (mr.h) */
		return class_c_or_drop(qp, ctx, ROCE_AETH_NAK_REM_ACC_ERR);
	cnt_inc(qp, XPORT_CNT_ATOMIC_WRITE_RX);
	return owe_empty_read_resp(qp, pkt->psn);
}

/*
 * RDMA FLUSH (IBTA 1.5; rxe process_flush). Every earlier request of this
 * QP was placed by a CPU store of this lcore into ordinary memory, so
 * global visibility is a full fence before the response leaves. There is
 * no persistent memory here: a region never gets FLUSH_PERSISTENT access
 * (the daemon refuses it at registration, as rxe does off pmem), so a
 * persistent flush fails its key check with a remote access error.
 */
static enum resp_step
resp_flush(struct xport_qp *qp, struct resp_ctx *ctx)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	cnt_inc(qp, XPORT_CNT_FLUSH_RX);
	return owe_empty_read_resp(qp, ctx->pkt->psn);
}

static bool
post_recv_cqe(struct xport_qp *qp, struct resp_ctx *ctx, uint8_t status, uint64_t now,
	      struct xport_out *out)
{
	struct xport_resp *r = &qp->resp;
	const struct roce_pkt *pkt = ctx->pkt;
	struct xport_cq *cq = qp_recv_cq(qp);
	struct cqe *c = cq ? xport_cq_reserve(qp, cq, out) : NULL;

	r->have_recv = false;
	if (!c)
		return false; /* CQ overflow: the QP is in error (or its XRC SRQ went) */
	uint32_t flags = 0, imm = 0;
	if (status == WC_SUCCESS) {
		if (HAS(ctx, IMM)) {
			imm = pkt->imm;
			flags = WC_FLAG_WITH_IMM;
		} else if (HAS(ctx, INV)) {
			imm = pkt->ieth_rkey;
			flags = WC_FLAG_WITH_INV;
		}
		if (qp->cfg.type == XPORT_UD)
			flags |= WC_FLAG_GRH;
	}
	*c = (struct cqe){
		.wr_id = r->recv.wr_id,
		.status = status,
		.opcode = HAS(ctx, WRITE) ? WC_RECV_RDMA_WITH_IMM : WC_RECV,
		.vendor_err = status == WC_SUCCESS ? XPORT_ERR_NONE : XPORT_ERR_RESP_CLASS_C,
		.byte_len = status != WC_SUCCESS ? 0 : HAS(ctx, WRITE) ? r->write_len : r->msg_len,
		.imm_data = imm,
		.qp_num = qp->cfg.qpn,
		.src_qp = qp->cfg.type == XPORT_UD ? pkt->deth.src_qpn : 0,
		.wc_flags = flags,
		.timestamp = now,
	};
	bool rndv = r->tm_v == XPORT_TM_RNDV + 1;
	if (r->tm_v != 0 && status == WC_SUCCESS) {
		struct xport_tm_entry hit = { .wr_id = r->recv.wr_id };

		xport_tm_recv_cqe(c, (enum xport_tm_verdict)(r->tm_v - 1), XPORT_TM_CQE_ARRIVED,
				  &r->tm_h, &hit, r->msg_len);
	} else if (r->tm_v == XPORT_TM_EAGER + 1 || rndv) {
		c->opcode = WC_TM_RECV; /* a matched entry failed (too long, not writable) */
	}
	/* published with the burst's others as xport_qp_rx_burst() returns (an
	 * XRC SRQ's CQ at once: the next request may name another SRQ) */
	if (__builtin_expect(qp->cfg.xrc == XPORT_XRC_TGT, 0))
		xport_cq_commit(cq, c, pkt->se, out);
	else
		xport_cq_stage(cq, pkt->se, status);
	if (rndv && status == WC_SUCCESS)
		tm_rndv_start(qp);
	r->tm_v = 0;
	r->tm_skip = 0;
	return true;
}

static enum resp_step
resp_complete(struct xport_qp *qp, struct resp_ctx *ctx, uint64_t now, struct xport_out *out)
{
	if (HAS(ctx, INV) && xport_invalidate(qp, ctx->pkt->ieth_rkey) != 0) {
		/* SEND with Invalidate of a key we cannot invalidate: unknown, of
		 * another PD or QP, a type 1 window, or one the peer may not
		 * invalidate (a region of ibv_reg_mr, as rxe: only
		 * fast-registration MRs and type 2 windows) */
		cnt_inc(qp, XPORT_CNT_INV_REFUSED);
		ctx->recv_status = WC_REM_INV_REQ_ERR;
		ctx->nak = ROCE_AETH_NAK_INVALID_REQ;
		return RESP_CLASS_C;
	}
	if (!post_recv_cqe(qp, ctx, WC_SUCCESS, now, out))
		return RESP_DONE; /* CQ overflow: the QP is in error */
	return RESP_ACKNOWLEDGE;
}

/*
 * Short cuts for the common cases, for an RC QP without XRC and a
 * one-packet message at the expected PSN with no message in progress:
 * - WRITE_ONLY, CHECK_PSN ... ACKNOWLEDGE in one step: an RDMA WRITE ONLY
 *   without immediate whose RETH length is the payload (1 byte to one
 *   MTU) on a QP granting remote write, its R_Key good for the range and
 *   direct memory (a window's key too);
 * - SEND_ONLY, the checks CHECK_PSN ... CHECK_LENGTH, then EXECUTE: a SEND
 *   ONLY, with immediate or not (no invalidate), of at most one MTU,
 *   without tag matching, fitting its receive WQE;
 * - READ_REQUEST, the same for an RDMA READ request of 1 byte to 2^31 on
 *   a QP granting remote read, its R_Key good for the range and direct
 *   memory, the oldest responder resource free to take.
 * A short cut changes nothing before its checks passed, but for what the
 * general steps would do first as well (take the receive WQE); a packet
 * that fails one goes through the general steps from CHECK_PSN, which
 * find the same and answer it (RNR, NAK, drop, indirect region).
 */
static enum resp_step
resp_first_step(const struct xport_qp *qp, const struct roce_pkt *pkt)
{
	const struct xport_resp *r = &qp->resp;
	uint32_t len = pkt->payload_len;
	enum resp_step step;

	switch (pkt->opcode) {
	case ROCE_OP_RC_RDMA_WRITE_ONLY:
		if (!(qp->cfg.access_flags & MR_ACCESS_REMOTE_WRITE) || len != pkt->reth.length ||
		    len - 1 >= qp->mtu)
			return RESP_CHECK_PSN;
		step = RESP_WRITE_ONLY;
		break;
	case ROCE_OP_RC_SEND_ONLY:
	case ROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE:
		if (len > qp->mtu || (qp->cfg.srq && qp->cfg.srq->tm))
			return RESP_CHECK_PSN;
		step = RESP_SEND_ONLY;
		break;
	case ROCE_OP_RC_RDMA_READ_REQUEST: {
		const struct xport_res *oldest = &r->res[r->res_next];

		if (!(qp->cfg.access_flags & MR_ACCESS_REMOTE_READ) || pkt->reth.length == 0 ||
		    pkt->reth.length > (1u << 31) || (oldest->pending && !oldest->replay))
			return RESP_CHECK_PSN;
		step = RESP_READ_REQUEST;
		break;
	}
	default:
		return RESP_CHECK_PSN;
	}
	if (qp->cfg.type != XPORT_RC || qp->cfg.xrc == XPORT_XRC_TGT || pkt->psn != r->epsn ||
	    r->msg != RESP_MSG_NONE || r->error_after_ack)
		return RESP_CHECK_PSN;
	return step;
}

static enum resp_step
resp_write_only(struct xport_qp *qp, struct resp_ctx *ctx)
{
	const struct roce_pkt *pkt = ctx->pkt;
	struct xport_resp *r = &qp->resp;
	uint32_t len = pkt->payload_len;
	uint8_t *host;

	if (xport_key_check(qp, pkt->reth.rkey, pkt->reth.va, len, MR_ACCESS_REMOTE_WRITE, &host) !=
	    MR_OK)
		return RESP_CHECK_PSN;
	r->nak_sent = false;
	r->write_va = pkt->reth.va;
	r->write_rkey = pkt->reth.rkey;
	r->write_len = len;
	memcpy(host, pkt->payload, len);
	r->msg_len = len;
	r->epsn = roce_psn_add(pkt->psn, 1);
	r->msn++;
	if (pkt->ack_req)
		owe(qp, ROCE_AETH_ACK_UNLIMITED, pkt->psn); /* coalesced: 9.7.5.1.2 */
	return RESP_DONE;
}

static enum resp_step
resp_send_only(struct xport_qp *qp, struct resp_ctx *ctx, struct xport_out *out)
{
	struct xport_resp *r = &qp->resp;

	if (!r->have_recv && !xport_resp_take_recv(qp, out))
		return RESP_CHECK_PSN; /* RNR */
	if (ctx->pkt->payload_len > r->recv_cap)
		return RESP_CHECK_PSN; /* the receive WQE is taken, as CHECK_RESOURCE takes it */
	r->nak_sent = false;
	return RESP_EXECUTE;
}

static enum resp_step
resp_read_request(struct xport_qp *qp, struct resp_ctx *ctx)
{
	const struct roce_pkt *pkt = ctx->pkt;
	uint8_t *host;

	if (xport_key_check(qp, pkt->reth.rkey, pkt->reth.va, pkt->reth.length,
			    MR_ACCESS_REMOTE_READ, &host) != MR_OK)
		return RESP_CHECK_PSN;
	qp->resp.nak_sent = false;
	return RESP_EXECUTE;
}

static enum resp_step
resp_acknowledge(struct xport_qp *qp, struct resp_ctx *ctx)
{
	/* ACK coalescing: the latest AckReq PSN wins (9.7.5.1.2) */
	if (qp_is_rc(qp) && ctx->pkt->ack_req)
		owe(qp, ROCE_AETH_ACK_UNLIMITED, ctx->pkt->psn);
	return RESP_DONE;
}

static struct xport_res *
find_resource(struct xport_qp *qp, uint8_t type, uint32_t psn)
{
	for (unsigned i = 0; i < qp->cfg.max_dest_rd_atomic; i++) {
		struct xport_res *res = &qp->resp.res[i];
		if (res->type == type && psn_le(res->first_psn, psn) && psn_le(psn, res->last_psn))
			return res;
	}
	return NULL;
}

static enum resp_step
resp_duplicate(struct xport_qp *qp, struct resp_ctx *ctx)
{
	const struct roce_pkt *pkt = ctx->pkt;
	struct xport_resp *r = &qp->resp;
	struct xport_res *res;

	cnt_inc(qp, XPORT_CNT_DUP_REQ);
	ctx->drop = XPORT_CNT_DROP_DUP_UNKNOWN;
	if (HAS(ctx, SEND) || HAS(ctx, WRITE)) {
		/* C9-105: not executed again, acknowledged with ePSN - 1 */
		owe(qp, ROCE_AETH_ACK_UNLIMITED, roce_psn_add(r->epsn, ROCE_PSN_MASK));
		return RESP_DONE;
	}
	if HAS(ctx, READ) {
		res = find_resource(qp, RES_READ, pkt->psn);
		if (!res)
			return RESP_DROP;
		/* the retry must ask for the rest of the original request */
		uint64_t off = (uint64_t)roce_psn_diff(pkt->psn, res->first_psn) << qp->mtu_shift;
		if (pkt->reth.rkey != res->rkey || pkt->reth.va != res->va + off ||
		    (uint64_t)pkt->reth.length + off != res->length)
			return RESP_DROP;
		if (res->pending && psn_le(res->next_psn, pkt->psn))
			return RESP_DONE; /* still to be sent anyway */
		res->next_psn = pkt->psn;
		res->replay = true;
		if (!res->pending) {
			res->pending = true;
			r->res_pending++;
			r->res_emit = r->res_next; /* rescan from the oldest */
		}
		cnt_inc(qp, XPORT_CNT_DUP_READ_REPLAY);
		return RESP_DONE;
	}
	/* ATOMIC (ATOMIC WRITE, FLUSH): replay the saved response, never execute again */
	res = find_resource(qp, HAS(ctx, ATOMIC) ? RES_ATOMIC : RES_EMPTY_READ_RESP, pkt->psn);
	if (!res)
		return RESP_DROP;
	if (!res->pending) {
		res->pending = true;
		res->replay = true;
		r->res_pending++;
		r->res_emit = r->res_next; /* rescan from the oldest */
	}
	cnt_inc(qp, XPORT_CNT_DUP_ATOMIC_REPLAY);
	return RESP_DONE;
}

static enum resp_step
resp_nak_seq(struct xport_qp *qp)
{
	/* one NAK per gap, then silence until ePSN arrives (rxe sent_psn_nak) */
	qp->resp.nak_sent = true;
	owe(qp, ROCE_AETH_NAK_PSN_SEQ_ERROR, qp->resp.epsn);
	return RESP_DONE;
}

static enum resp_step
resp_rnr(struct xport_qp *qp, struct resp_ctx *ctx)
{
	/* 9.7.5.2.8: RNR NAK; the following packets are out of sequence: drop them */
	qp->resp.nak_sent = true;
	owe(qp, (uint8_t)(ROCE_AETH_RNR_NAK | qp->cfg.min_rnr_timer), ctx->pkt->psn);
	return RESP_DONE;
}

static enum resp_step
resp_class_c(struct xport_qp *qp, struct resp_ctx *ctx, uint64_t now, struct xport_out *out)
{
	struct xport_resp *r = &qp->resp;

	if (r->have_recv && ctx->recv_status != WC_SUCCESS && (HAS(ctx, SEND) || HAS(ctx, IMM)))
		post_recv_cqe(qp, ctx, ctx->recv_status, now, out);
	owe(qp, ctx->nak, ctx->pkt->psn);
	r->error_after_ack = true;
	r->error_code = ctx->nak == ROCE_AETH_NAK_REM_OP_ERR ? XPORT_ERR_RESP_OP
							      : XPORT_ERR_RESP_CLASS_C;
	return RESP_DONE;
}

static enum resp_step
resp_uc_drop(struct xport_qp *qp, struct resp_ctx *ctx)
{
	qp->resp.msg = RESP_MSG_NONE;
	qp->resp.epsn = roce_psn_add(ctx->pkt->psn, 1);
	cnt_inc(qp, XPORT_CNT_DROP_UC_MSG);
	return RESP_DONE;
}

static enum resp_step
resp_recv_error(struct xport_qp *qp, struct resp_ctx *ctx, uint64_t now, struct xport_out *out)
{
	post_recv_cqe(qp, ctx, ctx->recv_status, now, out);
	if (qp->cfg.type == XPORT_UC)
		return resp_uc_drop(qp, ctx);
	return RESP_DONE;
}

void
xport_resp_rx(struct xport_qp *qp, const struct roce_pkt *pkt, uint64_t now,
	      struct xport_out *out)
{
	struct resp_ctx ctx = {
		.pkt = pkt,
		.kind = roce_opcode_table[pkt->opcode].kind,
	};
	enum resp_step step = resp_first_step(qp, pkt);

	for (;;) {
		switch (step) {
		case RESP_CHECK_PSN:
			step = resp_check_psn(qp, &ctx);
			break;
		case RESP_WRITE_ONLY:
			step = resp_write_only(qp, &ctx);
			break;
		case RESP_SEND_ONLY:
			step = resp_send_only(qp, &ctx, out);
			break;
		case RESP_READ_REQUEST:
			step = resp_read_request(qp, &ctx);
			break;
		case RESP_CHECK_OP_SEQ:
			step = resp_check_op_seq(qp, &ctx);
			break;
		case RESP_CHECK_XRC:
			step = resp_check_xrc(qp, &ctx);
			break;
		case RESP_CHECK_OP_VALID:
			step = resp_check_op_valid(qp, &ctx);
			break;
		case RESP_CHECK_RESOURCE:
			step = resp_check_resource(qp, &ctx, out);
			break;
		case RESP_CHECK_LENGTH:
			step = resp_check_length(qp, &ctx);
			break;
		case RESP_CHECK_RKEY:
			step = resp_check_rkey(qp, &ctx);
			break;
		case RESP_EXECUTE:
			step = resp_execute(qp, &ctx);
			break;
		case RESP_ATOMIC_WRITE:
			step = resp_atomic_write(qp, &ctx);
			break;
		case RESP_FLUSH:
			step = resp_flush(qp, &ctx);
			break;
		case RESP_COMPLETE:
			step = resp_complete(qp, &ctx, now, out);
			break;
		case RESP_ACKNOWLEDGE:
			step = resp_acknowledge(qp, &ctx);
			break;
		case RESP_DUPLICATE:
			step = resp_duplicate(qp, &ctx);
			break;
		case RESP_NAK_SEQ:
			step = resp_nak_seq(qp);
			break;
		case RESP_RNR:
			step = resp_rnr(qp, &ctx);
			break;
		case RESP_CLASS_C:
			step = resp_class_c(qp, &ctx, now, out);
			break;
		case RESP_UC_DROP:
			step = resp_uc_drop(qp, &ctx);
			break;
		case RESP_RECV_ERROR:
			step = resp_recv_error(qp, &ctx, now, out);
			break;
		case RESP_DROP:
			cnt_inc(qp, ctx.drop);
			return;
		case RESP_DONE:
		default:
			return;
		}
	}
}

/* ---- responses ---------------------------------------------------------- */

static uint8_t
read_resp_opcode(bool first, bool last)
{
	if (first)
		return last ? ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY : ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST;
	return last ? ROCE_OP_RC_RDMA_READ_RESPONSE_LAST : ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
}

/* A READ whose region went away (or whose fallback copy failed) after it was accepted. */
static void
read_resource_fail(struct xport_qp *qp, struct xport_res *res, uint32_t psn)
{
	struct xport_resp *r = &qp->resp;

	res->pending = false;
	r->res_pending--;
	owe(qp, ROCE_AETH_NAK_REM_ACC_ERR, psn);
	r->error_after_ack = true;
	r->error_code = XPORT_ERR_RESP_CLASS_C;
}

/*
 * READ responses go at the QP's rate as its requests do (one pacer per QP,
 * as a NIC's rate limiter and DCQCN's reaction point see all the QP sends):
 * in RTS/SQD, where the PACE timer runs.
 */
static bool
read_resp_paced(struct xport_qp *qp)
{
	return qp->state == XPORT_STATE_RTS || qp->state == XPORT_STATE_SQD;
}

/*
 * Emit the next response of @p res; @p paced: the QP had a pacing rate as
 * xport_resp_emit() began (nothing while it runs changes that rate).
 * @return false if the output is full or the pacer holds it.
 */
static bool
emit_resource(struct xport_qp *qp, struct xport_res *res, bool paced, uint64_t now,
	      struct xport_out *out)
{
	struct xport_resp *r = &qp->resp;
	uint32_t psn = res->next_psn;
	struct xport_frame *f;

	if (res->type == RES_ATOMIC) {
		f = xport_frame_new(qp, out, ROCE_OP_RC_ATOMIC_ACKNOWLEDGE, psn);
		if (!f)
			return false;
		f->pkt.aeth.syndrome = ROCE_AETH_ACK_UNLIMITED;
		f->pkt.aeth.msn = r->msn;
		f->pkt.atmack_orig = res->atomic_orig;
		f->pkt.payload_len = 0;
	} else {
		uint32_t offset = roce_psn_diff(psn, res->first_psn) << qp->mtu_shift;
		uint32_t rest = res->length - offset;
		uint32_t len = rest < qp->mtu ? rest : qp->mtu;
		bool first = psn == res->first_psn, last = psn == res->last_psn;
		uint8_t *host = NULL;
		enum mr_status st = MR_OK;

		if (len)
			st = xport_key_check(qp, res->rkey, res->va + offset, len,
					     MR_ACCESS_REMOTE_READ, &host);
		if (st != MR_OK && st != MR_INDIRECT) {
			read_resource_fail(qp, res, psn);
			return true;
		}
		if (paced && read_resp_paced(qp) && xport_pace_hold(qp, now))
			return false;
		f = xport_frame_new(qp, out, read_resp_opcode(first, last), psn);
		if (!f)
			return false;
		if (st == MR_INDIRECT) {
			/* not mapped here: the payload goes through the frame's bounce slot */
			host = xport_bounce_read(qp, out, f, 0, res->rkey, host, len);
			if (!host) {
				read_resource_fail(qp, res, psn); /* f is not committed */
				return true;
			}
		}
		if (first || last) {
			f->pkt.aeth.syndrome = ROCE_AETH_ACK_UNLIMITED;
			f->pkt.aeth.msn = r->msn;
		}
		f->pkt.payload_len = len;
		if (len) {
			f->seg[0].addr = host;
			f->seg[0].len = len;
			f->nseg = 1;
			f->seg_mr = st == MR_OK; /* not the bounce slot */
		}
	}
	xport_frame_commit(qp, out, f);
	if (paced && res->type == RES_READ && read_resp_paced(qp))
		xport_pace_charge(qp, now, f->pkt.payload_len);
	if (psn == res->last_psn) {
		res->pending = false;
		r->res_pending--;
	} else {
		res->next_psn = roce_psn_add(psn, 1);
	}
	return true;
}

static enum xport_counter
ack_counter(uint8_t syndrome)
{
	switch (syndrome & ROCE_AETH_TYPE_MASK) {
	case ROCE_AETH_ACK:
		return XPORT_CNT_ACK_TX;
	case ROCE_AETH_RNR_NAK:
		return XPORT_CNT_RNR_NAK_TX;
	default:
		break;
	}
	switch (syndrome) {
	case ROCE_AETH_NAK_PSN_SEQ_ERROR:
		return XPORT_CNT_NAK_SEQ_TX;
	case ROCE_AETH_NAK_REM_ACC_ERR:
		return XPORT_CNT_NAK_ACCESS_TX;
	case ROCE_AETH_NAK_REM_OP_ERR:
		return XPORT_CNT_NAK_OP_TX;
	default:
		return XPORT_CNT_NAK_INV_REQ_TX;
	}
}

void
xport_resp_emit(struct xport_qp *qp, uint64_t now, struct xport_out *out)
{
	struct xport_resp *r = &qp->resp;
	bool paced;

	if (!qp_is_rc(qp))
		return;
	paced = r->res_pending && xport_pace_kbps(qp) != 0; /* per call, as xport_req_run() */
	while (r->res_pending) {
		/* oldest first: responses leave in PSN order. res_emit is the
		 * oldest pending resource; after it, walk the ring in age order. */
		unsigned n = qp->cfg.max_dest_rd_atomic;
		struct xport_res *res = &r->res[r->res_emit];
		if (!res->pending) {
			/* no pending resource is older than res_emit (replays reset it
			 * to the oldest slot): the next pending one is usually the
			 * next slot, else scan in age order */
			unsigned i = r->res_emit + 1 == n ? 0 : r->res_emit + 1, k;
			if (r->res[i].pending) {
				r->res_emit = i;
				if (!emit_resource(qp, &r->res[i], paced, now, out))
					return;
				continue;
			}
			i = r->res_next;
			for (k = 0; k < n && !r->res[i].pending; k++)
				if (++i == n)
					i = 0;
			if (k == n) {
				r->res_pending = 0;
				break;
			}
			r->res_emit = i;
			res = &r->res[i];
		}
		if (!emit_resource(qp, res, paced, now, out))
			return;
	}
	if (!r->ack_pending)
		return;
	struct xport_frame *f = xport_frame_new(qp, out, ROCE_OP_RC_ACKNOWLEDGE, r->ack_psn);
	if (!f)
		return;
	f->pkt.aeth.syndrome = r->ack_syndrome;
	f->pkt.aeth.msn = r->msn;
	f->pkt.payload_len = 0;
	xport_frame_commit(qp, out, f);
	cnt_inc(qp, ack_counter(r->ack_syndrome));
	r->ack_pending = false;
	if (r->error_after_ack) {
		/* affiliated async errors of the responder's work queue */
		uint8_t ev = r->ack_syndrome == ROCE_AETH_NAK_REM_ACC_ERR ? ASYNC_QP_ACCESS_ERR
			     : r->ack_syndrome == ROCE_AETH_NAK_INVALID_REQ ? ASYNC_QP_REQ_ERR
									  : ASYNC_QP_FATAL;
		xport_event(out, XPORT_EV_ASYNC, ev, qp->cfg.handle);
		xport_qp_enter_error(qp, (enum xport_err)r->error_code, out);
	}
}
