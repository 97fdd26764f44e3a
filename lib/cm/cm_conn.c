/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cm: connection slots and the tables that find them, all sized at
 * agent creation (nothing grows afterwards):
 *  - a free list of slots; a handle is (generation << 32 | slot), so a
 *    handle kept past cm_conn_destroy() is refused, never aliased;
 *  - three chained hash tables over the slots, keyed with a per-agent
 *    random key (a peer cannot aim at one bucket): local comm ID (every
 *    message addressed to us), (remote comm ID, remote CA GUID) (duplicate
 *    REQ/REP detection, REJ "timeout" lookup) and (remote QPN, remote CA
 *    GUID) (stale connections), as Linux's cm.c keeps its rb-trees;
 *  - a binary min-heap of slots by timer deadline (one timer per slot:
 *    retransmission, TimeWait or the passive give-up time).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

uint64_t
cm_rand64(struct cm_agent *a)
{
	/* splitmix64 */
	uint64_t z = (a->rng += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static uint32_t
hash2(const struct cm_agent *a, uint64_t x, uint64_t y)
{
	uint64_t z = x * UINT64_C(0x9E3779B97F4A7C15) ^ y ^ a->hash_key;

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return (uint32_t)(z ^ (z >> 31)) & a->hash_mask;
}

uint64_t
cm_gid_fold(const uint8_t gid[16])
{
	uint64_t hi = 0, lo = 0;

	for (int i = 0; i < 8; i++) {
		hi = hi << 8 | gid[i];
		lo = lo << 8 | gid[8 + i];
	}
	return hi * UINT64_C(0x9E3779B97F4A7C15) ^ lo;
}

uint32_t
cm_conn_index(const struct cm_agent *a, const struct cm_conn *c)
{
	return (uint32_t)(c - a->conns);
}

cm_conn_t
cm_conn_handle(const struct cm_agent *a, const struct cm_conn *c)
{
	return (uint64_t)c->gen << 32 | cm_conn_index(a, c);
}

struct cm_conn *
cm_conn_get(const struct cm_agent *a, cm_conn_t h)
{
	uint32_t idx = (uint32_t)h;
	struct cm_conn *c;

	if (!a || idx >= a->cfg.max_conns)
		return NULL;
	c = &a->conns[idx];
	if (!c->in_use || c->orphan || c->gen != (uint32_t)(h >> 32))
		return NULL;
	return c;
}

/* ---- chains ------------------------------------------------------------- */

#define CHAIN_NEXT(c, which) (*(uint32_t *)((uint8_t *)(c) + (which)))

static void
chain_insert(struct cm_agent *a, uint32_t *tbl, size_t which, uint32_t bucket, struct cm_conn *c)
{
	CHAIN_NEXT(c, which) = tbl[bucket];
	tbl[bucket] = cm_conn_index(a, c);
}

static void
chain_remove(struct cm_agent *a, uint32_t *tbl, size_t which, uint32_t bucket, struct cm_conn *c)
{
	uint32_t idx = cm_conn_index(a, c);
	uint32_t *p = &tbl[bucket];

	while (*p != CM_NIL) {
		if (*p == idx) {
			*p = CHAIN_NEXT(c, which);
			return;
		}
		p = &CHAIN_NEXT(&a->conns[*p], which);
	}
}

#define NEXT_LOCAL offsetof(struct cm_conn, next_local)
#define NEXT_REMOTE offsetof(struct cm_conn, next_remote)
#define NEXT_QPN offsetof(struct cm_conn, next_qpn)

struct cm_conn *
cm_find_local(const struct cm_agent *a, uint32_t local_id)
{
	for (uint32_t i = a->local_tbl[hash2(a, local_id, 0)]; i != CM_NIL; i = a->conns[i].next_local)
		if (a->conns[i].local_id == local_id)
			return &a->conns[i];
	return NULL;
}

struct cm_conn *
cm_find_remote(const struct cm_agent *a, uint32_t remote_id, uint64_t guid, bool sidr)
{
	for (uint32_t i = a->remote_tbl[hash2(a, remote_id, guid)]; i != CM_NIL; i = a->conns[i].next_remote) {
		const struct cm_conn *c = &a->conns[i];

		if (c->remote_id == remote_id && c->remote_ca_guid == guid && c->sidr == sidr)
			return &a->conns[i];
	}
	return NULL;
}

struct cm_conn *
cm_find_qpn(const struct cm_agent *a, uint32_t remote_qpn, uint64_t guid, const struct cm_conn *except)
{
	for (uint32_t i = a->qpn_tbl[hash2(a, remote_qpn, guid)]; i != CM_NIL; i = a->conns[i].next_qpn) {
		const struct cm_conn *c = &a->conns[i];

		if (c != except && c->remote_qpn == remote_qpn && c->remote_ca_guid == guid)
			return &a->conns[i];
	}
	return NULL;
}

/* Enter c in the remote ID table and, unless it is a SIDR, the QPN table. */
void
cm_insert_remote(struct cm_agent *a, struct cm_conn *c)
{
	if (!(c->tables & CM_IN_REMOTE)) {
		chain_insert(a, a->remote_tbl, NEXT_REMOTE, hash2(a, c->remote_id, c->remote_ca_guid), c);
		c->tables |= CM_IN_REMOTE;
	}
	if (!c->sidr && !(c->tables & CM_IN_QPN)) {
		chain_insert(a, a->qpn_tbl, NEXT_QPN, hash2(a, c->remote_qpn, c->remote_ca_guid), c);
		c->tables |= CM_IN_QPN;
	}
}

void
cm_remove_qpn(struct cm_agent *a, struct cm_conn *c)
{
	if (c->tables & CM_IN_QPN)
		chain_remove(a, a->qpn_tbl, NEXT_QPN, hash2(a, c->remote_qpn, c->remote_ca_guid), c);
	c->tables &= (uint8_t)~CM_IN_QPN;
}

void
cm_remove_remote(struct cm_agent *a, struct cm_conn *c)
{
	if (c->tables & CM_IN_REMOTE)
		chain_remove(a, a->remote_tbl, NEXT_REMOTE, hash2(a, c->remote_id, c->remote_ca_guid), c);
	if (c->tables & CM_IN_QPN)
		chain_remove(a, a->qpn_tbl, NEXT_QPN, hash2(a, c->remote_qpn, c->remote_ca_guid), c);
	c->tables &= (uint8_t)~(CM_IN_REMOTE | CM_IN_QPN);
}

/* ---- slots -------------------------------------------------------------- */

struct cm_conn *
cm_conn_alloc(struct cm_agent *a, uint64_t cookie)
{
	struct cm_conn *c;
	uint32_t gen, id;

	if (a->free_head == CM_NIL)
		return NULL;
	c = &a->conns[a->free_head];
	a->free_head = c->next_free;
	gen = c->gen;
	memset(c, 0, sizeof(*c));
	c->gen = gen;
	c->heap_pos = CM_NIL;
	c->next_local = c->next_remote = c->next_qpn = c->next_free = CM_NIL;
	c->in_use = 1;
	c->cookie = cookie;
	/* A random local comm ID, never 0, unique among the slots held
	 * (TimeWait included): cm.c XORs an index with a random operand;
	 * ours is random outright, so it tells nothing of the slot. */
	do
		id = (uint32_t)cm_rand64(a);
	while (id == 0 || cm_find_local(a, id));
	c->local_id = id;
	chain_insert(a, a->local_tbl, NEXT_LOCAL, hash2(a, id, 0), c);
	c->tables = CM_IN_LOCAL;
	a->in_use++;
	return c;
}

void
cm_conn_free(struct cm_agent *a, struct cm_conn *c)
{
	cm_timer_cancel(a, c);
	cm_remove_remote(a, c);
	if (c->tables & CM_IN_LOCAL)
		chain_remove(a, a->local_tbl, NEXT_LOCAL, hash2(a, c->local_id, 0), c);
	c->tables = 0;
	c->in_use = 0;
	c->gen = c->gen + 1 ? c->gen + 1 : 1;
	c->next_free = a->free_head;
	a->free_head = cm_conn_index(a, c);
	a->in_use--;
}

/* ---- timer heap --------------------------------------------------------- */

static void
heap_set(struct cm_agent *a, uint32_t pos, uint32_t idx)
{
	a->heap[pos] = idx;
	a->conns[idx].heap_pos = pos;
}

static void
heap_up(struct cm_agent *a, uint32_t pos)
{
	uint32_t idx = a->heap[pos];
	uint64_t d = a->conns[idx].deadline;

	while (pos > 0) {
		uint32_t parent = (pos - 1) / 2;

		if (a->conns[a->heap[parent]].deadline <= d)
			break;
		heap_set(a, pos, a->heap[parent]);
		pos = parent;
	}
	heap_set(a, pos, idx);
}

static void
heap_down(struct cm_agent *a, uint32_t pos)
{
	uint32_t idx = a->heap[pos];
	uint64_t d = a->conns[idx].deadline;

	for (;;) {
		uint32_t l = 2 * pos + 1, m = pos;
		uint64_t md = d;

		if (l < a->heap_len && a->conns[a->heap[l]].deadline < md) {
			m = l;
			md = a->conns[a->heap[l]].deadline;
		}
		if (l + 1 < a->heap_len && a->conns[a->heap[l + 1]].deadline < md)
			m = l + 1;
		if (m == pos)
			break;
		heap_set(a, pos, a->heap[m]);
		pos = m;
	}
	heap_set(a, pos, idx);
}

void
cm_timer_cancel(struct cm_agent *a, struct cm_conn *c)
{
	uint32_t pos = c->heap_pos;

	if (pos == CM_NIL)
		return;
	c->heap_pos = CM_NIL;
	if (--a->heap_len == pos)
		return;
	/* The last element fills the hole, then sifts whichever way it must. */
	heap_set(a, pos, a->heap[a->heap_len]);
	if (pos > 0 && a->conns[a->heap[pos]].deadline < a->conns[a->heap[(pos - 1) / 2]].deadline)
		heap_up(a, pos);
	else
		heap_down(a, pos);
}

void
cm_timer_arm(struct cm_agent *a, struct cm_conn *c, uint64_t deadline)
{
	cm_timer_cancel(a, c);
	c->deadline = deadline;
	c->heap_pos = a->heap_len;
	a->heap[a->heap_len++] = cm_conn_index(a, c);
	heap_up(a, c->heap_pos);
}

struct cm_conn *
cm_timer_due(struct cm_agent *a, uint64_t now)
{
	struct cm_conn *c;

	if (a->heap_len == 0)
		return NULL;
	c = &a->conns[a->heap[0]];
	return c->deadline <= now ? c : NULL;
}

uint64_t
cm_agent_next_deadline(const struct cm_agent *a)
{
	if (!a || a->heap_len == 0)
		return UINT64_MAX;
	return a->conns[a->heap[0]].deadline;
}

/* ---- setup -------------------------------------------------------------- */

int
cm_tables_init(struct cm_agent *a)
{
	uint32_t n = a->cfg.max_conns, buckets = 16;

	while (buckets < 2 * n)
		buckets <<= 1;
	a->hash_mask = buckets - 1;
	a->conns = calloc(n, sizeof(*a->conns));
	a->local_tbl = malloc(buckets * sizeof(uint32_t));
	a->remote_tbl = malloc(buckets * sizeof(uint32_t));
	a->qpn_tbl = malloc(buckets * sizeof(uint32_t));
	a->heap = calloc(n, sizeof(uint32_t));
	a->listeners = calloc(a->cfg.max_listeners, sizeof(*a->listeners));
	if (!a->conns || !a->local_tbl || !a->remote_tbl || !a->qpn_tbl || !a->heap || !a->listeners)
		return -ENOMEM;
	memset(a->local_tbl, 0xff, buckets * sizeof(uint32_t));
	memset(a->remote_tbl, 0xff, buckets * sizeof(uint32_t));
	memset(a->qpn_tbl, 0xff, buckets * sizeof(uint32_t));
	for (uint32_t i = 0; i < n; i++) {
		a->conns[i].gen = 1;
		a->conns[i].heap_pos = CM_NIL;
		a->conns[i].next_free = i + 1 < n ? i + 1 : CM_NIL;
	}
	a->free_head = 0;
	return 0;
}

void
cm_tables_fini(struct cm_agent *a)
{
	free(a->conns);
	free(a->local_tbl);
	free(a->remote_tbl);
	free(a->qpn_tbl);
	free(a->heap);
	free(a->listeners);
}
