/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the engine tests: WQE builders and CQE collection. */
#ifndef TEST_ENGINE_UTIL_H
#define TEST_ENGINE_UTIL_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define COLLECT_MAX 8192

/* CQEs drained from both hosts' CQs; the run stops when the wanted counts are reached. */
struct collect {
	struct cqe *c[2][2];      /* [host][recv] */
	uint32_t n[2][2];
	uint32_t want[2][2];
};

static inline void
collect_init(struct collect *k)
{
	memset(k, 0, sizeof(*k));
	for (int h = 0; h < 2; h++)
		for (int r = 0; r < 2; r++)
			k->c[h][r] = calloc(COLLECT_MAX, sizeof(struct cqe));
}

static inline void
collect_fini(struct collect *k)
{
	for (int h = 0; h < 2; h++)
		for (int r = 0; r < 2; r++)
			free(k->c[h][r]);
}

static inline void
collect_drain(struct sim *s, struct collect *k)
{
	for (int h = 0; h < 2; h++)
		for (int r = 0; r < 2; r++) {
			struct cqe c;
			while (sim_poll_cq(s, h, r, &c))
				if (k->n[h][r] < COLLECT_MAX)
					k->c[h][r][k->n[h][r]++] = c;
		}
}

static inline bool
collect_done(struct sim *s, void *arg)
{
	struct collect *k = arg;
	collect_drain(s, k);
	for (int h = 0; h < 2; h++)
		for (int r = 0; r < 2; r++)
			if (k->n[h][r] < k->want[h][r])
				return false;
	return true;
}

/* Never done: run until nothing is left to happen (or the deadline). */
static inline bool
never_done(struct sim *s, void *arg)
{
	collect_drain(s, arg);
	return false;
}

static inline struct sq_wqe
wqe_new(uint8_t opcode, uint64_t wr_id, uint32_t flags)
{
	struct sq_wqe w;
	memset(&w, 0, sizeof(w));
	w.opcode = opcode;
	w.wr_id = wr_id;
	w.send_flags = flags;
	return w;
}

static inline void
wqe_add_sge(struct sq_wqe *w, uint64_t va, uint32_t len, uint32_t key)
{
	w->sg_list[w->num_sge++] = (struct wr_sge){ .addr = va, .length = len, .lkey = key };
}

static inline struct rq_wqe
rwqe_new(uint64_t wr_id, uint64_t va, uint32_t len, uint32_t key)
{
	struct rq_wqe w;
	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.num_sge = 1;
	w.sg_list[0] = (struct wr_sge){ .addr = va, .length = len, .lkey = key };
	return w;
}

/* Deterministic byte pattern for message @p id at byte @p i. */
static inline uint8_t
pattern(uint64_t id, uint64_t i)
{
	uint64_t x = (id + 1) * 0x9E3779B97F4A7C15ULL ^ (i * 0xBF58476D1CE4E5B9ULL);
	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17));
}

static inline void
fill(uint8_t *p, uint64_t len, uint64_t id)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] = pattern(id, i);
}

/* @return index of the first mismatch, or -1 */
static inline int64_t
check_fill(const uint8_t *p, uint64_t len, uint64_t id)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != pattern(id, i))
			return (int64_t)i;
	return -1;
}

#define SIM_DEADLINE_NS (600ull * 1000 * 1000 * 1000) /* 600 simulated seconds */

/* @p p is an ACK/NAK with @p syndrome for @p psn. */
static inline void
assert_ack(const struct roce_pkt *p, uint8_t syndrome, uint32_t psn)
{
	cr_assert_eq(p->opcode, ROCE_OP_RC_ACKNOWLEDGE, "opcode 0x%02x", p->opcode);
	cr_assert_eq(p->aeth.syndrome, syndrome, "syndrome 0x%02x != 0x%02x", p->aeth.syndrome,
		     syndrome);
	cr_assert_eq(p->psn, psn & ROCE_PSN_MASK, "psn 0x%06x != 0x%06x", p->psn, psn);
}


/* Frames seen on the link (recorded by the filter hook), optionally dropped. */
#define CAPTURE_MAX 4096
struct capture {
	struct roce_pkt pkt[CAPTURE_MAX];
	int from[CAPTURE_MAX];
	uint64_t at[CAPTURE_MAX];
	uint32_t n;
	bool drop[2];             /* drop everything from host i */
	struct sim *s;
	/* drop the k-th frame (0-based, counted per sender) matching opcode, once */
	int drop_op;
	int drop_from;
	uint32_t drop_nth;
	uint32_t seen_op;
};

static inline bool
capture_filter(void *arg, int from, const struct roce_pkt *pkt)
{
	struct capture *c = arg;
	if (c->n < CAPTURE_MAX) {
		c->pkt[c->n] = *pkt;
		c->from[c->n] = from;
		c->at[c->n] = c->s->now;
		c->n++;
	}
	if (c->drop_op >= 0 && from == c->drop_from && pkt->opcode == c->drop_op) {
		if (c->seen_op++ == c->drop_nth)
			return false;
	}
	return !c->drop[from];
}

static inline void
capture_attach(struct sim *s, struct capture *c)
{
	memset(c, 0, sizeof(*c));
	c->s = s;
	c->drop_op = -1;
	s->filter = capture_filter;
	s->filter_arg = c;
}

/* @return how many captured frames from @p from have @p opcode */
static inline uint32_t
capture_count(const struct capture *c, int from, int opcode)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < c->n; i++)
		if (c->from[i] == from && c->pkt[i].opcode == opcode)
			n++;
	return n;
}

/* A packet as host @p from would send it to the other host (for injection). */
static inline struct roce_pkt
sim_pkt(const struct sim *s, int from, uint8_t opcode, uint32_t psn)
{
	struct roce_pkt p;
	memset(&p, 0, sizeof(p));
	const struct wr_av *av = &s->h[from].cfg.av;
	memcpy(p.l3.dmac, av->dmac, 6);
	memcpy(p.l3.smac, av->smac, 6);
	p.l3.ipv6 = av->ipv6;
	memcpy(p.l3.sgid, av->sgid, 16);
	memcpy(p.l3.dgid, av->dgid, 16);
	p.l3.hop_limit = 64;
	p.opcode = opcode;
	p.hdrs = roce_opcode_table[opcode].hdrs;
	p.pkey = 0xffff;
	p.dest_qpn = s->h[!from].cfg.qpn;
	p.psn = psn & ROCE_PSN_MASK;
	return p;
}

/* A request packet as host 0 would send it to host 1, AckReq set. */
static inline struct roce_pkt
req_pkt(const struct sim *s, uint8_t opcode, uint32_t psn)
{
	struct roce_pkt p = sim_pkt(s, 0, opcode, psn);

	p.ack_req = true;
	return p;
}

/* FETCH_ADD of @p add to the 8 bytes at host 1's arena offset @p off, from host 0. */
static inline struct roce_pkt
fetch_add_pkt(struct sim *s, uint32_t psn, uint64_t off, uint64_t add)
{
	struct roce_pkt p = req_pkt(s, ROCE_OP_RC_FETCH_ADD, psn);

	p.atmeth.va = sim_va(s, 1, off);
	p.atmeth.rkey = s->h[1].arena_key;
	p.atmeth.swap_add = add;
	return p;
}

#endif
