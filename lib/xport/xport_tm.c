/* SPDX-License-Identifier: BSD-3-Clause */
/* Tag matching lists and verdicts (xport_tm.h). */
#include "xport_tm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

int
xport_tm_init(struct xport_tm *t, uint32_t cap)
{
	memset(t, 0, sizeof(*t));
	if (cap == 0 || cap > XPORT_TM_MAX_TAGS)
		return EINVAL;
	t->e = calloc(cap, sizeof(*t->e));
	if (t->e == NULL)
		return ENOMEM;
	t->cap = cap;
	t->head = t->tail = NONE;
	for (uint32_t i = 0; i < cap; i++)
		t->e[i].next = i + 1 < cap ? i + 1 : NONE;
	t->free = 0;
	return 0;
}

void
xport_tm_fini(struct xport_tm *t)
{
	free(t->e);
	memset(t, 0, sizeof(*t));
}

/* Fill entry @p i and append it to the list: matching goes in posting order. */
static void
tm_link(struct xport_tm *t, uint32_t i, uint64_t tag, uint64_t mask, uint64_t wr_id,
	const struct wr_sge *sg, uint32_t num_sge)
{
	struct xport_tm_entry *e = &t->e[i];

	e->tag = tag;
	e->mask = mask;
	e->wr_id = wr_id;
	e->num_sge = num_sge;
	if (num_sge > 0)
		memcpy(e->sg, sg, num_sge * sizeof(*sg));
	e->live = true;
	e->prev = t->tail;
	e->next = NONE;
	if (t->tail != NONE)
		t->e[t->tail].next = i;
	else
		t->head = i;
	t->tail = i;
	t->n++;
}

int
xport_tm_add(struct xport_tm *t, uint64_t tag, uint64_t mask, uint64_t wr_id,
	     const struct wr_sge *sg, uint32_t num_sge, uint32_t *handle, bool *sync_req)
{
	struct xport_tm_entry *e;
	uint32_t i;

	if (num_sge > WQE_MAX_SGE || (num_sge > 0 && sg == NULL) || t->by_index)
		return EINVAL;
	if (t->free == NONE)
		return ENOSPC;
	i = t->free;
	e = &t->e[i];
	t->free = e->next;
	tm_link(t, i, tag, mask, wr_id, sg, num_sge);
	*handle = (uint32_t)e->gen << 16 | i;
	if (sync_req != NULL)
		*sync_req = !xport_tm_synced(t);
	return 0;
}

/* by_index: the entry at @p i left the list (release: the shim may reuse the index). */
static void
tm_release(struct xport_tm *t, uint32_t i)
{
	if (t->released != NULL)
		__atomic_store_n(&t->released[i], __atomic_load_n(&t->released[i], __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELEASE);
}

/* Take live entry @p i out of the posting order onto the free list. */
static void
tm_unlink(struct xport_tm *t, uint32_t i)
{
	struct xport_tm_entry *e = &t->e[i];

	if (e->prev != NONE)
		t->e[e->prev].next = e->next;
	else
		t->head = e->next;
	if (e->next != NONE)
		t->e[e->next].prev = e->prev;
	else
		t->tail = e->prev;
	e->live = false;
	e->gen++; /* its handle is stale from now on */
	t->n--;
	if (t->by_index) {
		tm_release(t, i);
		return;
	}
	e->next = t->free;
	t->free = i;
}

int
xport_tm_add_at(struct xport_tm *t, uint32_t index, uint64_t tag, uint64_t mask,
		uint64_t wr_id, const struct wr_sge *sg, uint32_t num_sge, bool *sync_req)
{
	struct xport_tm_entry *e;

	if (index >= t->cap)
		return EINVAL;
	t->by_index = true;
	e = &t->e[index];
	if (e->live)
		return EEXIST; /* not the shim's count: no release */
	if (num_sge > WQE_MAX_SGE || (num_sge > 0 && sg == NULL)) {
		tm_release(t, index);
		return EINVAL;
	}
	tm_link(t, index, tag, mask, wr_id, sg, num_sge);
	if (sync_req != NULL)
		*sync_req = !xport_tm_synced(t);
	return 0;
}

int
xport_tm_del(struct xport_tm *t, uint32_t handle)
{
	uint32_t i = handle & 0xffffu;

	if (t->by_index && handle >= t->cap)
		return ENOENT;
	if (i >= t->cap || !t->e[i].live ||
	    (!t->by_index && t->e[i].gen != (uint16_t)(handle >> 16)))
		return ENOENT;
	tm_unlink(t, i);
	return 0;
}

void
xport_tm_sync(struct xport_tm *t, uint32_t unexpected_cnt)
{
	t->unexp_sw = unexpected_cnt;
}

static uint64_t
be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int
xport_tmh_parse(const uint8_t *p, uint32_t len, struct xport_tmh *h)
{
	memset(h, 0, sizeof(*h));
	/* the reserved bytes are not looked at (as mlx5: pyverbs' test_tag_matching
	 * writes the opcode and the tag over its payload and leaves them as they are) */
	if (len < XPORT_TMH_LEN || p[0] > XPORT_TMH_EAGER)
		return -EINVAL;
	h->op = p[0];
	h->app_ctx = be32(p + 4);
	h->tag = be64(p + 8);
	if (h->op == XPORT_TMH_RNDV) {
		if (len < XPORT_TMH_LEN + XPORT_RVH_LEN)
			return -EINVAL;
		h->va = be64(p + 16);
		h->rkey = be32(p + 24);
		h->len = be32(p + 28);
	}
	return 0;
}

enum xport_tm_verdict
xport_tm_peek(const struct xport_tm *t, const struct xport_tmh *h, bool no_rndv, uint32_t *idx)
{
	if (h->op == XPORT_TMH_NO_TAG || h->op == XPORT_TMH_FIN)
		return XPORT_TM_NO_TAG;
	if (xport_tm_synced(t) && !(no_rndv && h->op == XPORT_TMH_RNDV)) {
		for (uint32_t i = t->head; i != NONE; i = t->e[i].next) {
			const struct xport_tm_entry *e = &t->e[i];

			if ((h->tag & e->mask) != (e->tag & e->mask))
				continue;
			*idx = i;
			return h->op == XPORT_TMH_RNDV ? XPORT_TM_RNDV : XPORT_TM_EAGER;
		}
	}
	return XPORT_TM_UNEXPECTED;
}

void
xport_tm_commit(struct xport_tm *t, enum xport_tm_verdict v, uint32_t idx,
		struct xport_tm_entry *hit)
{
	if (v == XPORT_TM_EAGER || v == XPORT_TM_RNDV) {
		if (hit != NULL)
			*hit = t->e[idx];
		tm_unlink(t, idx);
	} else if (v == XPORT_TM_UNEXPECTED) {
		t->unexp_hw++;
	}
}

enum xport_tm_verdict
xport_tm_match(struct xport_tm *t, const uint8_t *p, uint32_t len, struct xport_tmh *h,
	       struct xport_tm_entry *hit)
{
	enum xport_tm_verdict v;
	uint32_t idx = 0;

	if (xport_tmh_parse(p, len, h) != 0)
		return XPORT_TM_NO_TAG;
	v = xport_tm_peek(t, h, false, &idx);
	xport_tm_commit(t, v, idx, hit);
	return v;
}

void
xport_tm_recv_cqe(struct cqe *c, enum xport_tm_verdict v, enum xport_tm_cqe_step step,
		  const struct xport_tmh *h, const struct xport_tm_entry *hit, uint32_t msg_len)
{
	bool matched = v == XPORT_TM_EAGER || v == XPORT_TM_RNDV;

	c->opcode = v == XPORT_TM_NO_TAG ? WC_TM_NO_TAG : WC_TM_RECV;
	c->wc_flags = 0;
	c->tm_tag = 0;
	c->imm_data = 0;
	c->byte_len = msg_len;
	if (!matched)
		return;
	c->wr_id = hit->wr_id;
	if (v == XPORT_TM_RNDV && step == XPORT_TM_CQE_RNDV_DONE) {
		c->wc_flags = WC_FLAG_TM_DATA_VALID;
		c->byte_len = h->len;
		return;
	}
	c->tm_tag = h->tag;
	c->imm_data = h->app_ctx;
	if (v == XPORT_TM_RNDV) {
		c->wc_flags = WC_FLAG_TM_MATCH;
		c->byte_len = 0;
	} else {
		c->wc_flags = WC_FLAG_TM_MATCH | WC_FLAG_TM_DATA_VALID;
		c->byte_len = msg_len > XPORT_TMH_LEN ? msg_len - XPORT_TMH_LEN : 0;
	}
}

void
xport_tm_op_cqe(struct cqe *c, uint32_t wc_opcode, uint64_t wr_id, int rc, bool sync_req)
{
	*c = (struct cqe){
		.wr_id = wr_id,
		.status = rc == 0 ? WC_SUCCESS : WC_TM_ERR,
		.opcode = wc_opcode,
		.wc_flags = rc == 0 && sync_req ? WC_FLAG_TM_SYNC_REQ : 0,
	};
}
