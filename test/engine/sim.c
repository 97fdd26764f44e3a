/* SPDX-License-Identifier: BSD-3-Clause */
/* Deterministic simulated link between two engines (see sim.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

struct sim_frame {
	uint64_t at;
	uint64_t seq;
	int dst;
	bool raw;                 /* a RAW_PACKET frame: to xport_qp_raw_rx() */
	uint32_t len;
	uint8_t data[];
};

#define SIM_FRAME_MAX (4096 + 256)

uint64_t
sim_rand(struct sim *s)
{
	/* xorshift64* */
	uint64_t x = s->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	s->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

uint64_t
sim_below(struct sim *s, uint64_t n)
{
	return n ? sim_rand(s) % n : 0;
}

static bool
chance(struct sim *s, uint32_t ppm)
{
	return ppm && sim_below(s, 1000000) < ppm;
}

void
sim_trace_add(struct sim *s, const void *data, uint64_t len)
{
	const uint8_t *p = data;
	uint64_t h = s->trace;
	if (s->trace_off)
		return;
	for (uint64_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	s->trace = h;
}

/* ---- frame heap ordered by (at, seq) ---- */

static bool
frame_before(const struct sim_frame *a, const struct sim_frame *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void
heap_push(struct sim *s, struct sim_frame *f)
{
	if (s->heap_len == s->heap_cap) {
		s->heap_cap = s->heap_cap ? s->heap_cap * 2 : 256;
		s->heap = realloc(s->heap, s->heap_cap * sizeof(*s->heap));
	}
	uint32_t i = s->heap_len++;
	s->heap[i] = f;
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!frame_before(s->heap[i], s->heap[p]))
			break;
		struct sim_frame *t = s->heap[p];
		s->heap[p] = s->heap[i];
		s->heap[i] = t;
		i = p;
	}
}

static struct sim_frame *
heap_pop(struct sim *s)
{
	struct sim_frame *top = s->heap[0];
	s->heap[0] = s->heap[--s->heap_len];
	uint32_t i = 0;
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < s->heap_len && frame_before(s->heap[l], s->heap[m]))
			m = l;
		if (r < s->heap_len && frame_before(s->heap[r], s->heap[m]))
			m = r;
		if (m == i)
			break;
		struct sim_frame *t = s->heap[m];
		s->heap[m] = s->heap[i];
		s->heap[i] = t;
		i = m;
	}
	return top;
}

void
sim_drop_frames(struct sim *s)
{
	for (int i = 0; i < 2; i++) {
		struct sim_rx_ring *r = &s->h[i].ring;
		for (uint32_t j = 0; j < r->n; j++)
			free(r->q[j]);
		r->n = 0;
	}
	while (s->heap_len)
		free(heap_pop(s));
	free(s->heap);
	s->heap = NULL;
	s->heap_cap = 0;
}

/* ---- outputs ---- */

static void
enqueue(struct sim *s, int dst, const uint8_t *data, uint32_t len, uint64_t at, bool raw)
{
	struct sim_frame *f = malloc(sizeof(*f) + len);
	f->at = at;
	f->seq = s->seq++;
	f->dst = dst;
	f->raw = raw;
	f->len = len;
	memcpy(f->data, data, len);
	heap_push(s, f);
}

/*
 * Host 0's frame of @p len bytes enters the bottleneck (sim.h): @return its
 * departure time, or 0 if the full queue dropped it; marks @p pkt CE.
 */
static uint64_t
bottleneck(struct sim *s, struct roce_pkt *pkt, size_t len)
{
	struct sim_bottleneck *b = &s->bneck;
	uint64_t at = s->now;

	if (b->line_kbps) { /* serialized on host 0's link first */
		uint64_t st = b->line_busy > s->now ? b->line_busy : s->now;
		b->line_busy = st + len * 8000000u / b->line_kbps;
		at = b->line_busy;
	}
	uint64_t start = b->busy_until > at ? b->busy_until : at;
	uint64_t queued = (start - at) * b->kbps / 8000000u;

	if (queued > b->max_queue)
		b->max_queue = queued;
	if (queued < b->kmax)
		b->below_kmax++;
	else
		b->above_kmax++;
	if (queued + len > b->limit) {
		b->dropped++;
		return 0;
	}
	if ((pkt->l3.traffic_class & 3) != 0 && queued > b->kmin &&
	    (queued >= b->kmax ||
	     sim_below(s, (uint64_t)(b->kmax - b->kmin) * 1000000u) <
		     (queued - b->kmin) * b->pmax_ppm)) {
		pkt->l3.traffic_class |= 3; /* Congestion Experienced */
		b->marked++;
	}
	b->busy_until = start + len * 8000000u / b->kbps;
	b->bytes_out += len;
	return b->busy_until;
}

/* Empty the output context (sim.out_fill: stale frame slots). */
static void
out_reset(struct sim *s)
{
	xport_out_reset(&s->out);
	if (s->out_fill)
		memset(s->out.frames, s->out_fill, sizeof(s->out.frames));
}

static void
flush_out(struct sim *s, int from)
{
	struct xport_out *out = &s->out;
	struct sim_host *h = &s->h[from];
	uint8_t buf[SIM_FRAME_MAX];

	for (uint32_t i = 0; i < out->ntimers; i++) {
		const struct xport_timer_action *t = &out->timers[i];
		h->timer_at[t->timer] = t->arm ? t->expires_ns : 0;
	}
	for (uint32_t i = 0; i < out->nevents; i++) {
		const struct xport_event *e = &out->events[i];
		if (e->type == XPORT_EV_QP_ERROR)
			h->qp_errors++;
		else if (e->type == XPORT_EV_ASYNC && e->code < 32)
			h->async[e->code]++;
		else if (e->type == XPORT_EV_CQ_NOTIFY)
			h->notifies++;
	}
	for (uint32_t i = 0; i < out->nframes; i++) {
		struct xport_frame *fr = &out->frames[i];
		uint64_t depart = 0;
		if (s->bneck.kbps && from == 0) {
			size_t wire = roce_headers_len(&fr->pkt) + fr->pkt.payload_len +
				      fr->pkt.pad + ROCE_ICRC_LEN;
			depart = bottleneck(s, &fr->pkt, wire);
			if (depart == 0)
				continue;
		}
		if (fr->seg_mr) {
			/* what the daemon's loopback may pass by reference (xport.h):
			 * one segment in the sender's registered memory, of an RC or
			 * XRC frame (its WQE completes on the peer's ACK) */
			uint8_t tr = roce_opcode_transport(fr->pkt.opcode);
			const uint8_t *a = fr->seg[0].addr;

			if (fr->raw || fr->nseg != 1 || a < h->arena ||
			    a + fr->seg[0].len > h->arena + h->arena_len ||
			    (tr != ROCE_TRANSPORT_RC && tr != ROCE_TRANSPORT_XRC))
				abort();
			s->frames_seg_mr++;
		}
		size_t len = fr->raw ? xport_frame_raw_gather(fr, buf, sizeof(buf))
				     : roce_build_gather(&fr->pkt, fr->seg, fr->nseg, buf, sizeof(buf));
		if (len == 0)
			abort(); /* the engine produced something unbuildable */
		s->frames_sent++;
		if (s->verbose) {
			char line[256];
			roce_pkt_format(&fr->pkt, line, sizeof(line));
			fprintf(stderr, "%12lu %d> %s\n", (unsigned long)s->now, from, line);
		}
		sim_trace_add(s, &s->now, sizeof(s->now));
		sim_trace_add(s, buf, len);
		if (s->filter && !s->filter(s->filter_arg, from, &fr->pkt))
			continue;
		const struct sim_faults *fl = &s->faults;
		if (chance(s, fl->loss_ppm)) {
			s->frames_lost++;
			continue;
		}
		if (chance(s, fl->corrupt_ppm)) {
			/* flip one byte after the Ethernet header: the IP checksum,
			 * lengths or the ICRC catch it */
			size_t at = 14 + sim_below(s, len - 14);
			buf[at] ^= (uint8_t)(1u << sim_below(s, 8));
			s->frames_corrupt++;
		}
		uint64_t t = (depart ? depart : s->now) + fl->delay_ns;
		if (chance(s, fl->reorder_ppm)) {
			t += 1 + sim_below(s, fl->reorder_ns ? fl->reorder_ns : 1);
			s->frames_reordered++;
		}
		enqueue(s, 1 - from, buf, (uint32_t)len, t, fr->raw);
		if (chance(s, fl->dup_ppm)) {
			s->frames_dup++;
			enqueue(s, 1 - from, buf, (uint32_t)len,
				t + 1 + sim_below(s, fl->reorder_ns ? fl->reorder_ns : 1000), fr->raw);
		}
	}
	out_reset(s);
}

void
sim_poll(struct sim *s)
{
	for (int h = 0; h < 2; h++) {
		for (int i = 0; i < 100000; i++) {
			out_reset(s);
			xport_qp_poll(s->h[h].qp, s->now, &s->out);
			bool more = s->out.more;
			bool any = s->out.nframes || s->out.ntimers || s->out.nevents;
			flush_out(s, h);
			if (!more && !any)
				break;
			if (!more)
				break;
		}
	}
}

void
sim_inject(struct sim *s, int h, const struct roce_pkt *pkt)
{
	out_reset(s);
	xport_qp_rx(s->h[h].qp, pkt, s->now, &s->out);
	flush_out(s, h);
}

void
sim_inject_burst(struct sim *s, int h, const struct roce_pkt *const pkts[], uint32_t n)
{
	out_reset(s);
	xport_qp_rx_burst(s->h[h].qp, pkts, n, s->now, &s->out);
	flush_out(s, h);
}

static void
deliver(struct sim *s, struct sim_frame *f)
{
	struct roce_pkt pkt;
	struct sim_host *h = &s->h[f->dst];

	if (f->raw) {
		out_reset(s);
		xport_qp_raw_rx(h->qp, f->data, f->len, s->now, &s->out);
		flush_out(s, f->dst);
		return;
	}
	if (roce_parse(f->data, f->len, &pkt) != ROCE_DROP_NONE) {
		h->parse_drops++;
		return;
	}
	if (s->verbose) {
		char line[256];
		roce_pkt_format(&pkt, line, sizeof(line));
		fprintf(stderr, "%12lu %d< %s (epsn %06x)\n", (unsigned long)s->now, f->dst, line,
			xport_qp_rq_psn(h->qp));
	}
	static int watch_h = -1;
	static uint64_t watch_off;
	static uint8_t watch_val;
	if (watch_h < 0 && getenv("ROCE_WATCH")) {
		watch_h = atoi(getenv("ROCE_WATCH"));
		watch_off = strtoull(strchr(getenv("ROCE_WATCH"), ':') + 1, NULL, 16);
		watch_val = s->h[watch_h].arena[watch_off];
	}
	out_reset(s);
	xport_qp_rx(h->qp, &pkt, s->now, &s->out);
	flush_out(s, f->dst);
	if (watch_h >= 0 && s->h[watch_h].arena[watch_off] != watch_val) {
		watch_val = s->h[watch_h].arena[watch_off];
		fprintf(stderr, "%12lu WATCH changed to %02x\n", (unsigned long)s->now, watch_val);
	}
}

void
sim_rx_ring(struct sim *s, int h, uint32_t slots, uint64_t poll_ns)
{
	struct sim_rx_ring *r = &s->h[h].ring;
	r->slots = slots;
	r->poll_ns = poll_ns ? poll_ns : 1;
	r->q = realloc(r->q, slots * sizeof(*r->q));
}

/* A frame reached host @p f->dst: to its engine, or into its receive ring. */
static void
arrive(struct sim *s, struct sim_frame *f)
{
	struct sim_rx_ring *r = &s->h[f->dst].ring;

	if (r->slots == 0) {
		deliver(s, f);
		free(f);
		return;
	}
	if (r->n == r->slots) {
		r->drops++;
		free(f);
		return;
	}
	if (r->n == 0)
		r->due = (s->now / r->poll_ns + 1) * r->poll_ns;
	r->q[r->n++] = f;
}

/* Receivers whose poll is due take everything their ring holds. */
static void
poll_rings(struct sim *s)
{
	for (int h = 0; h < 2; h++) {
		struct sim_rx_ring *r = &s->h[h].ring;
		if (r->n == 0 || r->due > s->now)
			continue;
		uint32_t n = r->n;
		r->n = 0; /* frames sent meanwhile may arrive at the next poll */
		for (uint32_t i = 0; i < n; i++) {
			deliver(s, r->q[i]);
			free(r->q[i]);
		}
	}
}

bool
sim_run(struct sim *s, bool (*done)(struct sim *s, void *arg), void *arg, uint64_t deadline)
{
	for (;;) {
		sim_poll(s);
		if (done(s, arg))
			return true;
		uint64_t next = UINT64_MAX;
		if (s->heap_len)
			next = s->heap[0]->at;
		for (int h = 0; h < 2; h++)
			if (s->h[h].ring.n && s->h[h].ring.due < next)
				next = s->h[h].ring.due;
		for (int h = 0; h < 2; h++)
			for (int t = 0; t < XPORT_TIMER_COUNT; t++)
				if (s->h[h].timer_at[t] &&
				    s->h[h].timer_at[t] + s->faults.timer_late_ns < next)
					next = s->h[h].timer_at[t] + s->faults.timer_late_ns;
		if (next == UINT64_MAX || next > deadline)
			return done(s, arg);
		if (next > s->now)
			s->now = next;
		while (s->heap_len && s->heap[0]->at <= s->now) {
			arrive(s, heap_pop(s));
		}
		poll_rings(s);
		for (int h = 0; h < 2; h++) {
			for (int t = 0; t < XPORT_TIMER_COUNT; t++) {
				uint64_t at = s->h[h].timer_at[t];
				if (at && at + s->faults.timer_late_ns <= s->now) {
					if (s->verbose)
						fprintf(stderr, "%12lu %d timer %d\n",
							(unsigned long)s->now, h, t);
					s->h[h].timer_at[t] = 0;
					out_reset(s);
					xport_qp_timer_expired(s->h[h].qp, (enum xport_timer)t, s->now,
							       &s->out);
					flush_out(s, h);
				}
			}
		}
	}
}

/* ---- setup ---- */

void
sim_default_params(struct sim_params *p)
{
	memset(p, 0, sizeof(*p));
	p->type = XPORT_RC;
	p->mtu = 3;
	p->psn[0] = 0x100;
	p->psn[1] = 0x2000;
	p->sq_size = 256;
	p->rq_size = 256;
	p->cq_size = 1024;
	p->arena_len = 1u << 20;
	p->timeout = 10;       /* 4.2 ms */
	p->retry_cnt = 7;
	p->rnr_retry = 7;
	p->min_rnr_timer = 1;  /* 10 us */
	p->max_rd_atomic = 4;
}

/*
 * Blocks of an earlier sim that sim_reset() hands to the next one: a block
 * is reused for an allocation of exactly its length, zeroed first (so a
 * reused block starts as the fresh one of sim_init, which zeroes its arena
 * and whose QP and rings initialise what they use).
 */
#define SIM_POOL_MAX 16

struct sim_pool {
	void *p[SIM_POOL_MAX];
	size_t len[SIM_POOL_MAX];
	uint32_t n;
};

static void
pool_put(struct sim_pool *pool, void *p, size_t len)
{
	if (p == NULL)
		return;
	if (pool->n == SIM_POOL_MAX) {
		free(p);
		return;
	}
	pool->p[pool->n] = p;
	pool->len[pool->n++] = len;
}

/* Every block is whole pages. */
static size_t
block_len(size_t len)
{
	return (len + 4095) & ~(size_t)4095;
}

/* (the ring's own size field is the client's to scribble: the trusted one) */
static size_t
ring_len(const struct spsc_ring *r, uint32_t size, uint32_t elem)
{
	return r != NULL ? block_len(spsc_ring_bytes(size, elem)) : 0;
}

/* @p len bytes, 4096-aligned (enough for the rings' and the QP's 64), zeroed. */
static void *
pool_take(struct sim_pool *pool, size_t len)
{
	len = block_len(len);
	for (uint32_t i = 0; pool != NULL && i < pool->n; i++) {
		if (pool->len[i] != len)
			continue;
		void *p = pool->p[i];
		pool->p[i] = pool->p[--pool->n];
		pool->len[i] = pool->len[pool->n];
		memset(p, 0, len);
		return p;
	}
	void *p = aligned_alloc(4096, len);
	if (p != NULL)
		memset(p, 0, len);
	return p;
}

static struct spsc_ring *
ring_new(struct sim_pool *pool, uint32_t size, uint32_t elem)
{
	struct spsc_ring *r = pool_take(pool, spsc_ring_bytes(size, elem));
	spsc_ring_init(r, size, elem);
	return r;
}

static void
host_av(struct wr_av *av, int self, bool ipv6)
{
	int peer = 1 - self;
	memset(av, 0, sizeof(*av));
	uint8_t mac_self[6] = { 0x02, 0, 0, 0, 0, (uint8_t)(1 + self) };
	uint8_t mac_peer[6] = { 0x02, 0, 0, 0, 0, (uint8_t)(1 + peer) };
	memcpy(av->smac, mac_self, 6);
	memcpy(av->dmac, mac_peer, 6);
	if (ipv6) {
		/* 2001:db8::1 / ::2 */
		av->ipv6 = 1;
		av->sgid[0] = 0x20; av->sgid[1] = 0x01; av->sgid[2] = 0x0d; av->sgid[3] = 0xb8;
		memcpy(av->dgid, av->sgid, 16);
		av->sgid[15] = (uint8_t)(1 + self);
		av->dgid[15] = (uint8_t)(1 + peer);
		av->flow_label = 0x12345;
	} else {
		/* ::ffff:198.18.0.1 / .2 */
		av->sgid[10] = av->sgid[11] = 0xff;
		av->sgid[12] = 198; av->sgid[13] = 18; av->sgid[14] = 0;
		memcpy(av->dgid, av->sgid, 16);
		av->sgid[15] = (uint8_t)(1 + self);
		av->dgid[15] = (uint8_t)(1 + peer);
	}
	av->hop_limit = 64;
	av->traffic_class = 0x02;
}

/* Host 1's XRC SRQ lookup (xport_cfg.xrc_srq): one SRQ, SIM_XRC_SRQN. */
static struct xport_srq *
sim_xrc_srq(void *ctx, uint32_t srqn)
{
	struct sim_host *h = ctx;

	return srqn == SIM_XRC_SRQN ? &h->srq : NULL;
}

/* sim_init() with the blocks of @p pool (NULL: none) reused where they fit. */
static int
sim_setup(struct sim *s, const struct sim_params *p, uint64_t seed, struct sim_pool *pool)
{
	memset(s, 0, sizeof(*s));
	s->rng = seed * 0x9E3779B97F4A7C15ULL + 0x1234567;
	if (s->rng == 0)
		s->rng = 1;
	s->trace = 0xcbf29ce484222325ULL;
	s->now = 1000;
	s->verbose = getenv("ROCE_SIM_TRACE") != NULL;
	for (int i = 0; i < 2; i++) {
		struct sim_host *h = &s->h[i];
		h->mrs = mr_table_create(64);
		h->arena_len = p->arena_len;
		h->arena = pool_take(pool, p->arena_len);
		h->arena_iova = 0x10000000ull * (uint64_t)(i + 1);
		mr_reg(h->mrs, SIM_PD, (uintptr_t)h->arena, h->arena_iova, h->arena_len,
		       MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
			       MR_ACCESS_REMOTE_ATOMIC | MR_ACCESS_FLUSH_GLOBAL,
		       &h->arena_key);
		h->rq_size = p->rq_size;
		h->rq_elem = p->rq_stride ? p->rq_stride : (uint32_t)sizeof(struct rq_wqe);
		h->sq = ring_new(pool, p->sq_size, sizeof(struct sq_wqe));
		h->scq_ring = ring_new(pool, p->cq_size, sizeof(struct cqe));
		h->rcq_ring = ring_new(pool, p->cq_size, sizeof(struct cqe));
		/* the allocator's geometry is the trusted one (xport.h "Untrusted rings") */
		h->scq = (struct xport_cq){ .ring = h->scq_ring, .size = p->cq_size,
					    .handle = (uint32_t)(10 + i * 2) };
		h->rcq = (struct xport_cq){ .ring = h->rcq_ring, .size = p->cq_size,
					    .handle = (uint32_t)(11 + i * 2), .arm = &h->cq_arm };
		struct xport_cfg *c = &h->cfg;
		c->handle = (uint32_t)i;
		c->type = p->type;
		c->qpn = 0x100 + 0x11 * (uint32_t)i;
		c->dest_qpn = 0x100 + 0x11 * (uint32_t)(1 - i);
		c->pd = SIM_PD;
		c->pkey = 0xffff;
		c->qkey = 0x11111111;
		host_av(&c->av, i, p->ipv6);
		c->av.ah_handle = SIM_AH;
		h->ahs = ah_table_create(8);
		if (h->ahs == NULL || ah_table_set(h->ahs, SIM_AH, SIM_PD, &c->av) != 0)
			return -1;
		c->ahs = h->ahs;
		c->path_mtu = p->mtu;
		c->sq_psn = p->psn[i];
		c->rq_psn = p->psn[1 - i];
		c->timeout = p->timeout;
		c->retry_cnt = p->retry_cnt;
		c->rnr_retry = p->rnr_retry;
		c->min_rnr_timer = p->min_rnr_timer;
		c->max_rd_atomic = p->max_rd_atomic;
		c->max_dest_rd_atomic = p->max_dest_rd_atomic ? p->max_dest_rd_atomic
							      : XPORT_MAX_RD_ATOMIC;
		c->access_flags = p->qp_access ? p->qp_access
					       : MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
							 MR_ACCESS_REMOTE_ATOMIC;
		c->sq_sig_all = p->sq_sig_all;
		c->rate_limit_kbps = p->rate_limit_kbps;
		if (p->type == XPORT_RAW)
			c->raw_frame_max = p->raw_frame_max ? p->raw_frame_max : 1514;
		c->cc = p->cc[i];
		c->ack_req_every = p->ack_req_every;
		c->max_unacked = p->max_unacked;
		c->sq = h->sq;
		c->sq_size = p->sq_size;
		c->sq_max_sge = p->sq_max_sge;
		if (p->xrcd) {
			/* XRC: host 0 sends only (INI), host 1 receives into its XRC SRQ (TGT) */
			c->xrc = i == 0 ? XPORT_XRC_INI : XPORT_XRC_TGT;
			if (i == 1) {
				h->srq_ring = ring_new(pool, p->rq_size, h->rq_elem);
				h->srq = (struct xport_srq){
					.ring = h->srq_ring, .size = p->rq_size, .stride = p->rq_stride,
					.handle = 77,
					.cq = &h->rcq, .pd = SIM_PD, .xrc_live = 77,
					.xrcd = p->xrc_srq_xrcd ? p->xrc_srq_xrcd : p->xrcd,
				};
				c->xrcd = p->xrcd;
				c->xrc_srq = sim_xrc_srq;
				c->xrc_ctx = h;
			}
		} else if (p->srq && i == 1) {
			h->srq_ring = ring_new(pool, p->rq_size, h->rq_elem);
			h->srq = (struct xport_srq){ .ring = h->srq_ring, .size = p->rq_size,
						     .stride = p->rq_stride, .handle = 77 };
			c->srq = &h->srq;
		} else {
			h->rq = ring_new(pool, p->rq_size, h->rq_elem);
			c->rq = h->rq;
			c->rq_size = p->rq_size;
			c->rq_stride = p->rq_stride;
		}
		c->send_cq = p->xrcd && i == 1 ? NULL : &h->scq;
		c->recv_cq = p->xrcd ? NULL : &h->rcq;
		c->mrs = h->mrs;
		c->mws = p->mws;
		/* as the daemon does: created with one responder resource, sized
		 * by the modify that brings max_dest_rd_atomic (INIT -> RTR) */
		struct xport_cfg c1 = *c;
		c1.max_dest_rd_atomic = 1;
		h->qp_mem_len = xport_qp_mem_size(&c1);
		void *mem = h->qp_mem_len ? pool_take(pool, h->qp_mem_len) : NULL;
		h->qp = mem ? xport_qp_init(mem, &c1) : NULL;
		if (!h->qp || xport_qp_modify(h->qp, c) != 0)
			return -1;
	}
	for (int i = 0; i < 2; i++) {
		out_reset(s);
		xport_qp_set_state(s->h[i].qp, XPORT_STATE_RTR, s->now, &s->out);
		flush_out(s, i);
		xport_qp_set_state(s->h[i].qp, XPORT_STATE_RTS, s->now, &s->out);
		flush_out(s, i);
	}
	return 0;
}

int
sim_init(struct sim *s, const struct sim_params *p, uint64_t seed)
{
	return sim_setup(s, p, seed, NULL);
}

/* Free what @p s holds; its blocks go to @p pool (NULL: freed too). */
static void
sim_release(struct sim *s, struct sim_pool *pool)
{
	for (int i = 0; i < 2; i++) {
		struct sim_host *h = &s->h[i];
		xport_qp_fini(h->qp);
		mr_table_destroy(h->mrs);
		ah_table_destroy(h->ahs);
		if (pool != NULL) {
			pool_put(pool, h->qp, block_len(h->qp_mem_len));
			pool_put(pool, h->arena, block_len(h->arena_len));
			pool_put(pool, h->sq, ring_len(h->sq, h->cfg.sq_size, sizeof(struct sq_wqe)));
			pool_put(pool, h->rq, ring_len(h->rq, h->rq_size, h->rq_elem));
			pool_put(pool, h->srq_ring, ring_len(h->srq_ring, h->rq_size, h->rq_elem));
			pool_put(pool, h->scq_ring, ring_len(h->scq_ring, h->scq.size, sizeof(struct cqe)));
			pool_put(pool, h->rcq_ring, ring_len(h->rcq_ring, h->rcq.size, sizeof(struct cqe)));
		} else {
			free(h->qp);
			free(h->arena);
			free(h->sq);
			free(h->rq);
			free(h->srq_ring);
			free(h->scq_ring);
			free(h->rcq_ring);
		}
		for (uint32_t j = 0; j < h->ring.n; j++)
			free(h->ring.q[j]);
		free(h->ring.q);
	}
	while (s->heap_len)
		free(heap_pop(s));
	free(s->heap);
}

void
sim_fini(struct sim *s)
{
	sim_release(s, NULL);
}

int
sim_reset(struct sim *s, const struct sim_params *p, uint64_t seed)
{
	struct sim_pool pool = { .n = 0 };
	int rc;

	sim_release(s, &pool);
	rc = sim_setup(s, p, seed, &pool);
	for (uint32_t i = 0; i < pool.n; i++)
		free(pool.p[i]);
	return rc;
}

bool
sim_post_send(struct sim *s, int h, const struct sq_wqe *w)
{
	return spsc_ring_push(s->h[h].sq, w) == 1;
}

bool
sim_post_recv(struct sim *s, int h, const struct rq_wqe *w)
{
	struct sim_host *host = &s->h[h];
	return spsc_ring_push(host->srq_ring ? host->srq_ring : host->rq, w) == 1;
}

bool
sim_poll_cq(struct sim *s, int h, bool recv, struct cqe *c)
{
	struct spsc_ring *r = recv ? s->h[h].rcq_ring : s->h[h].scq_ring;
	if (!spsc_ring_pop(r, c))
		return false;
	struct cqe t = *c;
	t.timestamp = 0;
	sim_trace_add(s, &t, sizeof(t));
	return true;
}

void
sim_set_state(struct sim *s, int h, enum xport_state state)
{
	out_reset(s);
	xport_qp_set_state(s->h[h].qp, state, s->now, &s->out);
	flush_out(s, h);
}
