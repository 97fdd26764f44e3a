/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Randomized message mixes through the faulty simulated link: every RC
 * operation (SEND +imm, WRITE +imm, READ, CAS, FETCH_ADD; scatter/gather,
 * inline, unsignaled), sizes 0 B to 1 MiB, MTU 256-4096, PSNs starting near
 * the 2^24 wrap, both directions at once, loss/duplication/reordering/
 * corruption 0-10 %, receive WQEs sometimes posted late (RNR), SRQ or RQ.
 *
 * Checked: every byte lands intact, every completion appears exactly once,
 * in order, with the right status/opcode/length/immediate, the run ends in
 * bounded simulated time, and a seed replays to the same trace hash.
 *
 * ROCE_ENGINE_SCALE=N runs N times as many mixes (default 1);
 * ROCE_ENGINE_SEED=K starts at mix K; ROCE_ENGINE_FAULTS=L,D,R[,C] gives
 * faulty_link fixed loss, duplication, reordering (and corruption) rates in
 * ppm instead of random ones up to 10 % (the soak's relay: 50000,50000,50000;
 * session 16 ran 3 000 such mixes with no failure).
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "util.h"

#define REGION (2u << 20)           /* per-region bytes per batch */
#define ARENA (4 * REGION + (1u << 16))
#define OFF_SRC 0                   /* bytes this host sends/writes */
#define OFF_DST (1 * REGION)        /* bytes the peer writes/sends here */
#define OFF_RSRC (2 * REGION)       /* bytes the peer reads from here */
#define OFF_RDST (3 * REGION)       /* READ destinations and atomic results here */
#define OFF_ATOM (4 * REGION)       /* atomic targets here (8 KiB of slots) */
#define MAX_OPS 64

struct op {
	uint8_t opcode;
	uint64_t id;
	uint32_t len;
	uint64_t local, remote;     /* arena offsets */
	bool signaled;
	int recv;                   /* index in the peer's receive list, or -1 */
	uint64_t atom_init, atom_operand, atom_final;
	bool atom_cmp_ok;
	uint32_t imm;
};

struct recvbuf {
	uint64_t wr_id;
	uint64_t off;
	uint32_t cap;
	const struct op *op;
};

struct dir {                        /* ops host h sends to host 1-h */
	struct op ops[MAX_OPS];
	uint32_t nops;
	struct recvbuf recvs[MAX_OPS];  /* receive WQEs host 1-h posts for them */
	uint32_t nrecv;
	uint64_t bump[5];
};

static uint32_t
scale(void)
{
	const char *e = getenv("ROCE_ENGINE_SCALE");
	long v = e ? strtol(e, NULL, 10) : 1;
	return v < 1 ? 1 : (uint32_t)v;
}

static uint64_t
take(struct dir *d, int region, uint64_t len)
{
	uint64_t off = d->bump[region];
	d->bump[region] += (len + 63) & ~63ull;
	return off;
}

static uint32_t
rand_len(struct sim *s, uint32_t room)
{
	uint32_t r = (uint32_t)sim_below(s, 1000), len;
	if (r < 300)
		len = (uint32_t)sim_below(s, 65);
	else if (r < 650)
		len = (uint32_t)sim_below(s, 4097);
	else if (r < 900)
		len = (uint32_t)sim_below(s, 32769);
	else if (r < 990)
		len = (uint32_t)sim_below(s, 262145);
	else
		len = (1u << 20) - (uint32_t)sim_below(s, 4096); /* up to 1 MiB */
	return len > room ? room : len;
}

/* Make one batch of ops from host h to its peer. */
static void
plan(struct sim *s, struct dir *d, uint32_t n, uint64_t *next_id)
{
	memset(d, 0, sizeof(*d));
	uint64_t room = REGION - 65536;
	for (uint32_t i = 0; i < n; i++) {
		struct op *o = &d->ops[d->nops];
		memset(o, 0, sizeof(*o));
		o->id = (*next_id)++;
		o->recv = -1;
		static const uint8_t ops[] = {
			WR_SEND, WR_SEND, WR_SEND_WITH_IMM, WR_RDMA_WRITE, WR_RDMA_WRITE,
			WR_RDMA_WRITE_WITH_IMM, WR_RDMA_READ, WR_RDMA_READ,
			WR_ATOMIC_FETCH_AND_ADD, WR_ATOMIC_CMP_AND_SWP,
		};
		o->opcode = ops[sim_below(s, sizeof(ops))];
		o->signaled = sim_below(s, 4) != 0;
		o->imm = (uint32_t)sim_rand(s);
		if (o->opcode == WR_ATOMIC_FETCH_AND_ADD || o->opcode == WR_ATOMIC_CMP_AND_SWP) {
			o->len = 8;
			o->local = OFF_RDST + take(d, 3, 8);
			o->remote = OFF_ATOM + take(d, 4, 8);
			o->atom_init = sim_rand(s);
			o->atom_operand = sim_rand(s);
			o->atom_cmp_ok = sim_below(s, 4) != 0; /* CAS: 3 in 4 succeed */
			if (o->opcode == WR_ATOMIC_FETCH_AND_ADD)
				o->atom_final = o->atom_init + o->atom_operand;
			else
				o->atom_final = o->atom_cmp_ok ? o->atom_operand : o->atom_init;
			d->nops++;
			continue;
		}
		o->len = rand_len(s, (uint32_t)room);
		room -= o->len;
		if (o->opcode == WR_RDMA_READ) {
			o->local = OFF_RDST + take(d, 3, o->len);
			o->remote = OFF_RSRC + take(d, 2, o->len);
		} else {
			o->local = OFF_SRC + take(d, 0, o->len);
			if (o->opcode == WR_RDMA_WRITE || o->opcode == WR_RDMA_WRITE_WITH_IMM)
				o->remote = OFF_DST + take(d, 1, o->len);
		}
		if (o->opcode == WR_SEND || o->opcode == WR_SEND_WITH_IMM ||
		    o->opcode == WR_RDMA_WRITE_WITH_IMM) {
			struct recvbuf *r = &d->recvs[d->nrecv];
			o->recv = (int)d->nrecv++;
			r->op = o;
			r->wr_id = 0x1000000 + o->id;
			if (o->opcode == WR_RDMA_WRITE_WITH_IMM) {
				r->cap = (uint32_t)sim_below(s, 64);
				r->off = OFF_DST + take(d, 1, r->cap);
			} else {
				r->cap = o->len + (uint32_t)sim_below(s, 100);
				r->off = OFF_DST + take(d, 1, r->cap);
				o->remote = r->off;
			}
		}
		d->nops++;
	}
}

static void
post_ops(struct sim *s, int h, struct dir *d)
{
	struct sim_host *me = &s->h[h], *peer = &s->h[1 - h];
	for (uint32_t i = 0; i < d->nops; i++) {
		struct op *o = &d->ops[i];
		struct sq_wqe w = wqe_new(o->opcode, o->id, o->signaled ? WR_FLAG_SIGNALED : 0);
		if (o->opcode == WR_ATOMIC_FETCH_AND_ADD || o->opcode == WR_ATOMIC_CMP_AND_SWP) {
			uint64_t *slot = (uint64_t *)(void *)(peer->arena + o->remote);
			*slot = o->atom_init;
			wqe_add_sge(&w, sim_va(s, h, o->local), 8, me->arena_key);
			w.wr.atomic.remote_addr = sim_va(s, 1 - h, o->remote);
			w.wr.atomic.rkey = peer->arena_key;
			if (o->opcode == WR_ATOMIC_FETCH_AND_ADD) {
				w.wr.atomic.compare_add = o->atom_operand;
			} else {
				w.wr.atomic.compare_add = o->atom_cmp_ok ? o->atom_init : o->atom_init + 1;
				w.wr.atomic.swap = o->atom_operand;
			}
			cr_assert(sim_post_send(s, h, &w));
			continue;
		}
		if (o->opcode == WR_RDMA_READ) {
			fill(peer->arena + o->remote, o->len, o->id);
			memset(me->arena + o->local, 0, o->len);
		} else {
			fill(me->arena + o->local, o->len, o->id);
		}
		bool can_inline = o->opcode != WR_RDMA_READ && o->len <= WQE_MAX_INLINE;
		if (can_inline && sim_below(s, 3) == 0) {
			w.send_flags |= WR_FLAG_INLINE;
			w.inline_len = (uint16_t)o->len;
			memcpy(w.inline_data, me->arena + o->local, o->len);
			/* the source may change after posting: inline data was copied */
			memset(me->arena + o->local, 0xee, o->len);
		} else {
			uint32_t nsge = 1 + (uint32_t)sim_below(s, 4);
			uint32_t left = o->len, off = 0;
			for (uint32_t k = 0; k < nsge; k++) {
				uint32_t part = k + 1 == nsge ? left : (uint32_t)sim_below(s, left + 1);
				wqe_add_sge(&w, sim_va(s, h, o->local + off), part, me->arena_key);
				off += part;
				left -= part;
			}
		}
		if (o->opcode == WR_SEND_WITH_IMM || o->opcode == WR_RDMA_WRITE_WITH_IMM)
			w.imm_data = o->imm;
		if (o->opcode == WR_RDMA_WRITE || o->opcode == WR_RDMA_WRITE_WITH_IMM ||
		    o->opcode == WR_RDMA_READ) {
			w.wr.rdma.remote_addr = sim_va(s, 1 - h, o->remote);
			w.wr.rdma.rkey = peer->arena_key;
		}
		cr_assert(sim_post_send(s, h, &w));
	}
}

static void
post_recvs(struct sim *s, int h, struct dir *d)
{
	/* receive WQEs for the ops host h sends: posted at host 1-h */
	struct sim_host *peer = &s->h[1 - h];
	for (uint32_t i = 0; i < d->nrecv; i++) {
		struct recvbuf *r = &d->recvs[i];
		struct rq_wqe w = rwqe_new(r->wr_id, sim_va(s, 1 - h, r->off), r->cap,
					   peer->arena_key);
		if (r->cap > 16 && sim_below(s, 2)) { /* split in two SGEs */
			uint32_t a = (uint32_t)sim_below(s, r->cap);
			w.sg_list[0].length = a;
			w.sg_list[1] = (struct wr_sge){ sim_va(s, 1 - h, r->off + a), r->cap - a,
							peer->arena_key };
			w.num_sge = 2;
		}
		memset(peer->arena + r->off, 0, r->cap);
		cr_assert(sim_post_recv(s, 1 - h, &w));
	}
}

static uint8_t
wc_of(uint8_t wr)
{
	switch (wr) {
	case WR_RDMA_WRITE:
	case WR_RDMA_WRITE_WITH_IMM:
		return WC_RDMA_WRITE;
	case WR_RDMA_READ:
		return WC_RDMA_READ;
	case WR_ATOMIC_CMP_AND_SWP:
		return WC_COMP_SWAP;
	case WR_ATOMIC_FETCH_AND_ADD:
		return WC_FETCH_ADD;
	default:
		return WC_SEND;
	}
}

static void
verify(struct sim *s, int h, const struct dir *d, const struct collect *k, uint32_t base_s,
       uint32_t base_r, const char *tag)
{
	struct sim_host *me = &s->h[h], *peer = &s->h[1 - h];
	uint32_t si = base_s;
	for (uint32_t i = 0; i < d->nops; i++) {
		const struct op *o = &d->ops[i];
		if (o->signaled) {
			const struct cqe *c = &k->c[h][0][si++];
			cr_assert_eq(c->wr_id, o->id, "%s: send CQE %u wr_id %lu != %lu", tag, si - 1,
				     (unsigned long)c->wr_id, (unsigned long)o->id);
			cr_assert_eq(c->status, WC_SUCCESS, "%s: op %lu status %u", tag,
				     (unsigned long)o->id, c->status);
			cr_assert_eq(c->opcode, wc_of(o->opcode));
		}
		if (o->opcode == WR_ATOMIC_FETCH_AND_ADD || o->opcode == WR_ATOMIC_CMP_AND_SWP) {
			uint64_t got = *(uint64_t *)(void *)(me->arena + o->local);
			uint64_t mem = *(uint64_t *)(void *)(peer->arena + o->remote);
			cr_assert_eq(got, o->atom_init, "%s: atomic %lu returned wrong value", tag,
				     (unsigned long)o->id);
			cr_assert_eq(mem, o->atom_final, "%s: atomic %lu result in memory", tag,
				     (unsigned long)o->id);
			continue;
		}
		const uint8_t *dst = o->opcode == WR_RDMA_READ ? me->arena + o->local
							       : peer->arena + o->remote;
		if (o->opcode == WR_RDMA_WRITE_WITH_IMM || o->opcode == WR_RDMA_WRITE ||
		    o->opcode == WR_RDMA_READ || o->recv < 0) {
			int64_t bad = check_fill(dst, o->len, o->id);
			if (bad >= 0) {
				int64_t good_run = 0;
				for (uint64_t j = (uint64_t)bad; j < o->len && dst[j] != pattern(o->id, j); j++)
					good_run++;
				cr_log_error("bad run %ld bytes from %ld; got %02x want %02x", (long)good_run,
					     (long)bad, dst[bad], pattern(o->id, (uint64_t)bad));
				if (getenv("ROCE_ENGINE_DEBUG"))
					for (uint64_t id = 1; id < 600; id++)
						for (uint64_t sh = 0; sh < (4u << 20); sh += 1) {
							uint64_t j = 0;
							while (j < 8 && dst[bad + (int64_t)j] == pattern(id, sh + j))
								j++;
							if (j == 8)
								cr_log_error("matches op %lu at %lu", (unsigned long)id,
									     (unsigned long)sh);
						}
			}
			cr_assert_eq(bad, -1, "%s: op %lu (opcode %u len %u) byte %ld differs", tag,
				     (unsigned long)o->id, o->opcode, o->len, (long)bad);
		}
	}
	cr_assert_eq(si - base_s, k->n[h][0] - base_s, "%s: extra send CQEs", tag);
	/* receive completions at the peer, in order */
	for (uint32_t i = 0; i < d->nrecv; i++) {
		const struct recvbuf *r = &d->recvs[i];
		const struct op *o = r->op;
		const struct cqe *c = &k->c[1 - h][1][base_r + i];
		cr_assert_eq(c->wr_id, r->wr_id, "%s: recv CQE %u wr_id", tag, i);
		cr_assert_eq(c->status, WC_SUCCESS, "%s: recv %u status %u", tag, i, c->status);
		cr_assert_eq(c->byte_len, o->len, "%s: recv %u byte_len %u != %u", tag, i,
			     c->byte_len, o->len);
		if (o->opcode == WR_RDMA_WRITE_WITH_IMM) {
			cr_assert_eq(c->opcode, WC_RECV_RDMA_WITH_IMM);
		} else {
			cr_assert_eq(c->opcode, WC_RECV);
			/* scattered over one or two SGEs that are contiguous in the arena */
			int64_t bad = check_fill(peer->arena + r->off, o->len, o->id);
			cr_assert_eq(bad, -1, "%s: SEND %lu len %u byte %ld differs", tag,
				     (unsigned long)o->id, o->len, (long)bad);
		}
		if (o->opcode == WR_SEND)
			cr_assert_eq(c->wc_flags, 0);
		else
			cr_assert(c->wc_flags == WC_FLAG_WITH_IMM && c->imm_data == o->imm,
				  "%s: recv %u immediate", tag, i);
	}
}

struct mix_result {
	uint64_t trace;
	uint64_t msgs;
	uint64_t frames;
	uint64_t retransmits;
	uint64_t timeouts_seq_naks; /* ACK timeouts + PSN sequence NAKs, both sides */
};

/* Non-NULL: run_mix() runs on this sim, sim_reset() instead of sim_init(). */
static struct sim *reused_sim;
/* run_mix()'s sim.out_fill */
static uint8_t mix_out_fill;

/* One randomized run: a few batches in both directions. */
static struct mix_result
run_mix(uint64_t seed, uint32_t batches, uint32_t max_fault_ppm)
{
	static struct sim own;
	struct sim *sp = reused_sim != NULL ? reused_sim : &own;
#define s (*sp)
	struct sim_params p;
	struct mix_result res = { 0 };
	sim_default_params(&p);
	/* parameters drawn from a generator of their own so the link RNG is independent */
	struct sim g = { .rng = seed * 0x2545F4914F6CDD1DULL + 17 };
	p.mtu = (uint8_t)(1 + sim_below(&g, 5));
	p.psn[0] = 0xffffff - (uint32_t)sim_below(&g, 300);
	p.psn[1] = 0xffffff - (uint32_t)sim_below(&g, 3000);
	p.arena_len = ARENA;
	p.srq = sim_below(&g, 2);
	/* initiator depth up to the engine's limit; responder resources at least
	 * that (as CM / perftest negotiate them), any length, not only 2^k */
	p.max_rd_atomic = (uint8_t)(1 + sim_below(&g, XPORT_MAX_RD_ATOMIC));
	p.max_dest_rd_atomic = (uint8_t)(p.max_rd_atomic +
					 sim_below(&g, XPORT_MAX_RD_ATOMIC - p.max_rd_atomic + 1));
	p.max_unacked = 16 + (uint32_t)sim_below(&g, 240);
	p.ack_req_every = 1 + (uint32_t)sim_below(&g, 64);
	p.timeout = (uint8_t)(6 + sim_below(&g, 6));
	p.ipv6 = sim_below(&g, 2);
	p.sq_sig_all = sim_below(&g, 8) == 0;
	cr_assert_eq(reused_sim != NULL ? sim_reset(&s, &p, seed) : sim_init(&s, &p, seed), 0);
	s.out_fill = mix_out_fill;
	uint32_t f = max_fault_ppm ? (uint32_t)sim_below(&g, max_fault_ppm + 1) : 0;
	s.faults = (struct sim_faults){
		.loss_ppm = f / 2,
		.dup_ppm = f / 6,
		.reorder_ppm = f / 6,
		.corrupt_ppm = f / 6,
		.delay_ns = 2000,
		.reorder_ns = 20000,
	};
	const char *fixed = getenv("ROCE_ENGINE_FAULTS");
	unsigned lo = 0, du = 0, re = 0, co = 0;
	if (fixed != NULL && sscanf(fixed, "%u,%u,%u,%u", &lo, &du, &re, &co) >= 1) {
		s.faults.loss_ppm = lo;
		s.faults.dup_ppm = du;
		s.faults.reorder_ppm = re;
		s.faults.corrupt_ppm = co;
	}
	struct collect k;
	collect_init(&k);
	static struct dir d[2];
	uint64_t next_id = 1;
	char tag[96];
	for (uint32_t b = 0; b < batches; b++) {
		snprintf(tag, sizeof(tag), "seed %lu batch %u mtu %u f %u", (unsigned long)seed, b,
			 p.mtu, f);
		uint32_t base_s[2] = { k.n[0][0], k.n[1][0] };
		uint32_t base_r[2] = { k.n[0][1], k.n[1][1] };
		for (int h = 0; h < 2; h++) {
			plan(&s, &d[h], 4 + (uint32_t)sim_below(&s, 28), &next_id);
			if (p.sq_sig_all)
				for (uint32_t i = 0; i < d[h].nops; i++)
					d[h].ops[i].signaled = true;
			/* the last WR is signaled: its CQE says all before it completed */
			d[h].ops[d[h].nops - 1].signaled = true;
		}
		if (getenv("ROCE_ENGINE_DEBUG"))
			for (int h = 0; h < 2; h++)
				for (uint32_t i = 0; i < d[h].nops; i++)
					fprintf(stderr, "b%u h%d op %lu opc %u len %u local %lx remote %lx\n", b, h,
						(unsigned long)d[h].ops[i].id, d[h].ops[i].opcode, d[h].ops[i].len,
						(unsigned long)d[h].ops[i].local, (unsigned long)d[h].ops[i].remote);
		bool late = sim_below(&s, 4) == 0;
		for (int h = 0; h < 2; h++) {
			if (!late)
				post_recvs(&s, h, &d[h]);
			post_ops(&s, h, &d[h]);
		}
		for (int h = 0; h < 2; h++) {
			uint32_t sig = 0;
			for (uint32_t i = 0; i < d[h].nops; i++)
				sig += d[h].ops[i].signaled;
			k.want[h][0] = base_s[h] + sig;
			k.want[1 - h][1] = base_r[1 - h] + d[h].nrecv;
		}
		if (late) {
			/* let RNR NAKs happen, then post the receive WQEs */
			sim_run(&s, collect_done, &k, s.now + 200000);
			for (int h = 0; h < 2; h++)
				post_recvs(&s, h, &d[h]);
		}
		bool ok = sim_run(&s, collect_done, &k, s.now + SIM_DEADLINE_NS);
		cr_assert(ok, "%s: did not finish (send CQEs %u/%u %u/%u, recv %u/%u %u/%u)", tag,
			  k.n[0][0], k.want[0][0], k.n[1][0], k.want[1][0], k.n[0][1], k.want[0][1],
			  k.n[1][1], k.want[1][1]);
		for (int h = 0; h < 2; h++) {
			cr_assert_eq(xport_qp_state(s.h[h].qp), XPORT_STATE_RTS, "%s", tag);
			verify(&s, h, &d[h], &k, base_s[h], base_r[1 - h], tag);
			res.msgs += d[h].nops;
		}
	}
	/* nothing left over: no stray completions after the last batch */
	sim_run(&s, never_done, &k, s.now + 1000000);
	for (int h = 0; h < 2; h++)
		for (int r = 0; r < 2; r++)
			cr_assert_eq(k.n[h][r], k.want[h][r], "seed %lu: stray CQEs", (unsigned long)seed);
	res.trace = s.trace;
	res.frames = s.frames_sent;
	res.retransmits = xport_qp_counters(s.h[0].qp)[XPORT_CNT_RETRANSMIT_PKTS] +
			  xport_qp_counters(s.h[1].qp)[XPORT_CNT_RETRANSMIT_PKTS];
	if (getenv("ROCE_ENGINE_DEBUG")) {
		for (int h = 0; h < 2; h++) {
			fprintf(stderr, "seed %lu host %d:", (unsigned long)seed, h);
			for (int c = 0; c < XPORT_CNT_COUNT; c++)
				if (xport_qp_counters(s.h[h].qp)[c])
					fprintf(stderr, " %s=%lu", xport_counter_name(c),
						(unsigned long)xport_qp_counters(s.h[h].qp)[c]);
			fprintf(stderr, "\n");
		}
	}
	for (int h = 0; h < 2; h++)
		res.timeouts_seq_naks += xport_qp_counters(s.h[h].qp)[XPORT_CNT_RETRY_TIMEOUT] +
					 xport_qp_counters(s.h[h].qp)[XPORT_CNT_NAK_SEQ_TX];
	collect_fini(&k);
	if (reused_sim == NULL)
		sim_fini(&s);
	return res;
#undef s
}

Test(random, clean_link, .timeout = 120)
{
	uint64_t msgs = 0;
	uint32_t runs = 10 * scale();
	uint32_t first = getenv("ROCE_ENGINE_SEED") ? (uint32_t)atoi(getenv("ROCE_ENGINE_SEED")) : 0;
	for (uint32_t i = first; i < runs; i++) {
		struct mix_result r = run_mix(1000 + i, 3, 0);
		cr_assert_eq(r.timeouts_seq_naks, 0, "no timeout or sequence NAK on a clean link");
		msgs += r.msgs;
	}
	cr_log_info("clean: %lu messages", (unsigned long)msgs);
}

Test(random, faulty_link, .timeout = 240)
{
	uint64_t msgs = 0, frames = 0, rtx = 0;
	uint32_t runs = 40 * scale();
	uint32_t first = getenv("ROCE_ENGINE_SEED") ? (uint32_t)atoi(getenv("ROCE_ENGINE_SEED")) : 0;
	for (uint32_t i = first; i < runs; i++) {
		struct mix_result r = run_mix(2000 + i, 3, 100000);
		msgs += r.msgs;
		frames += r.frames;
		rtx += r.retransmits;
	}
	cr_assert_gt(rtx, 0, "faults must cause retransmissions");
	cr_log_info("faulty: %lu messages, %lu frames, %lu retransmitted", (unsigned long)msgs,
		    (unsigned long)frames, (unsigned long)rtx);
}

Test(random, same_seed_same_trace, .timeout = 120)
{
	struct mix_result a = run_mix(4242, 2, 80000);
	struct mix_result b = run_mix(4242, 2, 80000);
	struct mix_result c = run_mix(4243, 2, 80000);
	cr_assert_eq(a.trace, b.trace, "same seed, same trace");
	cr_assert_eq(a.frames, b.frames);
	cr_assert_neq(a.trace, c.trace, "another seed, another trace");
}

/*
 * The engine presets only the part of a frame slot before the extension
 * headers (xport_frame_new()) and each opcode's headers are set by their
 * builder: slots holding earlier frames' bytes (a daemon's output context
 * is shared by its QPs) give the same frames and CQEs, byte for byte.
 */
Test(random, stale_output_slots_change_no_byte, .timeout = 120)
{
	static const uint8_t fills[] = { 0xff, 0xa5 };

	for (uint64_t seed = 4242; seed < 4245; seed++) {
		struct mix_result clean = run_mix(seed, 2, seed == 4242 ? 0 : 80000);
		for (size_t i = 0; i < sizeof(fills); i++) {
			mix_out_fill = fills[i];
			struct mix_result stale = run_mix(seed, 2, seed == 4242 ? 0 : 80000);
			mix_out_fill = 0;
			cr_assert_eq(stale.trace, clean.trace, "seed %lu fill 0x%02x: another trace",
				     (unsigned long)seed, fills[i]);
			cr_assert_eq(stale.frames, clean.frames);
		}
	}
}

/*
 * sim_reset() (the xport fuzz target's per-input reset) leaves nothing of the
 * sim before: a run on a reset sim, after another run and in-flight frames,
 * posted WRs, armed timers, a scribbled ring and a QP in ERR, replays exactly
 * as on a fresh sim_init().
 */
Test(random, a_reset_sim_replays_like_a_fresh_one, .timeout = 120)
{
	static struct sim s;
	struct sim_params p;
	struct mix_result fresh = run_mix(4242, 2, 80000);

	sim_default_params(&p);
	p.srq = true;
	p.arena_len = ARENA; /* as run_mix's: the reset reuses every block */
	cr_assert_eq(sim_init(&s, &p, 7), 0);
	reused_sim = &s;
	struct mix_result other = run_mix(4243, 2, 80000);
	cr_assert_neq(other.trace, fresh.trace);
	/* leave it dirty: WRs posted and half sent, frames and timers pending */
	for (uint64_t i = 0; i < 8; i++) {
		struct sq_wqe w = { .wr_id = i, .opcode = WR_RDMA_WRITE, .num_sge = 1 };

		w.sg_list[0] = (struct wr_sge){ .addr = sim_va(&s, 0, 0), .length = 3000,
						.lkey = s.h[0].arena_key };
		w.wr.rdma.remote_addr = sim_va(&s, 1, 4096);
		w.wr.rdma.rkey = s.h[1].arena_key;
		cr_assert(sim_post_send(&s, 0, &w));
	}
	sim_poll(&s);
	cr_assert_gt(s.heap_len, 0, "frames in flight");
	__atomic_store_n(&s.h[1].sq->prod, 0xdeadbeefu, __ATOMIC_RELEASE);
	sim_set_state(&s, 1, XPORT_STATE_ERR);
	struct mix_result again = run_mix(4242, 2, 80000);
	cr_assert_eq(again.trace, fresh.trace, "a reset sim replays as a fresh one");
	cr_assert_eq(again.frames, fresh.frames);
	cr_assert_eq(again.msgs, fresh.msgs);
	cr_assert_eq(again.retransmits, fresh.retransmits);

	/* and state for state: dirty it again, reset, compare with a fresh one */
	static struct sim n;
	cr_assert(sim_post_send(&s, 0, &(struct sq_wqe){ .opcode = WR_SEND }));
	sim_poll(&s);
	sim_set_state(&s, 0, XPORT_STATE_ERR);
	s.h[0].arena[100] = 0x55;
	s.h[1].arena[ARENA - 1] = 0x55;
	p.srq = false;
	cr_assert_eq(sim_reset(&s, &p, 9), 0);
	cr_assert_eq(sim_init(&n, &p, 9), 0);
	cr_assert_eq(s.heap_len, 0);
	cr_assert_eq(s.now, n.now);
	cr_assert_eq(s.rng, n.rng);
	cr_assert_eq(s.trace, n.trace);
	cr_assert_eq(s.frames_sent, n.frames_sent);
	for (int h = 0; h < 2; h++) {
		struct sim_host *a = &s.h[h], *b = &n.h[h];

		cr_assert_eq(xport_qp_state(a->qp), xport_qp_state(b->qp));
		cr_assert_eq(xport_qp_sq_psn(a->qp), xport_qp_sq_psn(b->qp));
		cr_assert_eq(xport_qp_rq_psn(a->qp), xport_qp_rq_psn(b->qp));
		cr_assert_arr_eq(xport_qp_counters(a->qp), xport_qp_counters(b->qp),
				 XPORT_CNT_COUNT * sizeof(uint64_t));
		cr_assert_arr_eq(a->timer_at, b->timer_at, sizeof(a->timer_at));
		cr_assert_eq(a->ring.n, 0);
		cr_assert_eq(a->qp_errors, b->qp_errors);
		cr_assert_eq(a->arena_key == 0, b->arena_key == 0);
		cr_assert((a->rq == NULL) == (b->rq == NULL) && a->srq_ring == NULL);
		cr_assert_eq(spsc_ring_count(a->sq), 0);
		cr_assert_eq(spsc_ring_count(a->rq), 0);
		cr_assert_eq(spsc_ring_count(a->rcq_ring), 0);
		cr_assert_eq(spsc_ring_count(a->scq_ring), 0);
		uint64_t nonzero = 0;

		for (uint64_t i = 0; i < a->arena_len; i++)
			nonzero += a->arena[i] != 0;
		cr_assert_eq(nonzero, 0, "host %d: %lu arena bytes not zero", h, (unsigned long)nonzero);
	}
	sim_fini(&n);
	reused_sim = NULL;
	sim_fini(&s);
}

/*
 * sim_drop_frames() (the xport fuzz target's end of an input, so that the
 * input frees what it allocated) frees every frame in flight: none of them
 * arrives, the engines recover by retransmission; and a sim with trace_off
 * (the fuzz target's) hashes no frame.
 */
Test(random, dropped_frames_never_arrive_and_trace_off_hashes_nothing, .timeout = 60)
{
	static struct sim s;
	struct sim_params p;
	struct collect k;

	collect_init(&k);
	sim_default_params(&p);
	p.arena_len = ARENA;
	cr_assert_eq(sim_init(&s, &p, 3), 0);
	memset(s.h[0].arena, 0xa5, 3000);
	for (uint64_t i = 0; i < 4; i++) {
		struct sq_wqe w = { .wr_id = i, .opcode = WR_RDMA_WRITE, .num_sge = 1,
				    .send_flags = WR_FLAG_SIGNALED };

		w.sg_list[0] = (struct wr_sge){ .addr = sim_va(&s, 0, 0), .length = 3000,
						.lkey = s.h[0].arena_key };
		w.wr.rdma.remote_addr = sim_va(&s, 1, 4096 * (i + 1));
		w.wr.rdma.rkey = s.h[1].arena_key;
		cr_assert(sim_post_send(&s, 0, &w));
	}
	sim_poll(&s);
	cr_assert_gt(s.heap_len, 0, "frames in flight");
	uint64_t sent = s.frames_sent;
	uint32_t epsn = xport_qp_rq_psn(s.h[1].qp);

	sim_drop_frames(&s);
	cr_assert_eq(s.heap_len, 0);
	s.trace_off = true;
	uint64_t trace = s.trace;
	/* 1 ms: before the retransmission timer (4.2 ms): nothing arrives */
	sim_run(&s, never_done, &k, s.now + 1000000);
	cr_assert_eq(xport_qp_rq_psn(s.h[1].qp), epsn, "a dropped frame arrived");
	cr_assert_eq(s.h[1].arena[4096], 0);
	cr_assert_eq(k.n[0][0], 0);
	/* then the requester retransmits and the WRITEs land */
	sim_run(&s, never_done, &k, s.now + 100000000);
	cr_assert_gt(s.frames_sent, sent);
	cr_assert_neq(xport_qp_rq_psn(s.h[1].qp), epsn);
	for (uint64_t i = 0; i < 4; i++)
		cr_assert_eq(s.h[1].arena[4096 * (i + 1) + 2999], 0xa5, "WRITE %lu landed",
			     (unsigned long)i);
	cr_assert_eq(k.n[0][0], 4, "every WRITE completed");
	cr_assert_eq(s.trace, trace, "trace_off: no frame or CQE hashed");
	collect_fini(&k);
	sim_fini(&s);
}
