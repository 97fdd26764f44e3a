/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: fixed object tables. Allocated once, never grown. Free slots sit
 * on FIFO lists (one per placement class, see ctl_table_alloc_class()): a
 * slot freed goes to the tail, allocation takes the head, so a freed slot
 * (and with it a QPN or key) is reused as late as possible and both
 * allocation and free are O(1) whatever the number of objects. A fresh
 * table hands out slots in index order. A per-slot generation makes stale
 * handles fail. Single-threaded: the control thread owns every table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_internal.h"

#define CTL_TABLE_NIL UINT32_MAX /* end of a free list */

static uint32_t ctl_table_class_of(const struct ctl_table *t, uint32_t index)
{
	return (uint32_t)(((uint64_t)index + t->class_base) % t->nclass);
}

static void ctl_table_push(struct ctl_table *t, uint32_t index)
{
	uint32_t c = ctl_table_class_of(t, index);

	t->next[index] = CTL_TABLE_NIL;
	if (t->tail[c] == CTL_TABLE_NIL)
		t->head[c] = index;
	else
		t->next[t->tail[c]] = index;
	t->tail[c] = index;
}

static uint32_t ctl_table_pop(struct ctl_table *t, uint32_t c)
{
	uint32_t i = t->head[c];

	if (i == CTL_TABLE_NIL)
		return CTL_TABLE_NIL;
	t->head[c] = t->next[i];
	if (t->head[c] == CTL_TABLE_NIL)
		t->tail[c] = CTL_TABLE_NIL;
	return i;
}

static void ctl_table_free_lists(struct ctl_table *t)
{
	if (t->head != &t->one_head) {
		free(t->head);
		free(t->tail);
	}
	t->head = &t->one_head;
	t->tail = &t->one_tail;
}

/*
 * Split the free slots into @p modulus classes by (index + base) % modulus.
 * O(cap), once per change of partition (in practice once: the QP table is
 * always asked with the daemon's lcore count). The free slots keep index
 * order within each class. @return 0 or -ENOMEM (the old partition stays).
 */
static int ctl_table_partition(struct ctl_table *t, uint32_t base, uint32_t modulus)
{
	uint32_t *head = &t->one_head, *tail = &t->one_tail;

	if (modulus == t->nclass && base % modulus == t->class_base)
		return 0;
	if (modulus > 1) {
		head = malloc(modulus * sizeof(*head));
		tail = malloc(modulus * sizeof(*tail));
		if (head == NULL || tail == NULL) {
			free(head);
			free(tail);
			return -ENOMEM;
		}
	}
	ctl_table_free_lists(t);
	t->head = head;
	t->tail = tail;
	t->nclass = modulus;
	t->class_base = base % modulus;
	for (uint32_t c = 0; c < modulus; c++)
		head[c] = tail[c] = CTL_TABLE_NIL;
	for (uint32_t i = 0; i < t->cap; i++)
		if (((struct ctl_obj *)ctl_table_at(t, i))->owner == NULL)
			ctl_table_push(t, i);
	return 0;
}

int ctl_table_init(struct ctl_table *t, uint32_t cap, size_t obj_size)
{
	memset(t, 0, sizeof(*t));
	t->head = &t->one_head;
	t->tail = &t->one_tail;
	if (cap == 0 || cap > CTL_TABLE_MAX || obj_size < sizeof(struct ctl_obj))
		return -EINVAL;
	t->mem = calloc(cap, obj_size);
	t->next = calloc(cap, sizeof(*t->next));
	if (t->mem == NULL || t->next == NULL) {
		ctl_table_fini(t);
		return -ENOMEM;
	}
	t->obj_size = obj_size;
	t->cap = cap;
	t->nclass = 1;
	t->one_head = t->one_tail = CTL_TABLE_NIL;
	for (uint32_t i = 0; i < cap; i++) {
		struct ctl_obj *o = ctl_table_at(t, i);

		o->index = i;
		o->gen = 1;
		ctl_table_push(t, i);
	}
	return 0;
}

void ctl_table_fini(struct ctl_table *t)
{
	ctl_table_free_lists(t);
	free(t->next);
	free(t->mem);
	memset(t, 0, sizeof(*t));
}

void *ctl_table_at(const struct ctl_table *t, uint32_t index)
{
	return t->mem + (size_t)index * t->obj_size;
}

void *ctl_table_alloc(struct ctl_table *t, struct ctl_conn *owner, enum ctl_kind kind,
		      uint64_t user_handle)
{
	return ctl_table_alloc_class(t, owner, kind, user_handle, 0, 1, 0);
}

/* The client's quota (ctl_quota) for @p kind; 0: none. */
static uint32_t ctl_quota_of(const struct ctl_quota *q, enum ctl_kind kind)
{
	switch (kind) {
	case CTL_KIND_QP: return q->max_qp;
	case CTL_KIND_SRQ: return q->max_srq;
	case CTL_KIND_XRCD: return q->max_pd;
	case CTL_KIND_AH: return q->max_ah;
	case CTL_KIND_MR: return q->max_mr;
	case CTL_KIND_MW: return q->max_mr;
	case CTL_KIND_DM: return q->max_mr;
	case CTL_KIND_FLOW: return q->max_flows;
	case CTL_KIND_CQ: return q->max_cq;
	case CTL_KIND_CHANNEL: return q->max_channels;
	case CTL_KIND_PD: return q->max_pd;
	case CTL_KIND_CM_ID: return q->max_cm_ids;
	case CTL_KIND_CM_CHANNEL: return q->max_cm_channels;
	default: return 0;
	}
}

/* @p owner's group holds its quota of @p kind already: counted, refused. */
static bool ctl_over_quota(struct ctl_conn *owner, enum ctl_kind kind)
{
	struct ctl *ctl = owner->ctl;
	uint32_t q = ctl != NULL ? ctl_quota_of(&ctl->cfg.quota, kind) : 0;

	if (q == 0 || owner->group->nkind[kind] < q)
		return false;
	ctl->quota_refused++;
	return true;
}

void *ctl_table_alloc_class(struct ctl_table *t, struct ctl_conn *owner, enum ctl_kind kind,
			    uint64_t user_handle, uint32_t base, uint32_t modulus, uint32_t rem)
{
	struct ctl_obj *o;
	uint32_t i;
	uint16_t gen;

	if (t->nused == t->cap || modulus == 0 || rem >= modulus ||
	    ctl_table_partition(t, base, modulus) != 0)
		return NULL;
	if (ctl_over_quota(owner, kind))
		return NULL;
	/* partitioned by (index + base) % modulus: class rem is the list asked for */
	i = ctl_table_pop(t, rem);
	if (i == CTL_TABLE_NIL)
		return NULL;
	o = ctl_table_at(t, i);
	gen = o->gen;
	memset(o, 0, t->obj_size);
	o->index = i;
	o->gen = gen;
	o->kind = (uint16_t)kind;
	o->owner = owner->group;
	o->notify = owner;
	o->user_handle = user_handle;
	t->nused++;
	owner->group->nobjs++;
	owner->group->nkind[kind]++;
	return o;
}

void ctl_table_free(struct ctl_table *t, void *obj)
{
	struct ctl_obj *o = obj;

	o->owner->nobjs--;
	o->owner->nkind[o->kind]--;
	o->owner = NULL;
	o->notify = NULL;
	o->refs = 0;
	o->gen = (uint16_t)((o->gen + 1) & CTL_HANDLE_GEN_MASK);
	if (o->gen == 0)
		o->gen = 1;
	t->nused--;
	ctl_table_push(t, o->index);
}

uint32_t ctl_obj_handle(const struct ctl_obj *o)
{
	return ((uint32_t)o->gen << CTL_HANDLE_INDEX_BITS) | (o->index + 1);
}

void *ctl_lookup(struct ctl_conn *conn, enum ctl_kind kind, uint32_t handle)
{
	struct ctl_table *t = &conn->ctl->tab[kind];
	uint32_t idx = handle & CTL_HANDLE_INDEX_MASK;
	struct ctl_obj *o;

	if (idx == 0 || idx > t->cap)
		return NULL;
	o = ctl_table_at(t, idx - 1);
	/* Another group's object looks exactly like a free slot; so does a busy one. */
	if (o->owner != conn->group || o->gen != (handle >> CTL_HANDLE_INDEX_BITS) || o->busy)
		return NULL;
	return o;
}
