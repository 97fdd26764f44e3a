/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completer: consumes RC responses (ACK/NAK, READ responses, ATOMIC ACKs)
 * and completes send WQEs in order (IBTA Vol. 1 9.7.5, 9.9; Linux rxe_comp.c).
 *
 * - A response with PSN p acknowledges every request PSN before p; a
 *   positive ACK also acknowledges p (coalesced ACKs).
 * - A response beyond an outstanding READ/ATOMIC means its response was
 *   lost: implied NAK, go back to it.
 * - Responses before the oldest unacknowledged PSN are stale and ignored.
 * - PSN sequence NAK and local ACK timeout: go-back-N, retry_cnt times
 *   without progress; RNR NAK: wait the NAK's timer, rnr_retry times
 *   (7 = infinite). Exhaustion completes the WQE with RETRY_EXC_ERR /
 *   RNR_RETRY_EXC_ERR and the QP goes to error.
 * - Every go-back-N after a loss (timeout, sequence or implied NAK) halves
 *   the requester's send window; acknowledged PSNs grow it back
 *   (xport_req.c "Send window"). An RNR NAK is no loss: the window stays.
 */
#include "xport_internal.h"

#define COMP_STEP_LIST(X) \
	X(ACK_RUN, "positive ACK: complete the SEND/WRITE WQEs it covers in one pass") \
	X(READ_ONLY, "the only response of the READ at the head: place it, complete the READ") \
	X(CHECK_AETH, "reserved syndrome, or a READ response / ATOMIC ACK without positive ACK") \
	X(GET_WQE, "the oldest uncompleted WQE the response may concern") \
	X(CHECK_PSN, "complete SEND/WRITE WQEs the response covers; implied NAK") \
	X(CHECK_ACK, "classify the response against the WQE") \
	X(ACK, "positive ACK inside a WQE: progress") \
	X(READ, "place READ response payload") \
	X(ATOMIC, "store the original value") \
	X(EMPTY_READ_RESP, "ATOMIC WRITE / FLUSH: its empty READ response completes it") \
	X(COMPLETE, "complete the WQE") \
	X(NEXT, "continue with the next WQE if the response covers more") \
	X(SEQ_NAK, "PSN sequence NAK: progress up to its PSN, then go back") \
	X(RETRY, "go-back-N from the oldest unacknowledged PSN") \
	X(RNR, "RNR NAK: back off, then resend") \
	X(REMOTE_ERROR, "NAK with an error syndrome") \
	X(ERROR, "complete the WQE with its error, QP to error") \
	X(DROP, "exit: stale or unexpected response (counted)") \
	X(DONE, "exit")

enum comp_step {
#define COMP_STEP_ENUM(sym, desc) COMP_##sym,
	COMP_STEP_LIST(COMP_STEP_ENUM)
#undef COMP_STEP_ENUM
	COMP_STEP_COUNT
};

static const char *const comp_step_names[] = {
#define COMP_STEP_NAME(sym, desc) #sym,
	COMP_STEP_LIST(COMP_STEP_NAME)
#undef COMP_STEP_NAME
};

const char *
xport_comp_step_name(unsigned step)
{
	return step < COMP_STEP_COUNT ? comp_step_names[step] : "?";
}

struct comp_ctx {
	const struct roce_pkt *pkt;
	struct xport_swqe *w;
	enum xport_counter drop;  /* reason for COMP_DROP */
	enum xport_counter retry; /* reason for COMP_RETRY */
};

void
xport_comp_reset(struct xport_qp *qp)
{
	struct xport_comp *c = &qp->comp;
	c->head = spsc_ring_cons_index(qp->cfg.sq);
	c->skew = 0;
	c->psn = qp->cfg.sq_psn & ROCE_PSN_MASK;
	c->retry_left = qp->cfg.retry_cnt;
	c->rnr_left = qp->cfg.rnr_retry;
	c->retrying = false;
	c->progress_ns = 0;
}

/* The oldest unacknowledged PSN is @p psn after progress: the retry
 * budgets and the ACK timer start again. */
static inline void
progress_reset(struct xport_qp *qp, uint32_t psn, uint64_t now)
{
	struct xport_comp *c = &qp->comp;

	c->psn = psn;
	c->retry_left = qp->cfg.retry_cnt;
	c->rnr_left = qp->cfg.rnr_retry;
	c->retrying = false;
	c->progress_ns = now;
}

/* Forward progress up to (not including) @p psn: reset the retry budgets
 * (inline: once per WQE a coalesced ACK completes). */
static inline void
progress(struct xport_qp *qp, uint32_t psn, uint64_t now)
{
	struct xport_comp *c = &qp->comp;
	if (psn_lt(c->psn, psn)) {
		xport_req_window_acked(qp, roce_psn_diff(psn, c->psn));
		if (qp->probe_ns)
			xport_cc_acked(qp, psn, now); /* an RTT probe is out (cc = delay) */
	}
	progress_reset(qp, psn, now);
}

static bool
is_positive_ack(const struct roce_pkt *pkt)
{
	return pkt->opcode == ROCE_OP_RC_ACKNOWLEDGE &&
	       (pkt->aeth.syndrome & ROCE_AETH_TYPE_MASK) == ROCE_AETH_ACK;
}

/*
 * AETH syndromes (IBTA 9.7.5.1.3): types 010 and 1xx are reserved, so are
 * NAK codes above invalid RD request; READ responses and ATOMIC ACKs carry
 * a positive ACK. Anything else is malformed: dropped before its PSN
 * acknowledges anything.
 */
static enum comp_step
comp_check_aeth(struct comp_ctx *ctx)
{
	const struct roce_pkt *pkt = ctx->pkt;
	uint8_t syn = pkt->aeth.syndrome;
	bool ok;

	if (!roce_pkt_has(pkt, ROCE_HDR_AETH))
		return COMP_GET_WQE; /* READ response MIDDLE */
	switch (syn & ROCE_AETH_TYPE_MASK) {
	case ROCE_AETH_ACK:
		ok = true;
		break;
	case ROCE_AETH_RNR_NAK:
		ok = pkt->opcode == ROCE_OP_RC_ACKNOWLEDGE;
		break;
	case ROCE_AETH_NAK:
		ok = pkt->opcode == ROCE_OP_RC_ACKNOWLEDGE && syn <= ROCE_AETH_NAK_INV_RD_REQ;
		break;
	default:
		ok = false;
		break;
	}
	if (ok)
		return COMP_GET_WQE;
	ctx->drop = XPORT_CNT_DROP_BAD_RESP;
	return COMP_DROP;
}

static enum comp_step
comp_get_wqe(struct xport_qp *qp, struct comp_ctx *ctx)
{
	uint32_t psn = ctx->pkt->psn;

	ctx->drop = XPORT_CNT_DROP_STALE_RESP;
	if (!psn_lt(psn, qp->req.psn_max) || psn_lt(psn, qp->comp.psn))
		return COMP_DROP; /* never requested, or stale */
	if (qp->comp.head == qp->req.fetch)
		return COMP_DROP;
	struct xport_swqe *w = swqe_at(qp, qp->comp.head);
	if (!w->started)
		return COMP_DROP;
	if (!ctx->w && is_positive_ack(ctx->pkt))
		cnt_inc(qp, XPORT_CNT_ACK_RX); /* once, however many WQEs it completes */
	ctx->w = w;
	return COMP_CHECK_PSN;
}

/*
 * A positive ACK with PSN p acknowledges every PSN up to p (IBTA
 * 9.7.5.1.1): the SEND/WRITE WQEs at the head whose last PSN is at most p
 * complete, in order. This step does for such a run what GET_WQE,
 * CHECK_PSN, COMPLETE and NEXT do per WQE, with the same effect: the
 * window credit of each step, one ACK_RX, the SQ released once, the CQEs
 * staged (published as the burst ends). Anything else - a stale ACK, a
 * READ/ATOMIC or engine WQE, an ACK inside a WQE, a CQ that looks full, an
 * RTT probe out - is left to the general steps from GET_WQE on, at the WQE
 * the run stopped at.
 */
static enum comp_step
comp_ack_run(struct xport_qp *qp, struct comp_ctx *ctx, uint64_t now)
{
	struct xport_comp *c = &qp->comp;
	struct xport_cq *cq = qp->cfg.send_cq;
	uint32_t psn = ctx->pkt->psn, head = c->head, cpsn = c->psn, credit = 0;
	struct xport_swqe *w = NULL;

	if (qp->probe_ns || !psn_lt(psn, qp->req.psn_max) || psn_lt(psn, cpsn))
		return COMP_GET_WQE;
	for (; head != qp->req.fetch; head++) {
		struct xport_swqe *n = swqe_at(qp, head);

		if (!n->started || (n->kind != SWQE_SEND && n->kind != SWQE_WRITE) ||
		    n->tm != SWQE_TM_NONE || psn_lt(psn, n->last_psn))
			break;
		if (n->signaled || n->status != WC_SUCCESS) {
			struct cqe *e = xport_cq_slot_free(cq);
			if (!e)
				break;
			xport_sq_cqe(e, qp, n, now);
			xport_cq_stage(cq, false, n->status);
		}
		uint32_t next = roce_psn_add(n->last_psn, 1);
		if (psn_lt(cpsn, next))
			credit += roce_psn_diff(next, cpsn);
		cpsn = next;
		w = n;
	}
	if (!w)
		return COMP_GET_WQE;
	cnt_inc(qp, XPORT_CNT_ACK_RX);
	if (credit)
		xport_req_window_acked(qp, credit);
	progress_reset(qp, cpsn, now); /* progress() per WQE, its credit summed above */
	c->head = head;
	spsc_ring_release_to(qp->cfg.sq, head - c->skew);
	qp->req.kick = true;
	if ((int32_t)(qp->req.cur - head) < 0) {
		qp->req.cur = head;
		qp->req.offset = 0;
	}
	ctx->w = w; /* ACK_RX is counted */
	return psn_lt(psn, cpsn) ? COMP_DONE : COMP_GET_WQE;
}

/*
 * READ RESPONSE ONLY (positive AETH) at the oldest unacknowledged PSN,
 * the one response of the READ at the head: CHECK_AETH ... COMPLETE, NEXT
 * in one step, with their effect. Anything else - an earlier WQE still
 * open (the response acknowledges it first), a length that is not the
 * READ's, a scatter list not writable, an RTT probe out - goes through
 * the general steps from CHECK_AETH, which find the same and answer it.
 */
static enum comp_step
comp_read_only(struct xport_qp *qp, struct comp_ctx *ctx, uint64_t now, struct xport_out *out)
{
	const struct roce_pkt *pkt = ctx->pkt;
	uint32_t psn = pkt->psn;

	if (qp->probe_ns || qp->comp.head == qp->req.fetch || psn != qp->comp.psn ||
	    !psn_lt(psn, qp->req.psn_max) ||
	    (pkt->aeth.syndrome & ROCE_AETH_TYPE_MASK) != ROCE_AETH_ACK)
		return COMP_CHECK_AETH;
	struct xport_swqe *w = swqe_at(qp, qp->comp.head);
	if (!w->started || w->kind != SWQE_READ || w->first_psn != psn || w->last_psn != psn ||
	    pkt->payload_len != w->length ||
	    xport_sg_scatter(qp, w->wqe.sg_list, w->wqe.num_sge, 0, pkt->payload,
			     pkt->payload_len) != MR_OK)
		return COMP_CHECK_AETH;
	progress(qp, roce_psn_add(psn, 1), now);
	xport_sq_complete_head(qp, now, out, true); /* published at the burst's end */
	return COMP_DONE;
}

static enum comp_step
comp_check_psn(struct xport_qp *qp, struct comp_ctx *ctx, uint64_t now)
{
	const struct xport_swqe *w = ctx->w;
	uint32_t psn = ctx->pkt->psn;

	if (w->kind == SWQE_SEND || w->kind == SWQE_WRITE) {
		if (psn_lt(w->last_psn, psn) || (psn == w->last_psn && is_positive_ack(ctx->pkt))) {
			progress(qp, roce_psn_add(w->last_psn, 1), now);
			return COMP_COMPLETE;
		}
		return COMP_CHECK_ACK;
	}
	if (psn_lt(w->last_psn, psn)) {
		ctx->retry = XPORT_CNT_RETRY_IMPLIED_NAK;
		return COMP_RETRY;
	}
	return COMP_CHECK_ACK;
}

static enum comp_step
comp_check_ack(struct xport_qp *qp, struct comp_ctx *ctx)
{
	const struct roce_pkt *pkt = ctx->pkt;
	const struct xport_swqe *w = ctx->w;
	uint8_t syn = pkt->aeth.syndrome;

	ctx->drop = XPORT_CNT_DROP_BAD_RESP;
	switch (pkt->opcode) {
	case ROCE_OP_RC_ACKNOWLEDGE:
		switch (syn & ROCE_AETH_TYPE_MASK) {
		case ROCE_AETH_ACK: /* ACK_RX: counted in comp_get_wqe() */
			return COMP_ACK;
		case ROCE_AETH_RNR_NAK:
			cnt_inc(qp, XPORT_CNT_RNR_NAK_RX);
			return COMP_RNR;
		case ROCE_AETH_NAK:
			if (syn == ROCE_AETH_NAK_PSN_SEQ_ERROR) {
				cnt_inc(qp, XPORT_CNT_NAK_SEQ_RX);
				return COMP_SEQ_NAK;
			}
			return COMP_REMOTE_ERROR;
		default:
			return COMP_DROP;
		}
	case ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST:
	case ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE:
	case ROCE_OP_RC_RDMA_READ_RESPONSE_LAST:
	case ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY:
		if (w->kind == SWQE_ATOMIC_WRITE || w->kind == SWQE_FLUSH) {
			/* IBTA 1.5: one READ RESPONSE ONLY without payload (rxe
			 * send_read_response_ack()) at the request's PSN */
			if (pkt->opcode != ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY ||
			    pkt->psn != w->first_psn || pkt->payload_len != 0)
				return COMP_DROP;
			return COMP_EMPTY_READ_RESP;
		}
		if (w->kind != SWQE_READ)
			return COMP_DROP;
		if (pkt->psn != qp->comp.psn) {
			/* an earlier response of this READ is missing */
			ctx->retry = XPORT_CNT_RETRY_IMPLIED_NAK;
			return COMP_RETRY;
		}
		return COMP_READ;
	case ROCE_OP_RC_ATOMIC_ACKNOWLEDGE:
		if (w->kind != SWQE_ATOMIC || pkt->psn != w->first_psn)
			return COMP_DROP;
		return COMP_ATOMIC;
	default:
		return COMP_DROP;
	}
}

static enum comp_step
comp_ack(struct xport_qp *qp, struct comp_ctx *ctx, uint64_t now)
{
	/* ACK of part of a SEND/WRITE; inside a READ/ATOMIC it tells nothing */
	if (ctx->w->kind == SWQE_SEND || ctx->w->kind == SWQE_WRITE)
		progress(qp, roce_psn_add(ctx->pkt->psn, 1), now);
	return COMP_DONE;
}

static enum comp_step
comp_read(struct xport_qp *qp, struct comp_ctx *ctx, uint64_t now)
{
	const struct roce_pkt *pkt = ctx->pkt;
	struct xport_swqe *w = ctx->w;
	uint32_t offset = roce_psn_diff(pkt->psn, w->first_psn) << qp->mtu_shift;
	uint32_t rest = w->length - offset;
	uint32_t expect = rest < qp->mtu ? rest : qp->mtu;
	bool first = pkt->psn == w->first_psn, last = pkt->psn == w->last_psn;
	uint16_t kind = roce_opcode_desc(pkt->opcode)->kind;

	/* IBTA 9.7.5.1: the READ's first response is FIRST or ONLY, its last
	 * LAST or ONLY; a resent READ may restart mid-message with FIRST (IBTA)
	 * or MIDDLE (rxe, us); FIRST and MIDDLE carry one PMTU */
	ctx->drop = XPORT_CNT_DROP_BAD_RESP;
	if (pkt->payload_len != expect || last != ((kind & ROCE_KIND_LAST) != 0) ||
	    (first && !(kind & ROCE_KIND_FIRST)))
		return COMP_DROP;
	/* local write access to the scatter list */
	if (xport_sg_scatter(qp, w->wqe.sg_list, w->wqe.num_sge, offset, pkt->payload,
			     pkt->payload_len) != MR_OK) {
		w->status = WC_LOC_PROT_ERR;
		w->err = XPORT_ERR_LOC_KEY;
		return COMP_ERROR;
	}
	progress(qp, roce_psn_add(pkt->psn, 1), now);
	return last ? COMP_COMPLETE : COMP_DONE;
}

static enum comp_step
comp_atomic(struct xport_qp *qp, struct comp_ctx *ctx, uint64_t now)
{
	struct xport_swqe *w = ctx->w;
	uint64_t orig = ctx->pkt->atmack_orig;

	if (xport_sg_scatter(qp, w->wqe.sg_list, w->wqe.num_sge, 0, (const uint8_t *)&orig,
			     sizeof(orig)) != MR_OK) {
		w->status = WC_LOC_PROT_ERR;
		w->err = XPORT_ERR_LOC_KEY;
		return COMP_ERROR;
	}
	progress(qp, roce_psn_add(ctx->pkt->psn, 1), now);
	return COMP_COMPLETE;
}

static enum comp_step
comp_empty_read_resp(struct xport_qp *qp, struct comp_ctx *ctx, uint64_t now)
{
	progress(qp, roce_psn_add(ctx->pkt->psn, 1), now);
	return COMP_COMPLETE;
}

static enum comp_step
comp_complete(struct xport_qp *qp, struct xport_out *out, uint64_t now)
{
	if (!xport_sq_complete_head(qp, now, out, true)) /* published at the burst's end */
		return COMP_DONE;
	return COMP_NEXT;
}

static enum comp_step
comp_next(struct xport_qp *qp, struct comp_ctx *ctx)
{
	/* a coalesced ACK may cover the next WQEs too */
	if (psn_lt(ctx->pkt->psn, qp->comp.psn) || qp->state == XPORT_STATE_ERR)
		return COMP_DONE;
	return COMP_GET_WQE;
}

static enum comp_step
comp_seq_nak(struct xport_qp *qp, struct comp_ctx *ctx, uint64_t now)
{
	uint32_t psn = ctx->pkt->psn;

	if (qp->req.rnr_wait) {
		/* the end of the wait resends from the RNR NAKed PSN (req.psn); a
		 * NAK beyond it means the responder took that request after all
		 * (9.7.5.2.1: the NAK acknowledges every PSN before its own): the
		 * wait is over, go back to the NAK's PSN now */
		if (!psn_lt(qp->req.psn, psn))
			return COMP_DONE;
		qp->req.rnr_wait = false;
		qp->comp.retrying = false;
	}
	if (psn_lt(qp->comp.psn, psn))
		progress(qp, psn, now); /* the NAK acknowledges every PSN before it */
	ctx->retry = XPORT_CNT_RETRY_SEQ_NAK;
	return COMP_RETRY;
}

static enum comp_step
comp_retry(struct xport_qp *qp, struct comp_ctx *ctx, uint64_t now)
{
	struct xport_comp *c = &qp->comp;

	if (c->retrying || qp->req.rnr_wait)
		return COMP_DONE; /* one go-back per loss until progress */
	if (c->retry_left == 0) {
		ctx->w = swqe_at(qp, c->head);
		ctx->w->status = WC_RETRY_EXC_ERR;
		ctx->w->err = XPORT_ERR_RETRY_EXC;
		return COMP_ERROR;
	}
	c->retry_left--;
	c->retrying = true;
	c->progress_ns = now;
	cnt_inc(qp, ctx->retry);
	xport_req_window_loss(qp);
	xport_req_rewind(qp, c->psn);
	return COMP_DONE;
}

static enum comp_step
comp_rnr(struct xport_qp *qp, struct comp_ctx *ctx, uint64_t now)
{
	struct xport_comp *c = &qp->comp;
	uint32_t psn = ctx->pkt->psn;

	if (psn_lt(c->psn, psn))
		progress(qp, psn, now);
	if (qp->req.rnr_wait)
		return COMP_DONE;
	if (c->rnr_left == 0) {
		ctx->w->status = WC_RNR_RETRY_EXC_ERR;
		ctx->w->err = XPORT_ERR_RNR_EXC;
		return COMP_ERROR;
	}
	if (qp->cfg.rnr_retry != 7) /* IBTA 9.7.5.2.8: 7 means retry forever */
		c->rnr_left--;
	c->retrying = true;
	xport_req_rewind(qp, psn);
	qp->req.rnr_wait = true;
	qp->req.rnr_until = now + (uint64_t)roce_rnr_timer_usec(ctx->pkt->aeth.syndrome & 0x1f) * 1000;
	return COMP_DONE;
}

static enum comp_step
comp_remote_error(struct xport_qp *qp, struct comp_ctx *ctx)
{
	struct xport_swqe *w = ctx->w;

	/* NAK syndrome -> completion status (IBTA 9.9, roce-wire.md 4.6) */
	switch (ctx->pkt->aeth.syndrome) {
	case ROCE_AETH_NAK_INVALID_REQ:
		cnt_inc(qp, XPORT_CNT_NAK_INV_REQ_RX);
		w->status = WC_REM_INV_REQ_ERR;
		break;
	case ROCE_AETH_NAK_REM_ACC_ERR:
		cnt_inc(qp, XPORT_CNT_NAK_ACCESS_RX);
		w->status = WC_REM_ACCESS_ERR;
		break;
	case ROCE_AETH_NAK_REM_OP_ERR:
		cnt_inc(qp, XPORT_CNT_NAK_OP_RX);
		w->status = WC_REM_OP_ERR;
		break;
	case ROCE_AETH_NAK_INV_RD_REQ:
		cnt_inc(qp, XPORT_CNT_NAK_INV_RD_REQ_RX);
		w->status = WC_REM_INV_RD_REQ_ERR;
		break;
	default:
		ctx->drop = XPORT_CNT_DROP_BAD_RESP;
		return COMP_DROP;
	}
	w->err = XPORT_ERR_REM_NAK;
	return COMP_ERROR;
}

static enum comp_step
comp_error(struct xport_qp *qp, struct comp_ctx *ctx, struct xport_out *out, uint64_t now)
{
	enum xport_err why = (enum xport_err)ctx->w->err;
	xport_sq_complete_head(qp, now, out, false); /* errors always complete (IBA 10.7.3.1) */
	xport_qp_enter_error(qp, why, out);
	return COMP_DONE;
}

void
xport_comp_rx(struct xport_qp *qp, const struct roce_pkt *pkt, uint64_t now,
	      struct xport_out *out)
{
	struct comp_ctx ctx = { .pkt = pkt };
	enum comp_step step = is_positive_ack(pkt) ? COMP_ACK_RUN
			      : pkt->opcode == ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY ? COMP_READ_ONLY
										  : COMP_CHECK_AETH;

	for (;;) {
		switch (step) {
		case COMP_ACK_RUN:
			step = comp_ack_run(qp, &ctx, now);
			break;
		case COMP_READ_ONLY:
			step = comp_read_only(qp, &ctx, now, out);
			break;
		case COMP_CHECK_AETH:
			step = comp_check_aeth(&ctx);
			break;
		case COMP_GET_WQE:
			step = comp_get_wqe(qp, &ctx);
			break;
		case COMP_CHECK_PSN:
			step = comp_check_psn(qp, &ctx, now);
			break;
		case COMP_CHECK_ACK:
			step = comp_check_ack(qp, &ctx);
			break;
		case COMP_ACK:
			step = comp_ack(qp, &ctx, now);
			break;
		case COMP_READ:
			step = comp_read(qp, &ctx, now);
			break;
		case COMP_ATOMIC:
			step = comp_atomic(qp, &ctx, now);
			break;
		case COMP_EMPTY_READ_RESP:
			step = comp_empty_read_resp(qp, &ctx, now);
			break;
		case COMP_COMPLETE:
			step = comp_complete(qp, out, now);
			break;
		case COMP_NEXT:
			step = comp_next(qp, &ctx);
			break;
		case COMP_SEQ_NAK:
			step = comp_seq_nak(qp, &ctx, now);
			break;
		case COMP_RETRY:
			step = comp_retry(qp, &ctx, now);
			break;
		case COMP_RNR:
			step = comp_rnr(qp, &ctx, now);
			break;
		case COMP_REMOTE_ERROR:
			step = comp_remote_error(qp, &ctx);
			break;
		case COMP_ERROR:
			step = comp_error(qp, &ctx, out, now);
			break;
		case COMP_DROP:
			cnt_inc(qp, ctx.drop);
			step = COMP_DONE;
			break;
		case COMP_DONE:
		default:
			/* comp_complete()'s CQEs: xport_qp_rx_burst() publishes them */
			/* the requester never resends what is acknowledged */
			if (qp->state != XPORT_STATE_ERR && psn_lt(qp->req.psn, qp->comp.psn))
				xport_req_rewind(qp, qp->comp.psn);
			return;
		}
	}
}

/* Local ACK timer expired (IBTA 9.7.6.1.3). */
void
xport_comp_timeout(struct xport_qp *qp, uint64_t now, struct xport_out *out)
{
	struct xport_comp *c = &qp->comp;

	if (!qp->ack_timeout_ns || now < c->progress_ns + qp->ack_timeout_ns)
		return; /* progress since it was armed: re-armed lazily */
	if (!psn_lt(c->psn, qp->req.psn_max) && c->head == qp->req.cur)
		return; /* nothing outstanding */
	cnt_inc(qp, XPORT_CNT_RETRY_TIMEOUT);
	if (c->retry_left == 0) {
		struct comp_ctx ctx = { .w = swqe_at(qp, c->head) };
		ctx.w->status = WC_RETRY_EXC_ERR;
		ctx.w->err = XPORT_ERR_RETRY_EXC;
		comp_error(qp, &ctx, out, now);
		return;
	}
	c->retry_left--;
	c->retrying = true;
	c->progress_ns = now;
	xport_req_window_loss(qp);
	xport_req_rewind(qp, c->psn);
}
