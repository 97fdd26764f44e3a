/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requester: turns send WQEs into request packets (IBTA Vol. 1 ch. 9).
 *
 * Segmentation by path MTU, one PSN per packet (a READ of L bytes takes
 * ceil(L / MTU) PSNs), AckReq on the last packet of a message
 * and every ack_req_every packets, limits (max_rd_atomic, fence, send
 * window), rate pacing, and go-back-N rewinds requested by the completer.
 *
 * Send window (RC): PSNs sent and not acknowledged, at most req.window.
 * A READ counts the PSNs of its response packets (IBTA 9.7.1: the request
 * consumes them), so the responses in flight towards this host are bounded
 * too. The completer halves the window per go-back-N (a lost frame usually
 * means an overrun receive ring: resending the whole window would overrun
 * it again) down to min_window, and acknowledged PSNs grow it by one per
 * window's worth, i.e. one packet per round trip, back to max_unacked
 * (TCP's AIMD, RFC 5681 3.1 congestion avoidance; no slow start: the
 * window starts at the cap). Deterministic: only PSN counts move it.
 * UC and UD complete a WQE as soon as its last packet is out.
 */
#include <stddef.h>
#include <string.h>

#include "xport_internal.h"

#define REQ_STEP_LIST(X) \
	X(GET_WQE, "take the WQE at cur, copying it from the ring on first use") \
	X(CHECK_LIMITS, "rd_atomic, fence, send window, rate limit") \
	X(PLAIN, "an RC SEND/WRITE/READ of one packet nothing holds: build, send, account") \
	X(BUILD, "build the next packet of the WQE") \
	X(ADVANCE, "PSN, offset and WQE bookkeeping after a packet") \
	X(LOCAL_OP, "bind a memory window or invalidate a key, once earlier WQEs completed") \
	X(LOCAL_ERROR, "complete the WQE in error, QP to error") \
	X(OUT_FULL, "exit: output context full, poll again") \
	X(IDLE, "exit: nothing to send now")

enum req_step {
#define REQ_STEP_ENUM(sym, desc) REQ_##sym,
	REQ_STEP_LIST(REQ_STEP_ENUM)
#undef REQ_STEP_ENUM
	REQ_STEP_COUNT
};

static const char *const req_step_names[] = {
#define REQ_STEP_NAME(sym, desc) #sym,
	REQ_STEP_LIST(REQ_STEP_NAME)
#undef REQ_STEP_NAME
};

const char *
xport_req_step_name(unsigned step)
{
	return step < REQ_STEP_COUNT ? req_step_names[step] : "?";
}

/* What one iteration carries from step to step. */
struct req_ctx {
	struct xport_swqe *w;
	struct xport_frame *f;
	uint32_t payload;   /* payload bytes of the packet */
	uint32_t psns;      /* PSNs the packet consumes */
	bool last;          /* last packet of the WQE */
	/* the QP had a pacing rate when the activation began: nothing in it
	 * can give one to an unpaced QP (a CNP or a modify does, between
	 * activations), so unpaced QPs skip the rate checks per packet; a
	 * paced one still reads its rate each time (it may end) */
	bool paced;
	/* RC without XRC, unpaced, no RTT probes (cc = delay): a one-packet
	 * SEND/WRITE or a one-response READ may take the PLAIN step */
	bool plain;
	uint64_t now;       /* the activation's time */
};

_Static_assert(WR_QPT_RC == 1u << XPORT_RC && WR_QPT_UC == 1u << XPORT_UC &&
		       WR_QPT_UD == 1u << XPORT_UD && WR_QPT_RAW == 1u << XPORT_RAW,
	       "WR opcode table QP types are enum xport_qp_type bits");

/* Position of a packet in its message: the index into wire_opcode[op][]. */
enum wire_pos { WIRE_FIRST, WIRE_MIDDLE, WIRE_LAST, WIRE_ONLY };

/*
 * RC BTH opcodes of each work request's packets (IBTA 9.2), from the WR
 * opcode table; UC and UD add their transport prefix (data_opcode_of()).
 */
#define WR_WIRE(first, middle, last, only) \
	{ ROCE_OP_RC_##first, ROCE_OP_RC_##middle, ROCE_OP_RC_##last, ROCE_OP_RC_##only }
#define WR_WIRE_ONLY(only) { 0, 0, 0, ROCE_OP_RC_##only }
#define WR_NO_WIRE { 0, 0, 0, 0 }
static const uint8_t wire_opcode[WR_OPCODE_SLOTS][4] = {
#define WR_WIRE_ROW(sym, value, kind, qpts, wc, imm, wire) [value] = wire,
	WR_OPCODE_LIST(WR_WIRE_ROW)
#undef WR_WIRE_ROW
};
#undef WR_WIRE
#undef WR_WIRE_ONLY
#undef WR_NO_WIRE

void
xport_req_reset(struct xport_qp *qp)
{
	uint32_t cons = spsc_ring_cons_index(qp->cfg.sq);
	memset(&qp->req, 0, sizeof(qp->req));
	qp->req.fetch = qp->req.cur = qp->req.prod_seen = cons;
	qp->req.psn = qp->req.psn_max = qp->cfg.sq_psn & ROCE_PSN_MASK;
	qp->req.window = qp->max_unacked;
}

/* A go-back-N (loss): halve the send window, not below min_window. */
void
xport_req_window_loss(struct xport_qp *qp)
{
	uint32_t w = qp->req.window / 2;

	if (w < qp->min_window)
		w = qp->min_window;
	if (w < qp->req.window)
		cnt_inc(qp, XPORT_CNT_WINDOW_SHRINK);
	qp->req.window = w;
}

/*
 * A frame with @p payload_len bytes of payload left at @p now: the next is
 * due (payload + XPORT_PACE_OVERHEAD) x 8 bits later at xport_pace_kbps().
 * The schedule runs from when this frame was due, not when it left, so
 * late activations do not lower the rate; the credit a late activation
 * may spend at once is bounded like a NIC rate limiter's burst size: by
 * XPORT_PACE_CATCHUP_NS, and with congestion control by the port's
 * pace_burst bytes (a descheduled sender must not dump milliseconds of
 * rate into a shared queue).
 */
void
xport_pace_charge(struct xport_qp *qp, uint64_t now, uint32_t payload_len)
{
	struct xport_req *req = &qp->req;
	uint32_t kbps = xport_pace_kbps(qp);

	if (!kbps)
		return;
	uint64_t bits = (uint64_t)(payload_len + XPORT_PACE_OVERHEAD) * 8;
	uint64_t start = now;

	if (req->pace_next > now) {
		start = req->pace_next; /* on schedule */
	} else if (req->pace_next != 0 && now - req->pace_next <= XPORT_PACE_CATCHUP_NS) {
		start = req->pace_next; /* catching up */
		uint32_t burst = qp->cfg.cc ? qp->cfg.cc->pace_burst : 0;
		if (burst) {
			uint64_t credit_ns = (uint64_t)burst * 8 * 1000000u / kbps;
			if (now - start > credit_ns)
				start = now - credit_ns;
		}
	}
	req->pace_next = start + bits * 1000000u / kbps;
	xport_cc_sent(qp, bits / 8);
}

/* PSNs the next packet of @p w consumes: a READ request its response packets. */
static uint32_t
next_packet_psns(const struct xport_qp *qp, const struct xport_swqe *w)
{
	uint32_t rest = w->length - qp->req.offset;

	if (w->kind != SWQE_READ || rest == 0)
		return 1;
	return (rest + qp->mtu - 1) >> qp->mtu_shift;
}

/*
 * @p opcode is valid on the QP's type and, on an XRC INI QP, its request has
 * an XRC twin (IBTA Vol. 1 9.2 table 39): the IBTA 1.5 ATOMIC WRITE and
 * FLUSH have none here (nor in Linux rxe, which has no XRC).
 */
static bool
wr_opcode_ok(const struct xport_qp *qp, uint32_t opcode, const struct wr_opcode_desc *d)
{
	uint8_t only = wire_opcode[opcode & (WR_OPCODE_SLOTS - 1)][WIRE_ONLY];

	if (!wr_desc_valid_on(d, qp->cfg.type))
		return false;
	return qp->cfg.xrc == XPORT_XRC_NONE || only == 0 ||
	       roce_opcode_desc((uint8_t)(only | ROCE_TRANSPORT_XRC)) != NULL;
}

/* Copy ring WQE @p ridx into shadow slot @p idx and validate it. */
static void
fetch_wqe(struct xport_qp *qp, uint32_t idx, uint32_t ridx)
{
	const struct sq_wqe *src = sq_ring_at(qp, ridx);
	struct xport_swqe *w = swqe_at(qp, idx);
	uint8_t type = qp->cfg.type;

	w->tm = SWQE_TM_NONE;

	/* the header; a UD AV from the daemon's table */
	memcpy(&w->wqe, src, SQ_WQE_HEAD_BYTES);
	struct wr_opcode_desc op = wr_opcode_desc(w->wqe.opcode);

	w->imm = op.imm;
	w->wc_opcode = op.wc_opcode;
	w->status = WC_SUCCESS;
	w->err = XPORT_ERR_NONE;
	w->started = false;
	w->signaled = qp->cfg.sq_sig_all || (w->wqe.send_flags & WR_FLAG_SIGNALED);
	w->length = 0;
	w->npkts = 1;

	if (type == XPORT_UD &&
	    !ah_table_get(qp->cfg.ahs, __atomic_load_n(&src->av.ah_handle, __ATOMIC_RELAXED),
			  qp->cfg.pd, &w->wqe.av)) {
		/*
		 * Only the handle is the application's: source MAC/GID, VLAN,
		 * destination and UDP port are what the daemon resolved for it
		 * (an AH of another PD, or none, would let it send as anyone).
		 */
		cnt_inc(qp, XPORT_CNT_UD_AH_INVALID);
		w->kind = SWQE_SEND;
		w->status = WC_LOC_QP_OP_ERR;
		w->err = XPORT_ERR_LOC_AH;
		return;
	}
	bool ok_op = wr_opcode_ok(qp, w->wqe.opcode, &op);

	w->kind = ok_op ? op.kind : SWQE_SEND;
	bool is_inline = (w->wqe.send_flags & WR_FLAG_INLINE) != 0;
	if (!ok_op || (is_inline && !wr_kind_sends_payload(op.kind))) {
		w->status = WC_LOC_QP_OP_ERR;
		w->err = XPORT_ERR_LOC_OPCODE;
		return;
	}
	if (op.kind == WR_KIND_LOCAL)
		return; /* no payload: its SGEs, if any, are not looked at */
	uint64_t len = 0;
	bool head = (w->wqe.send_flags & WR_FLAG_HEAD_DATA) != 0;

	if (head) {
		/* the payload came with the header line (wqe.h wr_head_data) */
		if (!wr_kind_head_data(op.kind)) {
			w->status = WC_LOC_QP_OP_ERR; /* its wr fields overlap the head */
			w->err = XPORT_ERR_LOC_OPCODE;
			return;
		}
		if (is_inline ? w->wqe.inline_len > WQE_HEAD_INLINE : w->wqe.num_sge != 1)
			goto len_err;
	}
	if (is_inline) {
		if (w->wqe.inline_len > qp->sq_max_sge * sizeof(struct wr_sge))
			goto len_err; /* beyond the QP's shadow slot (max_inline_data) */
		memcpy(w->wqe.inline_data, head ? w->wqe.wr.rdma.head.inline_data : src->inline_data,
		       w->wqe.inline_len);
		len = w->wqe.inline_len;
	} else if (head) {
		/* Field by field, each load inside one of the header copy's
		 * 16-byte stores: the head SGE (bytes 40-55) straddles two, and
		 * one 16-byte load of it is not forwarded from the store buffer
		 * but waits for both stores to reach the cache (issue 18;
		 * doc/benchmarks.md, session 28). The asm keeps the compiler
		 * from merging the fields into that load again. */
		uint64_t addr = w->wqe.wr.rdma.head.sge.addr;
		uint32_t length = w->wqe.wr.rdma.head.sge.length, lkey = w->wqe.wr.rdma.head.sge.lkey;

		__asm__("" : "+r"(addr), "+r"(length), "+r"(lkey));
		w->wqe.sg_list[0] = (struct wr_sge){ .addr = addr, .length = length, .lkey = lkey };
		len = length;
	} else {
		if (w->wqe.num_sge > qp->sq_max_sge)
			goto len_err; /* beyond the QP's shadow slot (max_send_sge) */
		for (uint32_t i = 0; i < w->wqe.num_sge; i++) {
			w->wqe.sg_list[i] = src->sg_list[i];
			len += w->wqe.sg_list[i].length;
		}
	}
	/* RAW_PACKET: one whole frame, Ethernet header to the port's MTU */
	if (len > (1u << 31) || (type == XPORT_UD && len > qp->mtu) ||
	    (type == XPORT_RAW &&
	     (len > qp->cfg.raw_frame_max || len < sizeof(struct roce_eth_hdr))) ||
	    ((w->kind == SWQE_ATOMIC || w->kind == SWQE_ATOMIC_WRITE) && len != 8) ||
	    (w->kind == SWQE_FLUSH && len != 0))
		goto len_err;
	w->length = (uint32_t)len;
	if (w->kind != SWQE_ATOMIC && w->kind != SWQE_ATOMIC_WRITE && len && type != XPORT_RAW)
		w->npkts = (uint32_t)((len + qp->mtu - 1) >> qp->mtu_shift);
	return;
len_err:
	w->status = WC_LOC_LEN_ERR;
	w->err = XPORT_ERR_LOC_LEN;
}

void
xport_req_tm_inject(struct xport_qp *qp, uint8_t tm, const struct sq_wqe *wqe, uint32_t length)
{
	struct xport_swqe *w = swqe_at(qp, qp->req.fetch);
	struct wr_opcode_desc op = wr_opcode_desc(wqe->opcode);

	/* a QP of a TM SRQ has whole slots (sq_sge_of()): the SGEs of any entry fit */
	memcpy(&w->wqe, wqe,
	       offsetof(struct sq_wqe, sg_list) + qp->sq_max_sge * sizeof(struct wr_sge));
	w->tm = tm;
	w->kind = op.kind;
	w->imm = op.imm;
	w->wc_opcode = op.wc_opcode;
	w->status = WC_SUCCESS;
	w->err = XPORT_ERR_NONE;
	w->started = false;
	w->signaled = false;
	w->length = length;
	w->npkts = length ? (uint32_t)((length + qp->mtu - 1) >> qp->mtu_shift) : 1;
	qp->req.fetch++;
	qp->req.skew++;
	qp->req.kick = true;
}

static enum req_step
req_get_wqe(struct xport_qp *qp, struct req_ctx *ctx)
{
	struct xport_req *req = &qp->req;

	if (req->rnr_wait || qp->state == XPORT_STATE_ERR)
		return REQ_IDLE;
	if (req->cur == req->fetch) {
		uint32_t rfetch = req->fetch - req->skew;
		/* shadow slots promised to a rendezvous are not free */
		if (req->fetch - qp->comp.head + req->tm_resv > qp->sq_mask)
			return REQ_IDLE;
		/* The producer index is a line the application's core writes on
		 * every post: read it only when the WQEs it showed last time are
		 * fetched (a miss per burst of posts, not per WQE). No prefetch of
		 * the WQEs it shows: measured, it costs (doc/benchmarks.md, session 26). */
		if ((int32_t)(req->prod_seen - rfetch) <= 0) {
			uint32_t prod = spsc_ring_prod_acquire(qp->cfg.sq);
			/* the shim may not run ahead by more than the ring (untrusted index) */
			if (prod == rfetch) {
				req->caught_up = true;
				return REQ_IDLE;
			}
			if (prod - (qp->comp.head - qp->comp.skew) > qp->sq_mask + 1)
				return REQ_IDLE;
			req->prod_seen = prod;
		}
		if (qp->state == XPORT_STATE_SQD)
			return REQ_IDLE; /* drain: start nothing new */
		fetch_wqe(qp, req->fetch, rfetch);
		req->fetch++;
	}
	struct xport_swqe *w = swqe_at(qp, req->cur);
	ctx->w = w;
	if (w->status != WC_SUCCESS)
		return REQ_LOCAL_ERROR;
	if (ctx->plain && req->offset == 0 && w->length <= qp->mtu &&
	    (w->kind == SWQE_WRITE || w->kind == SWQE_SEND ||
	     (w->kind == SWQE_READ && req->rd_inflight < qp->cfg.max_rd_atomic)) &&
	    !((w->wqe.send_flags & WR_FLAG_FENCE) && req->rd_inflight)) {
		uint32_t outstanding = roce_psn_diff(req->psn, qp->comp.psn);
		if (!outstanding || outstanding < req->window)
			return REQ_PLAIN;
	}
	return w->kind == SWQE_LOCAL ? REQ_LOCAL_OP : REQ_CHECK_LIMITS;
}

/* Carry out a BIND_MW or LOCAL_INV WQE; on failure its status says why. */
static bool
local_op(struct xport_qp *qp, struct xport_swqe *w)
{
	const struct sq_wqe *q = &w->wqe;

	if (q->opcode == WR_BIND_MW) {
		struct mw_bind_req b = {
			.mw_key = q->wr.bind.mw_rkey,
			.new_key = q->wr.bind.rkey,
			.mr_key = q->wr.bind.mr_lkey,
			.access = q->wr.bind.access,
			.pd = qp->cfg.pd,
			.qpn = qp->cfg.qpn,
			.addr = q->wr.bind.addr,
			.length = q->wr.bind.length,
		};

		if (mw_bind(qp->cfg.mws, qp->cfg.mrs, &b) == 0)
			return true;
		w->status = WC_MW_BIND_ERR;
		w->err = XPORT_ERR_LOC_BIND;
		return false;
	}
	if (xport_invalidate(qp, q->imm_data) == 0)
		return true;
	w->status = WC_LOC_QP_OP_ERR;
	w->err = XPORT_ERR_LOC_INV;
	return false;
}

/*
 * A local operation runs when it reaches the head of the send queue, i.e.
 * after every earlier WQE completed: a bind then never changes a window
 * under an operation posted before it (IBA section 10.6.7 orders binds
 * with the WRs around them), and its completion keeps the queue's order.
 * It completes at once and consumes no PSN. A refused bind completes with
 * MW_BIND_ERR, a refused invalidation with LOC_QP_OP_ERR, and the QP goes
 * to the error state (IBA section 10.7.3 step 1: local errors).
 */
static enum req_step
req_local_op(struct xport_qp *qp, struct req_ctx *ctx, uint64_t now, struct xport_out *out)
{
	if (qp->comp.head != qp->req.cur)
		return REQ_IDLE; /* the completer kicks the requester as WQEs complete */
	if (!local_op(qp, ctx->w))
		return REQ_LOCAL_ERROR;
	qp->req.cur++;
	if (!xport_sq_complete_head(qp, now, out, false))
		return REQ_IDLE;
	return REQ_GET_WQE;
}

static enum req_step
req_check_limits(struct xport_qp *qp, struct req_ctx *ctx, uint64_t now)
{
	struct xport_req *req = &qp->req;
	const struct xport_swqe *w = ctx->w;

	if (qp_is_rc(qp)) {
		/* at most max_rd_atomic READ/ATOMIC (and ATOMIC WRITE/FLUSH, which
		 * take a responder resource too) outstanding: initiator depth */
		if (wr_kind_rd_atomic(w->kind) && req->rd_inflight >= qp->cfg.max_rd_atomic)
			return REQ_IDLE;
		/* fence: wait for every prior READ/ATOMIC to complete */
		if ((w->wqe.send_flags & WR_FLAG_FENCE) && req->offset == 0 && req->rd_inflight)
			return REQ_IDLE;
		/* send window; a READ larger than it goes out alone */
		uint32_t outstanding = roce_psn_diff(req->psn, qp->comp.psn);
		if (outstanding && outstanding + next_packet_psns(qp, w) > req->window)
			return REQ_IDLE;
	}
	if (ctx->paced && xport_pace_hold(qp, now))
		return REQ_IDLE;
	return REQ_BUILD;
}

static inline void
build_data(struct xport_qp *qp, struct req_ctx *ctx, struct xport_frame *f)
{
	const struct xport_swqe *w = ctx->w;
	const struct sq_wqe *wqe = &w->wqe;
	uint32_t offset = qp->req.offset;
	bool first = offset == 0;
	bool last = ctx->last;
	struct roce_pkt *p = &f->pkt;

	if (first && (w->kind == SWQE_WRITE || w->kind == SWQE_ATOMIC_WRITE)) {
		p->reth.va = wqe->wr.rdma.remote_addr;
		p->reth.rkey = wqe->wr.rdma.rkey;
		p->reth.length = w->length;
	}
	if (last) {
		if (w->imm == WR_IMM_DATA)
			p->imm = wqe->imm_data;
		else if (w->imm == WR_IMM_INV)
			p->ieth_rkey = wqe->imm_data;
		p->se = (wqe->send_flags & WR_FLAG_SOLICITED) != 0;
	}
	p->payload_len = ctx->payload;
}

/*
 * Frame @p f's payload, [offset, offset + len) of @p w's SGEs checked with
 * their lkeys. @return false when a key refuses it: @p w then carries the
 * local protection error.
 */
static inline bool
gather_payload(struct xport_qp *qp, struct xport_swqe *w, uint32_t offset, uint32_t len,
	       struct xport_out *out, struct xport_frame *f)
{
	if (xport_sg_gather(qp, w, offset, len, out, f) == 0)
		return true;
	w->status = WC_LOC_PROT_ERR;
	w->err = XPORT_ERR_LOC_KEY;
	return false;
}

static inline uint8_t
wire_opcode_of(uint32_t wr_opcode, uint8_t type, unsigned int pos)
{
	uint8_t op = wire_opcode[wr_opcode & (WR_OPCODE_SLOTS - 1)][pos & 3];

	if (type == XPORT_UD)
		return (uint8_t)(op | ROCE_TRANSPORT_UD); /* one packet: pos is ONLY */
	return type == XPORT_UC ? (uint8_t)(op | ROCE_TRANSPORT_UC) : op;
}

uint8_t
xport_wr_wire_opcode(uint32_t wr_opcode, uint8_t type, unsigned int pos)
{
	return wire_opcode_of(wr_opcode, type, pos);
}

/* The BTH opcode of a packet of @p w. */
static uint8_t
data_opcode_of(const struct xport_qp *qp, const struct xport_swqe *w, bool first, bool last)
{
	enum wire_pos pos = first ? (last ? WIRE_ONLY : WIRE_FIRST) : (last ? WIRE_LAST : WIRE_MIDDLE);

	return wire_opcode_of(w->wqe.opcode, qp->cfg.type, pos);
}

static enum req_step
req_build(struct xport_qp *qp, struct req_ctx *ctx, struct xport_out *out)
{
	struct xport_req *req = &qp->req;
	struct xport_swqe *w = ctx->w;
	uint32_t offset = req->offset;
	struct xport_frame *f;
	uint8_t opcode;

	if (!w->started) {
		w->first_psn = req->psn;
		w->last_psn = roce_psn_add(req->psn, w->npkts - 1);
		w->started = true;
	}
	switch (w->kind) {
	case SWQE_READ: {
		uint32_t rest = w->length - offset;
		f = xport_frame_new(qp, out, data_opcode_of(qp, w, true, true), req->psn);
		if (!f)
			return REQ_OUT_FULL;
		f->pkt.reth.va = w->wqe.wr.rdma.remote_addr + offset;
		f->pkt.reth.rkey = w->wqe.wr.rdma.rkey;
		f->pkt.reth.length = rest;
		f->pkt.ack_req = true;
		f->pkt.payload_len = 0;
		ctx->payload = rest;
		ctx->psns = rest ? (rest + qp->mtu - 1) >> qp->mtu_shift : 1;
		ctx->last = true;
		break;
	}
	case SWQE_ATOMIC: {
		bool cas = w->wqe.opcode == WR_ATOMIC_CMP_AND_SWP;
		f = xport_frame_new(qp, out, data_opcode_of(qp, w, true, true), req->psn);
		if (!f)
			return REQ_OUT_FULL;
		f->pkt.atmeth.va = w->wqe.wr.atomic.remote_addr;
		f->pkt.atmeth.rkey = w->wqe.wr.atomic.rkey;
		f->pkt.atmeth.swap_add = cas ? w->wqe.wr.atomic.swap : w->wqe.wr.atomic.compare_add;
		f->pkt.atmeth.compare = cas ? w->wqe.wr.atomic.compare_add : 0;
		f->pkt.ack_req = true;
		f->pkt.payload_len = 0;
		ctx->payload = 8;
		ctx->psns = 1;
		ctx->last = true;
		break;
	}
	case SWQE_FLUSH: {
		/* IBTA 1.5 FLUSH: FETH + RETH, no payload; answered by an empty READ response */
		f = xport_frame_new(qp, out, data_opcode_of(qp, w, true, true), req->psn);
		if (!f)
			return REQ_OUT_FULL;
		f->pkt.feth.placement = w->wqe.wr.flush.type;
		f->pkt.feth.selectivity = w->wqe.wr.flush.level;
		f->pkt.feth.resv = 0;
		f->pkt.reth.va = w->wqe.wr.flush.remote_addr;
		f->pkt.reth.rkey = w->wqe.wr.flush.rkey;
		f->pkt.reth.length = w->wqe.wr.flush.length;
		f->pkt.ack_req = true;
		f->pkt.payload_len = 0;
		ctx->payload = 0;
		ctx->psns = 1;
		ctx->last = true;
		break;
	}
	default: {
		uint32_t rest = w->length - offset;
		bool raw = qp->cfg.type == XPORT_RAW;
		/* a raw send is one frame, whatever the path MTU (fetch_wqe() bounds it) */
		ctx->payload = rest < qp->mtu || raw ? rest : qp->mtu;
		ctx->psns = 1;
		ctx->last = ctx->payload == rest;
		opcode = data_opcode_of(qp, w, offset == 0, ctx->last);
		f = xport_frame_new(qp, out, opcode, req->psn);
		if (!f)
			return REQ_OUT_FULL;
		build_data(qp, ctx, f);
		f->raw = raw;
		if (qp->cfg.type == XPORT_UD) {
			const struct sq_wqe *wqe = &w->wqe;
			xport_frame_set_av(f, &wqe->av, qp->cfg.qpn, wqe->wr.ud.remote_qpn);
			xport_cc_qos(qp->cfg.cc, &f->pkt.l3);
			f->pkt.dest_qpn = wqe->wr.ud.remote_qpn & ROCE_QPN_MASK;
			/* a WR Q_Key with the MSB set means "use the QP's Q_Key" */
			f->pkt.deth.qkey = (wqe->wr.ud.remote_qkey & 0x80000000u)
						   ? qp->cfg.qkey
						   : wqe->wr.ud.remote_qkey;
			f->pkt.deth.src_qpn = qp->cfg.qpn;
			f->pkt.deth.resv = 0;
		} else if (qp_is_rc(qp)) {
			/* AckReq at the end of a message, every N packets, on the
			 * packet that fills the window (else nothing would open it),
			 * and when paced every quarter of the ACK timeout: N packets
			 * at a low rate take longer than the timeout, which would
			 * expire with nothing lost and go back N, again and again */
			f->pkt.ack_req = ctx->last ||
					 req->pkts_since_ack_req + 1 >= qp->ack_req_every ||
					 roce_psn_diff(req->psn, qp->comp.psn) + 1 >= req->window ||
					 (qp->ack_timeout_ns && ctx->paced && xport_pace_kbps(qp) &&
					  (req->ack_req_ns == 0 ||
					   ctx->now - req->ack_req_ns >= qp->ack_timeout_ns / 4));
		}
		if (!gather_payload(qp, w, offset, ctx->payload, out, f))
			return REQ_LOCAL_ERROR;
		break;
	}
	}
	/* XRC INI: every request names the target's XRC SRQ (XRCETH, 9.3.5) */
	f->pkt.xrc_srqn = w->wqe.xrc_remote_srqn & ROCE_QPN_MASK;
	ctx->f = f;
	return REQ_ADVANCE;
}

static enum req_step
req_advance(struct xport_qp *qp, struct req_ctx *ctx, uint64_t now, struct xport_out *out)
{
	struct xport_req *req = &qp->req;
	struct xport_swqe *w = ctx->w;
	bool rc = qp_is_rc(qp);

	if (rc) {
		/* ACK timer base: the first packet after an idle period */
		if (req->psn_max == qp->comp.psn && req->psn == req->psn_max)
			qp->comp.progress_ns = now;
		if (psn_lt(req->psn, req->psn_max))
			cnt_inc(qp, XPORT_CNT_RETRANSMIT_PKTS);
		if ((ctx->f->pkt.ack_req || psn_lt(req->psn, req->psn_max)) && xport_cc_probing(qp))
			xport_cc_probe_sent(qp, req->psn, psn_lt(req->psn, req->psn_max), now);
		if (ctx->f->pkt.ack_req) {
			req->pkts_since_ack_req = 0;
			req->ack_req_ns = now;
		} else
			req->pkts_since_ack_req++;
	}
	xport_frame_commit(qp, out, ctx->f);
	req->psn = roce_psn_add(req->psn, ctx->psns);
	if (psn_lt(req->psn_max, req->psn))
		req->psn_max = req->psn;
	if (ctx->paced)
		xport_pace_charge(qp, now, ctx->f->pkt.payload_len); /* no-op once unpaced */
	if (!ctx->last) {
		req->offset += ctx->payload;
		return REQ_GET_WQE;
	}
	/* message fully sent */
	req->offset = 0;
	req->cur++;
	if (rc) {
		if (wr_kind_rd_atomic(w->kind))
			req->rd_inflight++;
	} else {
		/* UC/UD: no response will come, complete now */
		if (!xport_sq_complete_head(qp, now, out, true)) /* published as the run ends */
			return REQ_IDLE;
		qp->comp.psn = req->psn;
	}
	return REQ_GET_WQE;
}

/*
 * CHECK_LIMITS, BUILD and ADVANCE for the common case, with their effect:
 * one packet (SEND/WRITE ONLY, AckReq: the message's last) or a READ of
 * one response packet, nothing to wait for (req_get_wqe() checked the
 * fence, the window and for a READ the initiator depth), no pacing, no
 * probes.
 */
static enum req_step
req_plain(struct xport_qp *qp, struct req_ctx *ctx, uint64_t now, struct xport_out *out)
{
	struct xport_req *req = &qp->req;
	struct xport_swqe *w = ctx->w;
	uint32_t psn = req->psn;

	if (!w->started) {
		w->first_psn = w->last_psn = psn;
		w->started = true;
	}
	struct xport_frame *f =
		xport_frame_new(qp, out, wire_opcode_of(w->wqe.opcode, XPORT_RC, WIRE_ONLY), psn);
	if (!f)
		return REQ_OUT_FULL;
	f->pkt.ack_req = true;
	if (w->kind == SWQE_READ) {
		f->pkt.reth.va = w->wqe.wr.rdma.remote_addr;
		f->pkt.reth.rkey = w->wqe.wr.rdma.rkey;
		f->pkt.reth.length = w->length;
		f->pkt.payload_len = 0;
	} else {
		ctx->payload = w->length;
		ctx->last = true;
		build_data(qp, ctx, f);
		if (!gather_payload(qp, w, 0, w->length, out, f))
			return REQ_LOCAL_ERROR;
	}
	/* no XRCETH without XRC: xrc_srqn is not read (xport_frame_new()) */
	if (req->psn_max == qp->comp.psn && psn == req->psn_max)
		qp->comp.progress_ns = now; /* ACK timer base: the first packet after idle */
	if (psn_lt(psn, req->psn_max))
		cnt_inc(qp, XPORT_CNT_RETRANSMIT_PKTS);
	req->pkts_since_ack_req = 0;
	req->ack_req_ns = now;
	xport_frame_commit(qp, out, f);
	req->psn = roce_psn_add(psn, 1);
	if (psn_lt(req->psn_max, req->psn))
		req->psn_max = req->psn;
	req->cur++;
	if (w->kind == SWQE_READ)
		req->rd_inflight++;
	return REQ_GET_WQE;
}

static enum req_step
req_local_error(struct xport_qp *qp, struct req_ctx *ctx, struct xport_out *out)
{
	(void)ctx; /* its status is set: the flush completes it with that status */
	xport_qp_enter_error(qp, (enum xport_err)ctx->w->err, out);
	return REQ_IDLE;
}

void
xport_req_run(struct xport_qp *qp, uint64_t now, struct xport_out *out)
{
	struct req_ctx ctx = { .now = now, .paced = xport_pace_kbps(qp) != 0 };
	enum req_step step = REQ_GET_WQE;

	ctx.plain = !ctx.paced && qp_is_rc(qp) && qp->cfg.xrc == XPORT_XRC_NONE &&
		    !xport_cc_probing(qp);

	qp->req.kick = false;
	qp->req.caught_up = false;
	for (;;) {
		switch (step) {
		case REQ_GET_WQE:
			step = req_get_wqe(qp, &ctx);
			break;
		case REQ_CHECK_LIMITS:
			step = req_check_limits(qp, &ctx, now);
			break;
		case REQ_PLAIN:
			step = req_plain(qp, &ctx, now, out);
			break;
		case REQ_BUILD:
			step = req_build(qp, &ctx, out);
			break;
		case REQ_ADVANCE:
			step = req_advance(qp, &ctx, now, out);
			break;
		case REQ_LOCAL_OP:
			step = req_local_op(qp, &ctx, now, out);
			break;
		case REQ_LOCAL_ERROR:
			step = req_local_error(qp, &ctx, out);
			break;
		case REQ_OUT_FULL:
		case REQ_IDLE:
		default:
			xport_cq_publish(qp->cfg.send_cq, out); /* UC/UD completions */
			return;
		}
	}
}

/*
 * Go back to @p psn (go-back-N): the next packet sent is the
 * one with that PSN, rebuilt from the WQE containing it; READ requests
 * restart mid-message with the remaining range. WQEs keep their PSNs.
 */
void
xport_req_rewind(struct xport_qp *qp, uint32_t psn)
{
	struct xport_req *req = &qp->req;
	uint32_t idx = qp->comp.head;
	const struct xport_swqe *w = NULL;

	req->rd_inflight = 0;
	for (; idx != req->fetch; idx++) {
		w = swqe_at(qp, idx);
		if (!w->started || psn_le(psn, w->last_psn))
			break;
		if (wr_kind_rd_atomic(w->kind))
			req->rd_inflight++;
		w = NULL;
	}
	req->cur = idx;
	req->offset = 0;
	if (w && w->started && psn_le(w->first_psn, psn) && w->kind != SWQE_ATOMIC)
		req->offset = roce_psn_diff(psn, w->first_psn) << qp->mtu_shift;
	req->psn = psn;
	req->pkts_since_ack_req = 0;
	req->kick = true;
}
