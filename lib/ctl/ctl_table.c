/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: fixed object tables. Allocated once, never grown; next-fit
 * allocation so a freed slot (and with it a QPN or key) is reused as late as
 * possible; a per-slot generation makes stale handles fail.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_internal.h"

int ctl_table_init(struct ctl_table *t, uint32_t cap, size_t obj_size)
{
	memset(t, 0, sizeof(*t));
	if (cap == 0 || cap > CTL_TABLE_MAX)
		return -EINVAL;
	t->mem = calloc(cap, obj_size);
	if (t->mem == NULL)
		return -ENOMEM;
	t->obj_size = obj_size;
	t->cap = cap;
	for (uint32_t i = 0; i < cap; i++) {
		struct ctl_obj *o = ctl_table_at(t, i);

		o->index = i;
		o->gen = 1;
	}
	return 0;
}

void ctl_table_fini(struct ctl_table *t)
{
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

void *ctl_table_alloc_class(struct ctl_table *t, struct ctl_conn *owner, enum ctl_kind kind,
			    uint64_t user_handle, uint32_t base, uint32_t modulus, uint32_t rem)
{
	if (t->nused == t->cap || modulus == 0)
		return NULL;
	for (uint32_t n = 0; n < t->cap; n++) {
		uint32_t i = (t->cursor + n) % t->cap;
		struct ctl_obj *o = ctl_table_at(t, i);

		if (o->owner != NULL || (uint32_t)((uint64_t)i + base) % modulus != rem)
			continue;
		uint16_t gen = o->gen;

		memset(o, 0, t->obj_size);
		o->index = i;
		o->gen = gen;
		o->kind = (uint16_t)kind;
		o->owner = owner;
		o->user_handle = user_handle;
		t->cursor = (i + 1) % t->cap;
		t->nused++;
		owner->nobjs++;
		return o;
	}
	return NULL;
}

void ctl_table_free(struct ctl_table *t, void *obj)
{
	struct ctl_obj *o = obj;

	o->owner->nobjs--;
	o->owner = NULL;
	o->refs = 0;
	o->gen = (uint16_t)((o->gen + 1) & CTL_HANDLE_GEN_MASK);
	if (o->gen == 0)
		o->gen = 1;
	t->nused--;
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
	/* Another connection's object looks exactly like a free slot. */
	if (o->owner != conn || o->gen != (handle >> CTL_HANDLE_INDEX_BITS))
		return NULL;
	return o;
}
