/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/xport's transport engine on a worker lcore (engine_xport.h).
 */
#include "engine_xport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "bell.h"
#include "daemon_state.h"
#include "timer_wheel.h"

#define TICK_NS 1000u             /* timer wheel tick: 1 us */
#define EXPIRED_MAX 64u           /* timer expiries handled per poll */
#define IDLE_SCAN 64u             /* idle QPs whose SQ producer index one poll reads */
#define IDLE_AFTER_NS 200000u     /* a busy QP idle this long stops being polled */
#define ACTIVE_NONE UINT32_MAX    /* eqp.active_pos of a QP not polled */
#define GRACE_MAX 256u            /* QPs in that grace at once; more: a sweep of all idle QPs */

/* One engine QP as the worker keeps it (the slot's engine_qp). */
struct eqp {
	struct xport_qp *qp;
	uint32_t slot;
	uint16_t port;            /* daemon port its frames leave on */
	uint32_t active_pos;      /* index in the lcore's active list, or ACTIVE_NONE */
	uint32_t cookie;          /* echoed in events (engine_xport_qp_create) */
	struct spsc_ring *sq;     /* its SQ (cfg.sq, fixed for its life) */
	struct xport_cq *scq;     /* its send CQ (cfg.send_cq, fixed; NULL: XRC TGT) */
	bool rings;               /* listed, and its send CQ has bells: an idle post rings one */
	uint64_t idle_since;      /* busy: when polls started finding it idle, 0: not idle */
	uint64_t seen[XPORT_CNT_COUNT]; /* engine counters already added (count_engine) */
};

/* The SQ of an idle QP: it has work again once the producer index moves. */
struct bell {
	const struct spsc_ring *sq;
	uint32_t fetched;         /* xport_qp_sq_fetched() when it went idle */
};

/* Per-lcore state (w->engine_ctx). */
struct elcore {
	struct timer_wheel *wheel;
	struct timer_wheel_clock clock;   /* ns -> ticks */
	uint64_t ns_mult;                 /* TSC -> ns, 32.32 fixed point */
	/*
	 * Slots of the QPs out of RESET (active_update), dense: [0, n_busy)
	 * are polled every loop, [n_busy, n_active) are idle (xport_qp_idle()
	 * for IDLE_AFTER_NS) and only IDLE_SCAN of their doorbells (bells[],
	 * same positions) are read per loop, from position scan on, round
	 * robin. A packet, a timer, a state change or a doorbell makes a QP
	 * busy.
	 */
	uint32_t *active;
	struct bell *bells;
	uint32_t n_active;
	uint32_t n_busy;
	uint32_t scan;
	/*
	 * Send doorbells (lib/shm bell.h): the distinct send CQs of the listed
	 * QPs that have bells, with how many listed QPs use each; every loop
	 * reads each one's summary line. A QP listed whose send CQ has none
	 * (n_deaf, tests' CQs) keeps the scan running every loop; otherwise
	 * it is a sweep every scan_period_ns (sweep_left reads to go).
	 */
	struct bell_cq { struct xport_cq *cq; uint32_t refs; } *bcq;
	uint32_t n_bcq;
	uint32_t n_deaf;
	uint32_t sweep_left;
	uint64_t next_sweep;
	uint64_t scan_period_ns;
	/*
	 * QPs (slots) that went idle less than SPSC_RING_BELL_GRACE_NS ago,
	 * with their deadlines: their SQ producer index is read every loop
	 * until then, and once more after (go_idle(), poll_grace()).
	 */
	struct grace { uint32_t slot; uint64_t until; } grace[GRACE_MAX];
	uint32_t n_grace;
	struct xport_srq *tm[ENGINE_TM_MAX]; /* TM SRQs whose ops rings this lcore consumes */
	uint32_t n_tm;
	struct xport_out out;
};

static inline uint64_t
now_ns(const struct elcore *e, uint64_t tsc)
{
	return (uint64_t)(((unsigned __int128)tsc * e->ns_mult) >> 32);
}

static int
lcore_init(struct worker *w)
{
	struct timer_wheel_config tc = { .capacity = w->n_qp_slots * TIMER_WHEEL_TIMERS_PER_OWNER };
	struct elcore *e;

	WORKER_OWNER_ASSERT(w);
	e = rte_zmalloc("roce_engine", sizeof(*e), RTE_CACHE_LINE_SIZE);
	if (e == NULL)
		return -ENOMEM;
	e->ns_mult = (uint64_t)(((unsigned __int128)1000000000u << 32) / rte_get_tsc_hz());
	if (timer_wheel_clock_init(&e->clock, 1000000000u, TICK_NS) != 0)
		goto fail;
	tc.now = timer_wheel_clock_ticks(&e->clock, now_ns(e, rte_rdtsc()));
	e->wheel = timer_wheel_create(&tc);
	e->active = calloc(w->n_qp_slots, sizeof(e->active[0]));
	e->bells = calloc(w->n_qp_slots, sizeof(e->bells[0]));
	e->bcq = calloc(w->n_qp_slots, sizeof(e->bcq[0]));
	e->scan_period_ns = (uint64_t)w->d->cfg.daemon.idle_scan_us * 1000u;
	if (e->wheel == NULL || e->active == NULL || e->bells == NULL || e->bcq == NULL)
		goto fail;
	w->engine_ctx = e;
	return 0;
fail:
	timer_wheel_destroy(e->wheel);
	free(e->active);
	free(e->bells);
	free(e->bcq);
	rte_free(e);
	return -ENOMEM;
}

static void
lcore_fini(struct worker *w)
{
	struct elcore *e = w->engine_ctx;

	WORKER_OWNER_ASSERT(w);
	if (e == NULL)
		return;
	for (uint32_t s = 0; s < w->n_qp_slots; s++) {
		struct eqp *q = w->qp[s].engine_qp;

		if (q != NULL)
			engine_xport_qp_destroy(w, w->qp[s].qpn);
	}
	timer_wheel_destroy(e->wheel);
	free(e->active);
	free(e->bells);
	free(e->bcq);
	rte_free(e);
	w->engine_ctx = NULL;
}

/*
 * Add what the engine counted since the last call to the QP's, the lcore's
 * and the port's counters: every XPORT_COUNTER_LIST entry is counter
 * ctr_of_xport(c) (counters.h), so a new engine counter needs no edit here.
 * Only the counters written since (xport_qp_counters_dirty()) are read: a
 * flush after one packet reads two or three, not all XPORT_CNT_COUNT.
 */
static void
count_engine(struct worker *w, struct qp_slot *slot, struct eqp *q)
{
	const uint64_t *c = xport_qp_counters(q->qp);

	for (uint64_t m = xport_qp_counters_dirty(q->qp); m != 0; m &= m - 1) {
		unsigned int i = (unsigned int)__builtin_ctzll(m);

		if (c[i] != q->seen[i]) { /* a gauge may be set to its value again */
			worker_count(w, q->port, slot, ctr_of_xport((enum xport_counter)i),
				     c[i] - q->seen[i]);
			q->seen[i] = c[i];
		}
	}
}

/*
 * Pass @p out's events to the control thread. @p q: the QP they came from
 * (NULL: a TM SRQ's operations), whose QPN and cookie QP events carry.
 */
static void
post_events(struct worker *w, const struct xport_out *out, const struct eqp *q)
{
	for (uint32_t i = 0; i < out->nevents; i++) {
		const struct xport_event *x = &out->events[i];
		bool qp_event = q != NULL &&
				(x->type == XPORT_EV_QP_ERROR ||
				 (x->type == XPORT_EV_ASYNC && x->code != ASYNC_CQ_ERR &&
				  x->code != ASYNC_SRQ_ERR && x->code != ASYNC_SRQ_LIMIT_REACHED));
		struct worker_event ev = {
			.type = x->type, .code = x->code, .worker = (uint16_t)w->index,
			.handle = x->handle,
			.qpn = qp_event ? x->handle * w->n_workers + w->index : UINT32_MAX,
			.cookie = qp_event ? q->cookie : 0,
		};

		worker_event_post(w, &ev);
	}
}

/* Send the frames, run the timer actions, pass the events on; reset @p out. */
static unsigned int
flush(struct worker *w, struct elcore *e, struct qp_slot *slot, struct eqp *q)
{
	struct xport_out *out = &e->out;
	unsigned int n = out->nframes;
	struct rte_mbuf *mbufs[XPORT_OUT_FRAMES];
	unsigned int nm = 0, used = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct xport_frame *f = &out->frames[i];
		/* to our own MAC: looped back with its record, no ICRC; the record
		 * alone, no mbuf, when there is no payload (an ACK, a READ
		 * request) or it lies in an MR (by reference) */
		int local = !f->raw && w->capture == NULL ? worker_local_port(w, f->pkt.l3.dmac) : -1;
		bool bare = f->nseg == 0 && f->pkt.payload_len == 0;
		struct rte_mbuf *m;
		size_t room, len;
		uint8_t *buf;

		if (local >= 0 && (bare || (f->seg_mr && f->nseg == 1)) && !f->pkt.l3.udp_csum) {
			/* (a UDP checksum covers the payload: built) */
			len = roce_frame_len(&f->pkt);
			if (len != 0 && worker_tx_loop_ref(w, q->port, (uint16_t)local, &f->pkt,
							   bare ? NULL : f->seg[0].addr, len)) {
				ctr_add(&slot->ctr.v[CTR_TX_PACKETS], 1);
				ctr_add(&slot->ctr.v[CTR_TX_BYTES], len);
				continue;
			}
		}
		if (used == nm) { /* mbufs for the frames left, in one bulk get */
			nm = worker_tx_alloc(w, q->port, mbufs, n - i);
			used = 0;
			if (nm == 0) { /* pool exhausted: lost, as on a full ring */
				worker_count(w, q->port, slot, CTR_TX_DROPS, 1);
				continue;
			}
		}
		m = mbufs[used++];
		buf = rte_pktmbuf_mtod(m, uint8_t *);
		room = rte_pktmbuf_tailroom(m);
		if (unlikely(f->raw))
			len = xport_frame_raw_gather(f, buf, room);
		else if (local < 0)
			len = roce_build_gather(&f->pkt, f->seg, f->nseg, buf, room);
		else
			len = roce_build_gather_local(&f->pkt, f->seg, f->nseg, buf, room);
		if (len == 0) { /* larger than the mbuf: a path MTU above the port's */
			rte_pktmbuf_free(m);
			worker_count(w, q->port, slot, CTR_TX_DROPS, 1);
			continue;
		}
		m->data_len = (uint16_t)len;
		m->pkt_len = (uint32_t)len;
		ctr_add(&slot->ctr.v[CTR_TX_PACKETS], 1);
		ctr_add(&slot->ctr.v[CTR_TX_BYTES], len);
		if (unlikely(f->raw)) {
			ctr_add(&slot->ctr.v[CTR_TX_RAW], 1);
			worker_tx_raw(w, q->port, m);
		} else if (local >= 0) {
			worker_tx_loop_built(w, q->port, (uint16_t)local, m, &f->pkt);
		} else {
			worker_tx(w, q->port, m);
		}
	}
	rte_pktmbuf_free_bulk(mbufs + used, nm - used); /* got for frames that went by reference */
	for (uint32_t i = 0; i < out->ntimers; i++) {
		const struct xport_timer_action *t = &out->timers[i];
		uint32_t h = timer_wheel_handle(t->qp_handle, t->timer);

		if (t->arm)
			timer_wheel_arm(e->wheel, h, timer_wheel_clock_deadline_ticks(&e->clock,
										     t->expires_ns));
		else
			timer_wheel_cancel(e->wheel, h);
	}
	post_events(w, out, q);
	count_engine(w, slot, q);
	xport_out_reset(out);
	return n;
}

/* ---- the active list: busy QPs first, then idle ones ---- */

static inline struct eqp *
eqp_at(struct worker *w, const struct elcore *e, uint32_t pos)
{
	return w->qp[e->active[pos]].engine_qp;
}

static void
active_swap(struct worker *w, struct elcore *e, uint32_t i, uint32_t j)
{
	uint32_t si = e->active[i], sj = e->active[j];
	struct bell b = e->bells[i];

	e->active[i] = sj;
	e->active[j] = si;
	e->bells[i] = e->bells[j];
	e->bells[j] = b;
	eqp_at(w, e, i)->active_pos = i;
	eqp_at(w, e, j)->active_pos = j;
}

/* @p q is listed and idle: its SQ is read only through its doorbell. */
static inline bool
is_idle(const struct elcore *e, const struct eqp *q)
{
	return q->active_pos != ACTIVE_NONE && q->active_pos >= e->n_busy;
}

/* Poll @p q every loop from now on (no-op when it is busy or not listed). */
static inline void
mark_busy(struct worker *w, struct elcore *e, struct eqp *q)
{
	q->idle_since = 0;
	if (!is_idle(e, q))
		return;
	if (q->rings)
		spsc_ring_bell_off(q->sq); /* polled again: posts need not ring */
	active_swap(w, e, q->active_pos, e->n_busy++);
}

/* Busy @p q has nothing to do until its doorbell, a packet or a timer. */
static inline void
mark_idle(struct worker *w, struct elcore *e, struct eqp *q)
{
	active_swap(w, e, q->active_pos, --e->n_busy);
	e->bells[e->n_busy] = (struct bell){ .sq = q->sq, .fetched = xport_qp_sq_fetched(q->qp) };
}

/* Idle @p b's SQ producer index moved past what its QP fetched: a post. */
static inline bool
bell_moved(const struct bell *b)
{
	return spsc_ring_prod_acquire(b->sq) != b->fetched;
}

/*
 * Busy @p q goes idle: its SQ is no longer polled, so ask the shim for a
 * bell (bell number: its slot) and read the producer index once more; a
 * post seen here keeps the QP busy. The shim publishes its index and then
 * reads the flag without a fence between (queue.h
 * spsc_ring_publish_bell()): its load may pass its own store, so a post
 * racing this can both miss the flag and be missed by this read. Its
 * store reaches this core within the store buffer's drain, so the QP's
 * index is read again every loop for SPSC_RING_BELL_GRACE_NS, and once after
 * (poll_grace()); the sweep of scan_idle() stays the safety net.
 */
static void
go_idle(struct worker *w, struct elcore *e, struct eqp *q, uint64_t now)
{
	mark_idle(w, e, q);
	if (!q->rings)
		return;
	spsc_ring_want_bell(q->sq, q->slot);
	if (bell_moved(&e->bells[q->active_pos])) {
		mark_busy(w, e, q);
	} else if (e->n_grace < GRACE_MAX) {
		e->grace[e->n_grace++] = (struct grace){ .slot = e->active[q->active_pos],
							 .until = now + SPSC_RING_BELL_GRACE_NS };
	} else {
		/* too many at once: sweep every idle QP once their stores drained */
		e->next_sweep = RTE_MIN(e->next_sweep, now + SPSC_RING_BELL_GRACE_NS);
	}
}

/* Read the index of each QP in its grace after idling; wake it if it moved. */
static unsigned int
poll_grace(struct worker *w, struct elcore *e, uint64_t now)
{
	unsigned int work = 0;

	for (uint32_t i = 0; i < e->n_grace;) {
		struct eqp *q = w->qp[e->grace[i].slot].engine_qp;
		bool keep = false;

		/* the slot's QP may be another one by now (destroyed, created): only an
		 * idle one with a send queue that rings is read */
		if (q != NULL && q->rings && is_idle(e, q)) {
			if (bell_moved(&e->bells[q->active_pos])) {
				mark_busy(w, e, q);
				ctr_add(&w->ctr.v[CTR_GRACE_WAKES], 1);
				work++;
			} else {
				keep = now < e->grace[i].until; /* read once at or after it */
			}
		}
		if (keep)
			i++;
		else
			e->grace[i] = e->grace[--e->n_grace];
	}
	return work;
}

/* ---- send doorbells: the send CQs of this lcore's listed QPs ---- */

/* Listed @p q starts (@p on) or stops being woken by a bell, or by the every-loop scan. */
static void
bell_ref(struct elcore *e, struct eqp *q, bool on)
{
	uint32_t i;

	if (q->scq == NULL)
		return; /* no send queue to post to (XRC TGT) */
	if (q->scq->bells == NULL) {
		e->n_deaf += on ? 1 : -1u;
		return;
	}
	q->rings = on;
	for (i = 0; i < e->n_bcq && e->bcq[i].cq != q->scq; i++)
		;
	if (on) {
		if (i == e->n_bcq)
			e->bcq[e->n_bcq++] = (struct bell_cq){ .cq = q->scq };
		e->bcq[i].refs++;
	} else if (i < e->n_bcq && --e->bcq[i].refs == 0) {
		e->bcq[i] = e->bcq[--e->n_bcq];
	}
}

/*
 * Wake the idle QPs whose bells rang: per send CQ one load of its summary
 * line, and for a rung bell b the QPs of this CQ in slots b, b + SHM_BELLS,
 * ... (the shim rings bell = slot, modulo SHM_BELLS). The application may
 * write anything there: a bit only makes us look at slots, bounded by
 * n_qp_slots per bit and SHM_BELLS bits per CQ, and only a QP whose send
 * CQ is this one is woken; a bit naming none is counted (bell_strays).
 */
static unsigned int
poll_bells(struct worker *w, struct elcore *e)
{
	unsigned int work = 0;

	for (uint32_t c = 0; c < e->n_bcq; c++) {
		struct xport_cq *cq = e->bcq[c].cq;
		struct shm_bells *b = cq->bells;

		if (!shm_bells_any(b))
			continue;
		for (uint64_t sum = shm_bells_take_summary(b); sum != 0; sum &= sum - 1) {
			uint32_t i = (uint32_t)__builtin_ctzll(sum);

			for (uint64_t m = shm_bells_take_word(b, i); m != 0; m &= m - 1) {
				uint32_t bell = i * 64 + (uint32_t)__builtin_ctzll(m);
				bool ours = false;

				for (uint32_t s = bell; s < w->n_qp_slots; s += SHM_BELLS) {
					struct eqp *q = w->qp[s].engine_qp;

					if (q == NULL || q->scq != cq)
						continue;
					ours = true;
					if (is_idle(e, q)) {
						mark_busy(w, e, q);
						ctr_add(&w->ctr.v[CTR_BELL_WAKES], 1);
						work++;
					}
				}
				if (!ours)
					ctr_add(&w->ctr.v[CTR_BELL_STRAYS], 1);
			}
		}
	}
	return work;
}

/*
 * Run the busy QP at @p pos once and flush what it made; once polls have
 * found it idle (xport_qp_idle()) for IDLE_AFTER_NS it becomes idle (the
 * busy QP last in line takes @p pos). The delay keeps a QP that posts
 * again within microseconds (a ping-pong, a window refill) off the
 * doorbell scan.
 */
static unsigned int
poll_busy(struct worker *w, struct elcore *e, uint32_t pos, uint64_t now)
{
	struct qp_slot *slot = &w->qp[e->active[pos]];
	struct eqp *q = slot->engine_qp;
	unsigned int work;
	bool more;

	xport_qp_poll(q->qp, now, &e->out);
	more = e->out.more;
	work = (more ? 1 : 0) + flush(w, e, slot, q);
	if (work != 0 || !xport_qp_idle(q->qp)) {
		q->idle_since = 0;
	} else if (q->idle_since == 0) {
		q->idle_since = now;
	} else if (now - q->idle_since >= IDLE_AFTER_NS) {
		go_idle(w, e, q, now);
	}
	return work;
}

/*
 * Read at most IDLE_SCAN idle QPs' SQ producer indexes, round robin
 * (ipc_shm.h), and make those that moved busy: the loop's cost does not
 * grow with idle QPs; a post to one of n idle QPs waits at most
 * n / IDLE_SCAN loops. Every loop while a listed QP cannot ring (n_deaf);
 * otherwise bells wake idle QPs and this is only the safety net for a
 * post that rang none (a client writing its rings by hand, a bell lost
 * in a CQ resize): a sweep of all idle QPs every scan_period_ns (config
 * idle_scan_us), IDLE_SCAN per loop.
 */
static unsigned int
scan_idle(struct worker *w, struct elcore *e, uint64_t now)
{
	unsigned int work = 0;
	uint32_t budget = IDLE_SCAN;

	if (e->n_deaf == 0 && e->scan_period_ns != 0) {
		if (e->sweep_left == 0) {
			if (now < e->next_sweep)
				return 0;
			e->next_sweep = now + e->scan_period_ns;
			e->sweep_left = e->n_active - e->n_busy;
		}
		budget = RTE_MIN(budget, e->sweep_left);
		e->sweep_left -= budget;
	}
	for (uint32_t i = 0; i < budget && e->n_busy < e->n_active; i++) {
		if (e->scan < e->n_busy || e->scan >= e->n_active)
			e->scan = e->n_busy;
		const struct bell *b = &e->bells[e->scan];

		if (!bell_moved(b)) {
			e->scan++;
			continue;
		}
		ctr_add(&w->ctr.v[CTR_SCAN_WAKES], 1);
		/* it goes to the busy part; whoever takes its position is read next */
		struct eqp *q = eqp_at(w, e, e->scan);

		mark_busy(w, e, q);
		work += 1 + poll_busy(w, e, q->active_pos, now);
	}
	return work;
}

static void
rx(struct worker *w, struct engine_rx *pkts, uint16_t n)
{
	struct elcore *e = w->engine_ctx;
	const struct roce_pkt *group[WORKER_BURST_MAX];
	uint64_t now = now_ns(e, rte_rdtsc());

	WORKER_OWNER_ASSERT(w);
	/* One engine call per run of packets for the same QP; a raw frame alone. */
	for (uint16_t i = 0; i < n;) {
		struct qp_slot *slot = pkts[i].qp;
		struct eqp *q = slot->engine_qp;
		uint32_t k = 0;

		if (unlikely(pkts[i].raw)) {
			const struct rte_mbuf *m = pkts[i++].m;

			ctr_add(&slot->ctr.v[CTR_RX_RAW], 1);
			xport_qp_raw_rx(q->qp, rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, now,
					&e->out);
		} else {
			while (i < n && pkts[i].qp == slot && !pkts[i].raw)
				group[k++] = &pkts[i++].pkt;
			xport_qp_rx_burst(q->qp, group, k, now, &e->out);
		}
		flush(w, e, slot, q);
		mark_busy(w, e, q);
	}
}

/* A TM SRQ's operations; their events (CQ notify, CQ overrun) concern no QP. */
static unsigned int
poll_tm(struct worker *w, struct elcore *e, struct xport_srq *srq)
{
	struct xport_out *out = &e->out;
	uint32_t n = xport_srq_tm_poll(srq, ENGINE_TM_BUDGET, out);

	post_events(w, out, NULL);
	xport_out_reset(out);
	return n;
}

static unsigned int
poll_engine(struct worker *w, uint64_t tsc)
{
	struct elcore *e = w->engine_ctx;
	uint64_t now = now_ns(e, tsc);
	uint32_t expired[EXPIRED_MAX];
	unsigned int work = 0;
	uint32_t n;

	WORKER_OWNER_ASSERT(w);
	n = timer_wheel_poll(e->wheel, timer_wheel_clock_ticks(&e->clock, now), expired, EXPIRED_MAX);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t s = timer_wheel_handle_owner(expired[i]);
		struct eqp *q = s < w->n_qp_slots ? w->qp[s].engine_qp : NULL;

		if (q == NULL)
			continue; /* destroyed meanwhile */
		xport_qp_timer_expired(q->qp, (enum xport_timer)timer_wheel_handle_timer_id(expired[i]),
				       now, &e->out);
		work += 1 + flush(w, e, &w->qp[s], q);
		mark_busy(w, e, q);
	}
	work += poll_bells(w, e); /* before the busy QPs: those woken run in this loop */
	if (e->n_grace != 0)
		work += poll_grace(w, e, now);
	for (uint32_t a = 0; a < e->n_busy;) {
		uint32_t busy = e->n_busy;

		work += poll_busy(w, e, a, now);
		if (e->n_busy == busy)
			a++; /* else the last busy QP moved to a: run it too */
	}
	work += scan_idle(w, e, now);
	for (uint32_t i = 0; i < e->n_tm; i++)
		work += poll_tm(w, e, e->tm[i]);
	return work;
}

/* engine_ops idle_ns: until the wheel's next deadline (its tick is 1 ns x TICK_NS) */
static uint64_t
idle_ns(struct worker *w, uint64_t tsc)
{
	const struct elcore *e = w->engine_ctx;
	uint64_t dl, at, now;

	if (e == NULL || (dl = timer_wheel_next_deadline(e->wheel)) == TIMER_WHEEL_NEVER)
		return UINT64_MAX;
	at = timer_wheel_clock_cycles_at(&e->clock, dl);
	now = now_ns(e, tsc);
	return at > now ? at - now : 0;
}

const struct engine_ops engine_xport = {
	.name = "xport",
	.lcore_init = lcore_init,
	.lcore_fini = lcore_fini,
	.rx = rx,
	.poll = poll_engine,
	.idle_ns = idle_ns,
};

/* ---- QP lifetime (owner lcore) ---- */

struct xport_qp *
engine_xport_qp(struct worker *w, uint32_t qpn)
{
	struct qp_slot *slot;

	WORKER_OWNER_ASSERT(w);
	slot = worker_qp_slot(w, qpn);
	return slot != NULL ? ((struct eqp *)slot->engine_qp)->qp : NULL;
}

uint32_t
engine_xport_busy(const struct worker *w)
{
	const struct elcore *e = w->engine_ctx;

	WORKER_OWNER_ASSERT(w);
	return e != NULL ? e->n_busy : 0;
}

/* Take @p q off the lcore's active list (no-op when it is not on it). */
static void
active_del(struct worker *w, struct elcore *e, struct eqp *q)
{
	if (q->active_pos == ACTIVE_NONE)
		return;
	if (q->active_pos < e->n_busy)
		mark_idle(w, e, q);
	if (q->rings)
		spsc_ring_bell_off(q->sq);
	bell_ref(e, q, false);
	/* keep the list dense: swap with the last one, then drop it */
	active_swap(w, e, q->active_pos, e->n_active - 1);
	e->n_active--;
	q->active_pos = ACTIVE_NONE;
}

/*
 * List a QP only in states with work that no packet brings (RTR, RTS, SQD:
 * posted WRs, ACKs to send; ERR: flushing). RESET (the IB RESET and INIT)
 * has none: thousands of QPs being set up cost the loop nothing, so control
 * messages (ctl_msg.h) stay as fast as with one QP. A listed QP is busy
 * after the change (polled at least once), then idle while xport_qp_idle()
 * says so. The owner calls this after every state change it makes; the
 * engine's own moves (to ERR) start from busy QPs.
 */
static void
active_update(struct worker *w, struct elcore *e, struct eqp *q)
{
	if (xport_qp_state(q->qp) == XPORT_STATE_RESET) {
		active_del(w, e, q);
		return;
	}
	if (q->active_pos == ACTIVE_NONE) {
		q->active_pos = e->n_active;
		e->active[e->n_active++] = q->slot;
		bell_ref(e, q, true);
	}
	mark_busy(w, e, q); /* the next poll runs it once at least */
}

int
engine_xport_qp_create(struct worker *w, const struct xport_cfg *cfg, uint16_t port,
		       uint32_t cookie)
{
	struct elcore *e = w->engine_ctx;
	struct xport_cfg c = *cfg;
	struct eqp *q;
	int rc;

	WORKER_OWNER_ASSERT(w);
	if (e == NULL || port >= w->d->n_ports || worker_of_qpn(cfg->qpn, w->n_workers) != w->index ||
	    cfg->qpn / w->n_workers >= w->n_qp_slots)
		return -EINVAL;
	if (worker_qp_slot(w, cfg->qpn) != NULL)
		return -EEXIST;
	q = calloc(1, sizeof(*q));
	if (q == NULL)
		return -ENOMEM;
	q->slot = cfg->qpn / w->n_workers;
	q->sq = cfg->sq;
	q->scq = cfg->sq != NULL ? cfg->send_cq : NULL;
	q->port = port;
	q->cookie = cookie;
	c.handle = q->slot;
	q->qp = xport_qp_create(&c);
	if (q->qp == NULL) {
		free(q);
		return -EINVAL;
	}
	rc = worker_qp_attach(w, cfg->qpn, q);
	if (rc != 0) {
		xport_qp_destroy(q->qp);
		free(q);
		return rc;
	}
	q->active_pos = ACTIVE_NONE; /* RESET: not polled (active_update) */
	return 0;
}

int
engine_xport_qp_set_state(struct worker *w, uint32_t qpn, enum xport_state state)
{
	struct elcore *e = w->engine_ctx;
	struct qp_slot *slot;
	struct eqp *q;

	WORKER_OWNER_ASSERT(w);
	slot = worker_qp_slot(w, qpn);
	if (slot == NULL || e == NULL)
		return -ENOENT;
	q = slot->engine_qp;
	xport_qp_set_state(q->qp, state, now_ns(e, rte_rdtsc()), &e->out);
	active_update(w, e, q);
	flush(w, e, slot, q);
	return 0;
}

int
engine_xport_qp_modify(struct worker *w, uint32_t qpn, const struct xport_cfg *cfg, int state,
		       uint32_t cookie)
{
	struct elcore *e = w->engine_ctx;
	struct qp_slot *slot;
	struct xport_cfg c = *cfg;
	struct eqp *q;

	WORKER_OWNER_ASSERT(w);
	slot = worker_qp_slot(w, qpn);
	if (slot == NULL || e == NULL)
		return -ENOENT;
	q = slot->engine_qp;
	c.handle = q->slot;
	int rc = xport_qp_modify(q->qp, &c);
	if (rc != 0)
		return rc; /* the QP is unchanged */
	q->cookie = cookie;
	if (state >= 0)
		xport_qp_set_state(q->qp, (enum xport_state)state, now_ns(e, rte_rdtsc()), &e->out);
	active_update(w, e, q);
	flush(w, e, slot, q);
	return 0;
}

int
engine_xport_qp_destroy(struct worker *w, uint32_t qpn)
{
	struct elcore *e = w->engine_ctx;
	struct qp_slot *slot;
	struct eqp *q;

	WORKER_OWNER_ASSERT(w);
	slot = worker_qp_slot(w, qpn);
	if (slot == NULL || e == NULL)
		return -ENOENT;
	q = slot->engine_qp;
	for (uint32_t t = 0; t < XPORT_TIMER_COUNT; t++)
		timer_wheel_cancel(e->wheel, timer_wheel_handle(q->slot, t));
	active_del(w, e, q);
	worker_qp_detach(w, qpn);
	xport_qp_destroy(q->qp);
	free(q);
	return 0;
}

/* ---- tag matching SRQs (owner lcore) ---- */

int
engine_xport_tm_attach(struct worker *w, struct xport_srq *srq)
{
	struct elcore *e = w->engine_ctx;

	WORKER_OWNER_ASSERT(w);
	if (e == NULL)
		return -ENOSPC;
	for (uint32_t i = 0; i < e->n_tm; i++)
		if (e->tm[i] == srq)
			return -EEXIST;
	if (e->n_tm == ENGINE_TM_MAX)
		return -ENOSPC;
	e->tm[e->n_tm++] = srq;
	return 0;
}

void
engine_xport_tm_detach(struct worker *w, struct xport_srq *srq)
{
	struct elcore *e = w->engine_ctx;

	WORKER_OWNER_ASSERT(w);
	if (e == NULL)
		return;
	for (uint32_t i = 0; i < e->n_tm; i++) {
		if (e->tm[i] == srq) {
			e->tm[i] = e->tm[--e->n_tm];
			return;
		}
	}
}
