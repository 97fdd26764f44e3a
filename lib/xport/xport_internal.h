/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transport engine internals: the QP object with one sub-struct per role
 * (as rxe_qp has req/comp/resp), and the prototypes shared by the role
 * files, grouped by defining file (as rxe_loc.h).
 *
 * Indices: SQ positions are free-running ring indices (uint32_t). The
 * completer's head equals the ring's consumer index; the requester's fetch
 * index is how far WQEs were copied into the shadow array swqe[], which is
 * owned by the engine (the application cannot change a WQE under it).
 *
 *   ring cons == comp.head <= req.cur <= req.fetch <= ring prod
 *
 * Tag matching rendezvous adds WQEs of the engine's own to the shadow (an
 * RDMA READ, then a FIN SEND: xport_req_tm_inject()), which have no ring
 * slot: the shadow index is then ahead of the ring's by the number of them
 * fetched (req.skew) or completed (comp.skew):
 *
 *   ring cons == comp.head - comp.skew, ring fetch == req.fetch - req.skew
 */
#ifndef QP_XPORT_INTERNAL_H
#define QP_XPORT_INTERNAL_H

#include <stddef.h>
#include <string.h>

#include "xport.h"
#include "xport_tm.h"

/* Rate limiter: bytes charged per frame on top of the payload (Ethernet
 * preamble/IFG 20 + Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4,
 * rounded up to cover extension headers). */
#define XPORT_PACE_OVERHEAD 96u
/* Rate limiter: a frame sent at most this late keeps the schedule (the next
 * is due one interval after this one was due, not after it left), so a
 * late activation (an idle lcore's sleep, a busy CPU) does not lower the
 * rate; later than that the QP was idle and the schedule restarts. */
#define XPORT_PACE_CATCHUP_NS 10000000u

/* Bytes of the header template: a struct roce_pkt up to its extension headers. */
#define XPORT_TMPL_BYTES offsetof(struct roce_pkt, reth)
_Static_assert(offsetof(struct roce_pkt, l3) == 0, "the template starts with the addresses");

/* Kinds of send WQE: the WR opcode table's kind (wqe.h WR_OPCODE_LIST). */
enum swqe_kind {
	SWQE_SEND = WR_KIND_SEND,
	SWQE_WRITE = WR_KIND_WRITE,
	SWQE_READ = WR_KIND_READ,
	SWQE_ATOMIC = WR_KIND_ATOMIC,
	SWQE_LOCAL = WR_KIND_LOCAL,
	SWQE_ATOMIC_WRITE = WR_KIND_ATOMIC_WRITE,
	SWQE_FLUSH = WR_KIND_FLUSH,
};

/*
 * Engine copy of one send WQE plus its transport state. The shadow slots
 * are xport_qp.swqe_stride bytes apart: wqe's sg_list / inline_data hold
 * xport_qp.sq_max_sge entries, not WQE_MAX_SGE (xport_cfg.sq_max_sge).
 */
struct xport_swqe {
	uint32_t length;       /* message bytes */
	uint32_t npkts;        /* PSNs the message uses */
	uint32_t first_psn;    /* valid when started */
	uint32_t last_psn;
	uint8_t kind;          /* enum swqe_kind */
	uint8_t imm;           /* enum wr_imm of its opcode (the WR table, read once at fetch) */
	uint8_t wc_opcode;     /* enum wc_opcode of its send completion (idem) */
	bool started;          /* PSNs assigned (sticky across go-back-N) */
	bool signaled;
	uint8_t status;        /* enum wc_status to complete with (error marks) */
	uint8_t err;           /* enum xport_err */
	uint8_t tm;            /* enum swqe_tm: 0, or the engine's own (no ring slot, no send CQE) */
	struct sq_wqe wqe;     /* last: header + used SGEs / inline bytes, up to sq_max_sge */
};

/* The engine's own WQEs (tag matching rendezvous, xport_req_tm_inject()). */
enum swqe_tm {
	SWQE_TM_NONE = 0,
	SWQE_TM_RNDV_READ, /* READ rvh.len from rvh.va/rkey into the matched entry's SGEs;
			      wr_id: the entry's; wr.rdma.head: the FIN's TMH */
	SWQE_TM_FIN,       /* SEND of that TMH (inline), after the READ completed */
};

/* Requester (xport_req.c). */
struct xport_req {
	uint32_t fetch;        /* next SQ index to copy from the ring */
	uint32_t cur;          /* SQ index being sent */
	uint32_t offset;       /* bytes of cur already sent in this pass */
	uint32_t psn;          /* next PSN to send */
	uint32_t psn_max;      /* one past the highest PSN ever sent */
	uint32_t pkts_since_ack_req;
	uint32_t rd_inflight;  /* READ/ATOMIC WQEs sent, not completed */
	uint32_t window;       /* send window (PSNs): min_window..max_unacked */
	uint32_t window_credit; /* PSNs acknowledged towards the next window + 1 */
	uint64_t pace_next;    /* rate limiter: earliest time of the next frame */
	uint64_t ack_req_ns;   /* when the last AckReq packet left (paced QPs ask often enough) */
	uint64_t rnr_until;    /* RNR back-off end */
	bool rnr_wait;
	bool pace_wait;        /* held by the rate limiter */
	bool kick;             /* held by a limit or rewound: run after the completer */
	bool caught_up;        /* the last run read the producer index: nothing new (xport_qp_idle()) */
	uint32_t skew;         /* the engine's own WQEs fetched (shadow index - ring index) */
	uint32_t prod_seen;    /* the SQ producer index last read (ring index, checked) */
	uint8_t tm_resv;       /* shadow slots promised to a rendezvous being received (0, 1) */
};

/* Completer (xport_comp.c). */
struct xport_comp {
	uint32_t head;         /* oldest uncompleted SQ index (== ring cons) */
	uint32_t psn;          /* oldest unacknowledged PSN */
	uint8_t retry_left;
	uint8_t rnr_left;
	bool retrying;         /* go-back-N started: ignore NAK triggers until progress */
	uint64_t progress_ns;  /* last forward progress (ACK timer base) */
	uint32_t skew;         /* the engine's own WQEs completed (head - ring cons) */
};

/* Responder resource: one READ, ATOMIC, ATOMIC WRITE or FLUSH kept for
 * replay of duplicates. */
enum res_type {
	RES_FREE = 0,
	RES_READ,
	RES_ATOMIC,
	/* ATOMIC WRITE or FLUSH, executed once: answered (and replayed) by an
	 * empty RDMA READ RESPONSE ONLY with the AETH (IBTA 1.5, as rxe) */
	RES_EMPTY_READ_RESP,
};

struct xport_res {
	uint8_t type;          /* enum res_type */
	bool pending;          /* responses still to emit */
	bool replay;           /* pending because a duplicate asked again */
	uint32_t first_psn;
	uint32_t last_psn;
	uint32_t next_psn;     /* next response PSN to emit */
	uint64_t va;
	uint32_t rkey;
	uint32_t length;
	uint64_t atomic_orig;
};

/* Inbound message in progress (RC/UC). */
enum resp_msg {
	RESP_MSG_NONE = 0,
	RESP_MSG_SEND,
	RESP_MSG_WRITE,
};

/* Responder (xport_resp.c). */
struct xport_resp {
	uint32_t epsn;         /* expected PSN */
	uint32_t msn;          /* completed inbound messages (AETH MSN) */
	bool nak_sent;         /* sequence/RNR NAK sent: drop out-of-sequence silently */
	uint8_t msg;           /* enum resp_msg */
	uint32_t msg_len;      /* bytes received in the current message */
	/* SEND target: the receive WQE taken at FIRST/ONLY */
	bool have_recv;
	uint32_t rq_prod_seen; /* the RQ producer index last read (untrusted; recv_avail()); in a hole */
	struct rq_wqe recv;
	uint32_t recv_cap;
	/*
	 * Tag matching (a QP of a TM SRQ): the verdict of the current SEND
	 * from its first packet (enum xport_tm_verdict + 1; 0: a plain
	 * receive), its TMH, and the TMH bytes not placed (EAGER: the entry
	 * gets what follows them; recv is the entry then).
	 */
	uint8_t tm_v;
	uint8_t tm_skip;
	struct xport_tmh tm_h;
	/* WRITE target from the RETH */
	uint64_t write_va;
	uint32_t write_rkey;
	uint32_t write_len;
	/* coalesced acknowledgement */
	bool ack_pending;
	uint8_t ack_syndrome;
	uint32_t ack_psn;
	bool error_after_ack;  /* class C: enter ERR when the NAK is out */
	uint8_t error_code;    /* enum xport_err for that */
	/* resources: a ring of cfg.max_dest_rd_atomic slots in res[] */
	uint32_t res_next;     /* slot of the next resource (= oldest when full) */
	uint32_t res_pending;  /* resources with pending responses */
	uint32_t res_emit;     /* slot emitting now (oldest pending), a hint */
	struct xport_res *res; /* xport_qp.res_cap slots: storage, kept across resets */
	/* XRC TGT: the SRQ the current request names (its XRCETH) and its handle then */
	struct xport_srq *xsrq;
	uint32_t xsrq_handle;
	uint32_t xsrq_srqn;
};

struct xport_qp {
	struct xport_cfg cfg;
	uint8_t state;         /* enum xport_state */
	uint8_t mtu_shift;     /* log2(path MTU bytes) */
	uint32_t mtu;
	uint32_t ack_req_every;
	uint32_t max_unacked;  /* send window cap */
	uint32_t min_window;   /* send window floor (<= max_unacked) */
	uint64_t ack_timeout_ns; /* 0 = none */
	/* header template towards the connected peer: the part of a struct
	 * roce_pkt before its extension headers (xport_frame_new()), its
	 * addresses and the bytes after them (BTH fields, hdrs) */
	struct roce_l3 tmpl_l3;
	uint8_t tmpl_bth[XPORT_TMPL_BYTES - sizeof(struct roce_l3)];
	struct xport_req req;
	struct xport_comp comp;
	struct xport_resp resp;
	uint64_t timer_at[XPORT_TIMER_COUNT]; /* armed expiry, 0 = not armed */
	bool last_wqe_event;   /* SRQ QP: LAST_WQE_REACHED sent */
	bool comm_est_event;   /* COMM_EST sent (first packet received in RTR) */
	bool drained_event;    /* SQ_DRAINED sent for the current SQD period */
	struct xport_swqe *swqe; /* sq_mask + 1 entries, after the object */
	/* responder resources (resp.res): res_cap >= cfg.max_dest_rd_atomic
	 * slots, after swqe[] as the create configuration sized them, or from
	 * the heap once xport_qp_modify() asked for more (res_heap) */
	uint32_t res_cap;
	bool res_heap;
	uint32_t sq_mask;      /* trusted SQ geometry (cfg.sq_size - 1) */
	uint32_t swqe_stride;  /* bytes per shadow slot (xport_swqe_bytes()) */
	uint8_t sq_max_sge;    /* SGEs (16-byte units of inline data) a shadow slot holds */
	uint32_t rq_mask;      /* trusted RQ geometry (cfg.rq_size - 1), 0 with an SRQ */
	struct dcqcn_rp rp;    /* congestion control, reaction point (xport_cc.c) */
	struct dcqcn_np np;    /* congestion control, notification point */
	struct delay_rp dl;    /* cc = delay: reaction point */
	uint64_t probe_ns;     /* cc = delay: when the RTT probe (probe_psn) left, 0: none out */
	uint32_t probe_psn;    /* cc = delay: the AckReq packet being timed */
	uint64_t cnt[XPORT_CNT_COUNT]; /* written through cnt_inc/cnt_add/cnt_set only */
	uint64_t cnt_dirty;    /* bit i: cnt[i] written since xport_qp_counters_dirty() */
};
_Static_assert(XPORT_CNT_COUNT <= 64, "one dirty bit per counter");

static inline struct xport_swqe *
swqe_at(const struct xport_qp *qp, uint32_t idx)
{
	return (struct xport_swqe *)((uint8_t *)qp->swqe +
				     (size_t)(idx & qp->sq_mask) * qp->swqe_stride);
}

/* Trusted ring geometry (xport.h "Untrusted rings"). */
static inline uint32_t
cq_slots(const struct xport_cq *cq)
{
	return cq->size ? cq->size : cq->ring->size;
}

static inline uint32_t
srq_slots(const struct xport_srq *srq)
{
	return srq->size ? srq->size : srq->ring->size;
}

/* The SQ WQE at ring index @p idx. */
static inline const struct sq_wqe *
sq_ring_at(const struct xport_qp *qp, uint32_t idx)
{
	return spsc_ring_slot_in(qp->cfg.sq, qp->sq_mask, sizeof(struct sq_wqe), idx);
}

static inline void
cnt_add(struct xport_qp *qp, enum xport_counter c, uint64_t n)
{
	qp->cnt[c] += n;
	qp->cnt_dirty |= 1ull << c;
}

static inline void
cnt_inc(struct xport_qp *qp, enum xport_counter c)
{
	cnt_add(qp, c, 1);
}

/* A gauge (a rate, an RTT): the value, not a count. */
static inline void
cnt_set(struct xport_qp *qp, enum xport_counter c, uint64_t v)
{
	qp->cnt[c] = v;
	qp->cnt_dirty |= 1ull << c;
}

static inline bool
qp_is_rc(const struct xport_qp *qp)
{
	return qp->cfg.type == XPORT_RC;
}

/*
 * XRC TGT: the SRQ the responder works for, while the owner lcore still has
 * it (xrc_live: an SRQ destroyed or its slot reused is not). Others: cfg.srq.
 */
static inline struct xport_srq *
qp_srq(const struct xport_qp *qp)
{
	struct xport_srq *s = qp->resp.xsrq;

	if (__builtin_expect(qp->cfg.xrc != XPORT_XRC_TGT, 1))
		return qp->cfg.srq;
	if (s == NULL || __atomic_load_n(&s->xrc_live, __ATOMIC_ACQUIRE) != qp->resp.xsrq_handle)
		return NULL;
	return s;
}

/* Receive completions go to the QP's receive CQ, or an XRC SRQ's CQ (NULL: none). */
static inline struct xport_cq *
qp_recv_cq(const struct xport_qp *qp)
{
	if (__builtin_expect(qp->cfg.xrc != XPORT_XRC_TGT, 1))
		return qp->cfg.recv_cq;
	struct xport_srq *s = qp_srq(qp);
	return s ? s->cq : NULL;
}

/* The PD of responder memory checks: an XRC TGT QP has none, the SRQ's counts (9.8.2). */
static inline uint32_t
qp_resp_pd(const struct xport_qp *qp)
{
	struct xport_srq *s;

	if (__builtin_expect(qp->cfg.xrc != XPORT_XRC_TGT, 1))
		return qp->cfg.pd;
	s = qp_srq(qp);
	return s ? s->pd : UINT32_MAX; /* no SRQ: no key matches */
}

/* PSN arithmetic shortcuts. */
static inline bool
psn_lt(uint32_t a, uint32_t b)
{
	return roce_psn_cmp(a, b) < 0;
}

static inline bool
psn_le(uint32_t a, uint32_t b)
{
	return roce_psn_cmp(a, b) <= 0;
}

/* xport.c */
struct cqe *xport_cq_full(struct xport_qp *qp, struct xport_cq *cq, struct xport_out *out);
void xport_cq_notify(struct xport_cq *cq, bool solicited, struct xport_out *out);
bool xport_cq_post(struct xport_qp *qp, struct xport_cq *cq, const struct cqe *c,
		   bool solicited, struct xport_out *out);
void xport_frame_set_av(struct xport_frame *f, const struct wr_av *av, uint32_t lqpn,
			uint32_t rqpn);
void xport_event(struct xport_out *out, enum xport_event_type type, uint8_t code,
		 uint32_t handle);
void xport_qp_enter_error(struct xport_qp *qp, enum xport_err why, struct xport_out *out);
int xport_sg_gather_slow(struct xport_qp *qp, const struct xport_swqe *w, uint32_t offset,
			 uint32_t len, struct xport_out *out, struct xport_frame *f);
enum mr_status xport_sg_scatter_slow(struct xport_qp *qp, const struct wr_sge *sg,
				     uint32_t nsge, uint32_t offset, const uint8_t *src,
				     uint32_t len);
uint32_t xport_sg_total(const struct wr_sge *sg, uint32_t nsge);
bool xport_sq_complete_head(struct xport_qp *qp, uint64_t now, struct xport_out *out, bool stage);

/* xport_req.c */
void xport_req_run(struct xport_qp *qp, uint64_t now, struct xport_out *out);
void xport_req_rewind(struct xport_qp *qp, uint32_t psn);
void xport_req_reset(struct xport_qp *qp);
void xport_req_window_loss(struct xport_qp *qp);

/* @p npsn more PSNs acknowledged: one more per window's worth, up to the cap
 * (inline: the completer calls it for every WQE a coalesced ACK completes). */
static inline void
xport_req_window_acked(struct xport_qp *qp, uint32_t npsn)
{
	struct xport_req *req = &qp->req;

	req->window_credit += npsn;
	while (req->window_credit >= req->window && req->window < qp->max_unacked) {
		req->window_credit -= req->window;
		req->window++;
	}
	if (req->window == qp->max_unacked)
		req->window_credit = 0;
}

/* A shadow slot is free for an engine WQE (beyond those promised). */
static inline bool
xport_req_tm_room(const struct xport_qp *qp)
{
	return qp->req.fetch - qp->comp.head + qp->req.tm_resv <= qp->sq_mask;
}
/*
 * Append the engine's own WQE @p wqe (kind @p tm, enum swqe_tm) of @p length
 * bytes to the shadow at req.fetch (the caller checked xport_req_tm_room()
 * or holds a promise) and kick the requester.
 */
void xport_req_tm_inject(struct xport_qp *qp, uint8_t tm, const struct sq_wqe *wqe,
			 uint32_t length);
/*
 * The BTH opcode of packet @p pos (0 FIRST, 1 MIDDLE, 2 LAST, 3 ONLY) of a
 * work request @p wr_opcode (valid on the QP) on a QP of @p type, from the
 * WR opcode table (wqe.h).
 */
uint8_t xport_wr_wire_opcode(uint32_t wr_opcode, uint8_t type, unsigned int pos);
const char *xport_req_step_name(unsigned step);

/* xport_resp.c */
/* Take the next receive WQE (SRQ or RQ) into resp.recv; @return false: none posted. */
bool xport_resp_take_recv(struct xport_qp *qp, struct xport_out *out);
void xport_resp_rx(struct xport_qp *qp, const struct roce_pkt *pkt, uint64_t now,
		   struct xport_out *out);
void xport_resp_emit(struct xport_qp *qp, uint64_t now, struct xport_out *out);
void xport_resp_reset(struct xport_qp *qp);
void xport_resp_flush(struct xport_qp *qp, uint64_t now, struct xport_out *out);
const char *xport_resp_step_name(unsigned step);

/* xport_comp.c */
void xport_comp_rx(struct xport_qp *qp, const struct roce_pkt *pkt, uint64_t now,
		   struct xport_out *out);
void xport_comp_timeout(struct xport_qp *qp, uint64_t now, struct xport_out *out);
void xport_comp_reset(struct xport_qp *qp);
void xport_comp_progress(struct xport_qp *qp, uint64_t now);
const char *xport_comp_step_name(unsigned step);

/* xport_cc.c */
void xport_cc_qos(const struct xport_cc *cc, struct roce_l3 *l3);
void xport_cc_rx_ce(struct xport_qp *qp, const struct roce_pkt *pkt, uint64_t now,
		    struct xport_out *out);
void xport_cc_rx_cnp(struct xport_qp *qp, const struct roce_pkt *pkt, uint64_t now);
void xport_cc_timer(struct xport_qp *qp, uint64_t now);
void xport_cc_reset(struct xport_qp *qp);
void xport_cc_probe_sent(struct xport_qp *qp, uint32_t psn, bool retransmit, uint64_t now);
void xport_cc_acked(struct xport_qp *qp, uint32_t psn, uint64_t now);

/* ---- hot-path helpers (inline) ---- */

/* The QP's reaction point times RTT probes (cc = delay): xport_cc_probe_sent() acts. */
static inline bool
xport_cc_probing(const struct xport_qp *qp)
{
	return qp->cfg.cc != NULL && qp->cfg.cc->algo == XPORT_CC_DELAY;
}

/*
 * The requester's pacing rate in kb/s, 0 = unpaced: the lower of the QP's
 * rate limit (ibv_qp_attr.rate_limit) and its congestion control rate
 * (DCQCN's or the delay-based one's; line rate with xport_cc.pace_line).
 */
static inline uint32_t
xport_pace_kbps(const struct xport_qp *qp)
{
	uint32_t limit = qp->cfg.rate_limit_kbps, cc = dcqcn_rp_rate(&qp->rp);

	if (cc == 0)
		cc = delay_rp_rate(&qp->dl); /* one of the two is active per port */
	if (cc == 0 && qp->cfg.cc && qp->cfg.cc->pace_line)
		cc = qp->cfg.cc->dcqcn.line_kbps;
	if (cc == 0 || (limit != 0 && limit < cc))
		return limit;
	return cc;
}

/*
 * The pacer holds the QP's next data frame (a request, or a READ response:
 * a NIC's rate limiter paces everything the QP sends with a payload) until
 * req.pace_next. @return true if held; sync_timers arms the PACE timer.
 */
static inline bool
xport_pace_hold(struct xport_qp *qp, uint64_t now)
{
	if (!xport_pace_kbps(qp) || now >= qp->req.pace_next)
		return false;
	if (!qp->req.pace_wait)
		cnt_inc(qp, XPORT_CNT_PACE_WAIT);
	qp->req.pace_wait = true;
	return true;
}

void xport_pace_charge(struct xport_qp *qp, uint64_t now, uint32_t payload_len);

/* @p bytes left the requester (frame bytes as the pacer charges them): DCQCN's byte counter. */
static inline void
xport_cc_sent(struct xport_qp *qp, uint64_t bytes)
{
	if (__builtin_expect(qp->rp.limited, 0)) {
		dcqcn_rp_sent(&qp->rp, &qp->cfg.cc->dcqcn, bytes);
		cnt_set(qp, XPORT_CNT_CC_RATE_KBPS, dcqcn_rp_rate(&qp->rp));
	}
}

/* The deadline XPORT_TIMER_CC must fire at, 0: none. */
static inline uint64_t
xport_cc_deadline(const struct xport_qp *qp)
{
	return dcqcn_rp_next_ns(&qp->rp);
}

/* A frame slot's flags and segments as a new frame has them: the slot
 * may hold an earlier frame's (the output context is reused). */
static inline void
xport_frame_clear(struct xport_frame *f)
{
	f->raw = false;
	f->seg_mr = false;
	f->nseg = 0;
}

/*
 * A frame slot in @p out preset from the QP's header template, or NULL
 * (out->more set) when the output context is full.
 */
static inline struct xport_frame *
xport_frame_new(struct xport_qp *qp, struct xport_out *out, uint8_t opcode, uint32_t psn)
{
	if (out->nframes >= XPORT_OUT_FRAMES) {
		out->more = true;
		return NULL;
	}
	struct xport_frame *f = &out->frames[out->nframes];
	/* XRC: the RC opcodes in the XRC class (IBTA 9.2 table 39) */
	if (qp->cfg.xrc != XPORT_XRC_NONE && opcode < ROCE_TRANSPORT_UC)
		opcode |= ROCE_TRANSPORT_XRC;
	/*
	 * The template's part before the extension headers (addresses, BTH),
	 * then the payload and parse fields cleared: each caller sets the
	 * extension headers its opcode has, and nothing reads the others
	 * (roce_build() writes the opcode's headers only): copying the whole
	 * 216-byte record was 33 instructions per frame, this is 16.
	 */
	memcpy(&f->pkt.l3, &qp->tmpl_l3, sizeof(qp->tmpl_l3));
	memcpy((uint8_t *)&f->pkt + sizeof(qp->tmpl_l3), qp->tmpl_bth, sizeof(qp->tmpl_bth));
	memset(&f->pkt.payload, 0, sizeof(f->pkt) - offsetof(struct roce_pkt, payload));
	f->pkt.opcode = opcode;
	f->pkt.hdrs = roce_opcode_table[opcode].hdrs;
	f->pkt.psn = psn;
	xport_frame_clear(f);
	return f;
}

/* Bytes per slot of a receive ring whose configured stride is @p s (0: the whole record). */
static inline uint32_t
xport_rq_stride(uint32_t s)
{
	return s ? s : (uint32_t)sizeof(struct rq_wqe);
}

/* Count @p f as sent (payload_len set by the caller). */
static inline void
xport_frame_commit(struct xport_qp *qp, struct xport_out *out, struct xport_frame *f)
{
	f->pkt.pad = (uint8_t)(-f->pkt.payload_len & 3);
	f->pkt.l3.ip_id = qp->tmpl_l3.ip_id++;
	out->nframes++;
	cnt_inc(qp, XPORT_CNT_TX_PKTS);
	cnt_add(qp, XPORT_CNT_TX_BYTES, f->pkt.payload_len);
}

/* CQE slots beyond the next one whose line xport_cq_slot_free() takes for writing */
#define XPORT_CQ_PREFETCH 4u

/*
 * The slot for the next CQE of @p cq if the cached consumer index shows
 * room, else NULL (xport_cq_reserve() then looks again); nothing is
 * written. The line of the free slot XPORT_CQ_PREFETCH later is taken for
 * writing now: the application's core read it a lap ago, and a store that
 * waits for that line to come back holds up every store behind it
 * (doc/benchmarks.md, session 26). A slot the application gave back is
 * one it no longer reads, so nothing moves twice.
 */
static inline struct cqe *
xport_cq_slot_free(struct xport_cq *cq)
{
	struct spsc_ring *r = cq->ring;
	uint32_t size = cq_slots(cq);
	uint32_t prod = __atomic_load_n(&r->prod, __ATOMIC_RELAXED) + cq->staged;

	if (__builtin_expect(prod - cq->cons_cache >= size || cq->overflowed, 0))
		return NULL;
	if (prod + XPORT_CQ_PREFETCH - cq->cons_cache < size)
		spsc_ring_prefetchw(spsc_ring_slot_in(r, size - 1, sizeof(struct cqe), prod + XPORT_CQ_PREFETCH));
	return spsc_ring_slot_in(r, size - 1, sizeof(struct cqe), prod);
}

/*
 * The slot for the next CQE of @p cq, or NULL on overflow. The engine is
 * the ring's only producer; the consumer index (written by the shim) is
 * re-read with acquire only when the cached copy says full.
 */
static inline struct cqe *
xport_cq_reserve(struct xport_qp *qp, struct xport_cq *cq, struct xport_out *out)
{
	struct cqe *c = xport_cq_slot_free(cq);

	return __builtin_expect(c != NULL, 1) ? c : xport_cq_full(qp, cq, out);
}

/*
 * Publish the staged CQEs and @p n more (release), the last of them @p c
 * (NULL: none); notify if armed.
 */
static inline void
xport_cq_publish_n(struct xport_cq *cq, uint32_t n, const struct cqe *c, bool solicited,
		   struct xport_out *out)
{
	uint32_t staged = cq->staged;

	spsc_ring_publish(cq->ring, n + staged);
	if (__builtin_expect(staged != 0, 0)) {
		solicited |= cq->staged_sol;
		cq->staged = 0;
		cq->staged_sol = false;
	}
	/*
	 * Store prod, then load arm; the application stores arm (seq_cst), then
	 * loads prod (ipc_shm.h). Without a full fence here our load can pass
	 * our store (x86 store buffer): both sides read the old value and the
	 * wakeup is lost (the application sleeps on a CQ that holds a CQE).
	 * The fence waits for every store before it, the CQEs' lines and the
	 * index the application's core holds: a CQ nobody can wait on (no
	 * arm word: no completion channel) does without it.
	 */
	if (cq->arm) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(cq->arm, __ATOMIC_RELAXED))
			xport_cq_notify(cq, solicited || (c != NULL && c->status != WC_SUCCESS), out);
	}
}

/* The work completion of send WQE @p w, written into CQ slot @p c. */
static inline void
xport_sq_cqe(struct cqe *c, const struct xport_qp *qp, const struct xport_swqe *w, uint64_t now)
{
	*c = (struct cqe){
		.wr_id = w->wqe.wr_id,
		.status = w->status,
		.opcode = w->wc_opcode,
		.vendor_err = w->err,
		.byte_len = w->length,
		.qp_num = qp->cfg.qpn,
		.timestamp = now,
	};
}

/* Publish the CQE written into the reserved slot (and any staged before it). */
static inline void
xport_cq_commit(struct xport_cq *cq, const struct cqe *c, bool solicited, struct xport_out *out)
{
	xport_cq_publish_n(cq, 1, c, solicited, out);
}

/*
 * Keep the CQE written into the reserved slot unpublished: the engine entry
 * point publishes it with the next ones (xport_cq_publish()) before it
 * returns (xport_req_run(), xport_qp_rx_burst(): a coalesced ACK's
 * completions, a burst's READ responses and receives), one release store
 * and one fence for them all; any commit on the CQ meanwhile publishes them
 * first (xport_cq_reserve() counts the staged ones: fewer than the ring's
 * slots). Nothing stays staged between engine calls. @p status is the
 * CQE's, from the caller: read back from the slot, a line the application
 * reads, it waited for that line (doc/benchmarks.md, session 24).
 */
static inline void
xport_cq_stage(struct xport_cq *cq, bool solicited, uint8_t status)
{
	cq->staged++;
	cq->staged_sol |= solicited || status != WC_SUCCESS;
}

/* Publish what xport_cq_stage() kept, if anything. */
static inline void
xport_cq_publish(struct xport_cq *cq, struct xport_out *out)
{
	if (cq && cq->staged)
		xport_cq_publish_n(cq, 0, NULL, false, out);
}

/* Count a fallback copy (mr.h mr_indirect_*()) and pass its result on. */
static inline enum mr_status
xport_fallback(struct xport_qp *qp, enum mr_status st)
{
	cnt_inc(qp, st == MR_OK ? XPORT_CNT_MR_FALLBACK_COPIES : XPORT_CNT_MR_FALLBACK_ERRORS);
	return st;
}

/*
 * Copy @p len bytes at the owner's @p addr of indirect MR @p key (mr_check()
 * said MR_INDIRECT) to byte @p at of frame @p f's bounce slot in @p out, and
 * count the copy. @return where the bytes now are, or NULL: they do not fit
 * the slot, or the copy failed.
 */
static inline uint8_t *
xport_bounce_read(struct xport_qp *qp, struct xport_out *out, const struct xport_frame *f,
		  uint32_t at, uint32_t key, const uint8_t *addr, uint32_t len)
{
	uint8_t *b = out->bounce[f - out->frames] + at;

	if (len > XPORT_BOUNCE_FRAME - at ||
	    xport_fallback(qp, mr_indirect_read(qp->cfg.mrs, key, addr, b, len)) != MR_OK)
		return NULL;
	return b;
}

/*
 * The key check of every access: mr_check() for an MR key; a window key
 * (mw.h) only as an R_Key, i.e. for a remote access, checked against its
 * window, its QP and PD, then its MR. @return as mr_check()
 */
static inline enum mr_status
xport_key_check(struct xport_qp *qp, uint32_t key, uint64_t iova, uint64_t len, uint32_t access,
		uint8_t **host)
{
	const uint32_t remote = MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
				MR_ACCESS_REMOTE_ATOMIC | MR_ACCESS_FLUSH_GLOBAL |
				MR_ACCESS_FLUSH_PERSISTENT;

	if (__builtin_expect(mw_key_is_mw(key), 0))
		return (access & remote) ? mw_check(qp->cfg.mws, qp->cfg.mrs, key, qp_resp_pd(qp),
						    qp->cfg.qpn, iova, len, access, host)
					 : MR_ERR_KEY;
	return mr_check(qp->cfg.mrs, key, qp_resp_pd(qp), iova, len, access, host);
}

/*
 * Invalidate R_Key @p key for this QP: a type 2 window (mw_invalidate()),
 * or an MR that may be invalidated so (mr_invalidate_remote()).
 * @return 0 or -errno
 */
static inline int
xport_invalidate(struct xport_qp *qp, uint32_t key)
{
	if (mw_key_is_mw(key))
		return mw_invalidate(qp->cfg.mws, key, qp_resp_pd(qp), qp->cfg.qpn);
	return mr_invalidate_remote(qp->cfg.mrs, key, qp_resp_pd(qp));
}

/*
 * Check [iova, iova + len) of @p key for @p access, then copy @p src there:
 * memcpy, or the fallback copy for an indirect MR.
 * @return MR_OK, or why not (MR_ERR_COPY: the fallback copy failed)
 */
static inline enum mr_status
xport_mr_write(struct xport_qp *qp, uint32_t key, uint64_t iova, uint32_t access,
	       const uint8_t *src, uint32_t len)
{
	uint8_t *host;
	enum mr_status st = xport_key_check(qp, key, iova, len, access, &host);

	if (__builtin_expect(st == MR_OK, 1)) {
		memcpy(host, src, len);
		return MR_OK;
	}
	if (st == MR_INDIRECT)
		st = xport_fallback(qp, mr_indirect_write(qp->cfg.mrs, key, host, src, len));
	return st;
}

/*
 * Payload segments of [offset, offset + len) of a send WQE into @p f (the
 * frame being built in @p out), each checked with its lkey (range, PD);
 * indirect MRs are copied into f's bounce slot (slow path).
 * @return 0, or -1 on a key error or a failed fallback copy.
 */
static inline int
xport_sg_gather(struct xport_qp *qp, const struct xport_swqe *w, uint32_t offset, uint32_t len,
		struct xport_out *out, struct xport_frame *f)
{
	const struct wr_sge *sg = w->wqe.sg_list;
	uint8_t *host;

	if (len == 0)
		return 0;
	if (w->wqe.send_flags & WR_FLAG_INLINE) {
		f->seg[0].addr = w->wqe.inline_data + offset;
		f->seg[0].len = len;
		f->nseg = 1;
		return 0;
	}
	if (offset + len > sg[0].length ||
	    mr_check(qp->cfg.mrs, sg[0].lkey, qp->cfg.pd, sg[0].addr + offset, len, 0, &host) !=
		    MR_OK)
		return xport_sg_gather_slow(qp, w, offset, len, out, f);
	f->seg[0].addr = host;
	f->seg[0].len = len;
	f->nseg = 1;
	f->seg_mr = qp_is_rc(qp); /* UC and UD complete on sending: the buffer is the app's again */
	return 0;
}

/*
 * Copy @p len bytes to [offset, offset + len) of a scatter list, each piece
 * checked with its lkey for local write access (xport_mr_write()).
 * @return MR_OK, or why not (nothing is written past the failing piece)
 */
static inline enum mr_status
xport_sg_scatter(struct xport_qp *qp, const struct wr_sge *sg, uint32_t nsge, uint32_t offset,
		 const uint8_t *src, uint32_t len)
{
	if (nsge == 0 || (uint64_t)offset + len > sg[0].length)
		return xport_sg_scatter_slow(qp, sg, nsge, offset, src, len);
	return xport_mr_write(qp, sg[0].lkey, sg[0].addr + offset, MR_ACCESS_LOCAL_WRITE, src, len);
}

#endif /* QP_XPORT_INTERNAL_H */
