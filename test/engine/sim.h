/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Deterministic simulated link between two transport engines in one process.
 *
 * Each host has one QP with its own rings (SQ, RQ or SRQ, two CQs), an MR
 * table with one large "arena" region, and a model of the timer wheel
 * (absolute expiries of the two engine timers). Frames leave an engine as
 * struct xport_frame, are built into bytes (roce_build_gather: headers,
 * gathered payload, pad, ICRC), go through the faulty link (seeded loss,
 * duplication, reordering, corruption, delay) and are parsed with
 * roce_parse() (so the ICRC catches corruption) before reaching the peer.
 *
 * Time is simulated: the loop jumps to the next frame arrival or timer
 * expiry; everything is ordered by (time, sequence number), so one seed
 * gives one trace. The trace hash covers every frame on the wire and every
 * CQE. Frames of RAW_PACKET QPs (xport_frame.raw) are their gathered
 * bytes and reach the peer's xport_qp_raw_rx() unparsed.
 */
#ifndef TEST_ENGINE_SIM_H
#define TEST_ENGINE_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "xport.h"

#define SIM_PD 1
/* Each host's address handle towards the other (its cfg.av), in its ahs table. */
#define SIM_AH 1

struct sim_faults {
	uint32_t loss_ppm;
	uint32_t dup_ppm;
	uint32_t reorder_ppm;
	uint32_t corrupt_ppm;
	uint64_t delay_ns;        /* base one-way delay */
	uint64_t reorder_ns;      /* extra delay (random up to) of a reordered frame */
	uint64_t timer_late_ns;   /* every timer fires this late (a busy or sleeping lcore) */
};

/*
 * Receive-ring model of one host (the daemon's af_packet ring): arriving
 * frames wait in a ring of `slots` frames for the receiver's next poll, at
 * the next multiple of poll_ns; a frame that finds the ring full is dropped
 * (the kernel drops silently). slots = 0: frames reach the engine on arrival.
 */
struct sim_rx_ring {
	uint32_t slots;
	uint64_t poll_ns;
	uint64_t due;             /* next poll, valid while n > 0 */
	uint32_t n;
	struct sim_frame **q;
	uint64_t drops;           /* frames the full ring dropped */
};

/*
 * Host 0's link and a switch queue on host 0 -> host 1 (the DCQCN tests):
 * frames leave host 0 at `line_kbps` (its NIC), then the queue at `kbps`;
 * one that finds more than `limit` bytes queued is dropped (tail drop);
 * above kmin an ECN-capable frame is marked CE with a probability rising
 * linearly to pmax_ppm at kmax, and always above kmax (RED-like, as
 * DCQCN's switches mark, section 3.1).
 * kbps = 0: neither.
 */
struct sim_bottleneck {
	uint64_t kbps, line_kbps;
	uint32_t kmin, kmax, limit; /* bytes */
	uint32_t pmax_ppm;        /* marking probability at kmax, parts per million */
	uint64_t line_busy;       /* when host 0's link is free (ns) */
	uint64_t busy_until;      /* when the queue drains (ns) */
	uint64_t marked, dropped, max_queue;
	uint64_t below_kmax, above_kmax; /* frames that found the queue below / at or above kmax */
	uint64_t bytes_out;       /* bytes that left the queue */
};

struct sim_host {
	struct mr_table *mrs;
	struct ah_table *ahs;     /* SIM_AH: cfg.av, PD SIM_PD */
	uint8_t *arena;
	uint64_t arena_len;
	uint32_t arena_key;       /* all access rights (FLUSH_GLOBAL too), PD SIM_PD */
	uint64_t arena_iova;      /* application VA of arena[0] */
	struct spsc_ring *sq, *rq, *srq_ring, *scq_ring, *rcq_ring;
	struct xport_cq scq, rcq;
	struct xport_srq srq;
	uint32_t cq_arm;          /* arm word of the recv CQ */
	struct xport_cfg cfg;
	struct xport_qp *qp;
	size_t qp_mem_len;        /* bytes of the QP's memory (xport_qp_init) */
	uint32_t rq_size;         /* slots of its RQ or SRQ ring */
	uint32_t rq_elem;         /* bytes per slot of that ring */
	uint64_t timer_at[XPORT_TIMER_COUNT];
	uint32_t qp_errors;       /* XPORT_EV_QP_ERROR events seen */
	uint32_t async[32];       /* async events seen, by code */
	uint32_t notifies;        /* CQ_NOTIFY events */
	uint64_t parse_drops;     /* frames the parser rejected (ICRC ...) */
	struct sim_rx_ring ring;
};

struct sim_frame;

/* Optional hook on every frame leaving host @p from: return false to drop it. */
typedef bool (*sim_filter_fn)(void *arg, int from, const struct roce_pkt *pkt);

struct sim {
	struct sim_host h[2];
	struct sim_faults faults;
	uint64_t now;
	uint64_t rng;
	uint64_t seq;
	uint64_t trace;           /* FNV-1a over frames and CQEs */
	uint64_t frames_sent;
	uint64_t frames_lost, frames_dup, frames_reordered, frames_corrupt;
	uint64_t frames_seg_mr;   /* frames marked xport_frame.seg_mr (checked in flush_out()) */
	struct sim_frame **heap;
	uint32_t heap_len, heap_cap;
	struct xport_out out;
	bool verbose;             /* ROCE_SIM_TRACE: print every frame */
	bool trace_off;           /* no trace hash (fuzz/fuzz_xport.c; sim_reset clears it) */
	/* nonzero: every emptied output context gets its frame slots filled
	 * with this byte, as a daemon's context keeps earlier frames (other
	 * QPs', other opcodes'): the wire must not change */
	uint8_t out_fill;
	sim_filter_fn filter;
	void *filter_arg;
	struct sim_bottleneck bneck;
};

struct sim_params {
	uint8_t type;             /* enum xport_qp_type */
	uint8_t mtu;              /* 1..5 */
	uint32_t psn[2];          /* sq_psn of host 0 / host 1 */
	uint32_t sq_size, rq_size, cq_size;
	uint32_t sq_max_sge;      /* xport_cfg.sq_max_sge (0: WQE_MAX_SGE) */
	uint32_t rq_stride;       /* bytes per RQ / SRQ slot (wqe.h rq_wqe_stride()); 0: the whole record */
	bool srq;                 /* host 1 uses an SRQ */
	uint64_t arena_len;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic; /* responder resources; 0: XPORT_MAX_RD_ATOMIC */
	uint32_t max_unacked, ack_req_every;
	uint32_t rate_limit_kbps;
	bool sq_sig_all;
	bool ipv6;
	const struct xport_cc *cc[2]; /* congestion control of host i's QP, NULL: none */
	struct mw_table *mws;     /* memory windows of both QPs (one daemon's), NULL: none */
	uint32_t qp_access;       /* QP access flags of both; 0: remote write, read, atomic */
	/*
	 * XRC (nonzero): host 0's QP is an XRC INI QP, host 1's an XRC TGT QP
	 * of domain xrcd, whose XRC SRQ (number SIM_XRC_SRQN, domain
	 * xrc_srq_xrcd or else xrcd, CQ: host 1's recv CQ) is its only one.
	 */
	uint32_t xrcd;
	uint32_t xrc_srq_xrcd;
	/*
	 * RAW_PACKET (type XPORT_RAW): both QPs' cfg.raw_frame_max (0: 1514);
	 * a raw frame crosses the link as bytes and reaches the peer through
	 * xport_qp_raw_rx(), as if a flow rule of the daemon matched it.
	 */
	uint32_t raw_frame_max;
};

#define SIM_XRC_SRQN 0x42

void sim_default_params(struct sim_params *p);
/* Create both hosts, QPs in RTS. @return 0 */
int sim_init(struct sim *s, const struct sim_params *p, uint64_t seed);
void sim_fini(struct sim *s);
/*
 * sim_init() again on a sim of sim_init() or sim_reset(), keeping its
 * allocations (QP memory, arenas, rings) where @p p needs the same sizes:
 * every QP, table, ring, timer, counter and in-flight frame is new, reused
 * memory zeroed as sim_init() leaves it. For loops of many short sims (the
 * xport fuzz target); test_random proves a reset sim replays as a fresh one.
 * @return 0
 */
int sim_reset(struct sim *s, const struct sim_params *p, uint64_t seed);

uint64_t sim_rand(struct sim *s);
/* uniform in [0, n) */
uint64_t sim_below(struct sim *s, uint64_t n);

/* Give host @p h a receive ring of @p slots frames polled every @p poll_ns. */
void sim_rx_ring(struct sim *s, int h, uint32_t slots, uint64_t poll_ns);

/* Post a send WQE on host @p h. @return false if the SQ is full. */
bool sim_post_send(struct sim *s, int h, const struct sq_wqe *w);
/* Post a receive WQE on host @p h (its RQ or SRQ). */
bool sim_post_recv(struct sim *s, int h, const struct rq_wqe *w);
/* Pop one CQE from host @p h's send (recv=false) or recv CQ. */
bool sim_poll_cq(struct sim *s, int h, bool recv, struct cqe *c);

/* Application VA of arena offset @p off of host @p h. */
static inline uint64_t
sim_va(const struct sim *s, int h, uint64_t off)
{
	return s->h[h].arena_iova + off;
}

/* Run until @p done returns true or the simulated clock passes @p deadline
 * or nothing is left to happen. @return true if @p done became true. */
bool sim_run(struct sim *s, bool (*done)(struct sim *s, void *arg), void *arg,
	     uint64_t deadline);

/* Poll both QPs and flush their outputs (no time advance). */
void sim_poll(struct sim *s);

/* Change the engine state of host @p h's QP, flushing what that produces. */
void sim_set_state(struct sim *s, int h, enum xport_state state);

/* Deliver a hand-made packet to host @p h now (as if received). */
void sim_inject(struct sim *s, int h, const struct roce_pkt *pkt);

/* Deliver @p n hand-made packets to host @p h as one receive burst: the
 * engine records them all before it emits (one activation, up to
 * XPORT_OUT_FRAMES frames; sim_poll() sends the rest). */
void sim_inject_burst(struct sim *s, int h, const struct roce_pkt *const pkts[], uint32_t n);

void sim_trace_add(struct sim *s, const void *data, uint64_t len);

/* Free every frame in flight (the link and the receive rings): none arrives. */
void sim_drop_frames(struct sim *s);

#endif
