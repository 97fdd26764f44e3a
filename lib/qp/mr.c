/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory region table (mr.h): preallocated slots, generation-tagged keys. */
#include <errno.h>
#include <stdlib.h>

#include "mr.h"

#define MR_MAX_CAPACITY (1u << 24)

struct mr_table *
mr_table_create(uint32_t capacity)
{
	if (capacity < 2 || capacity > MR_MAX_CAPACITY)
		return NULL;
	struct mr_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->entries = calloc(capacity, sizeof(*t->entries));
	if (!t->entries) {
		free(t);
		return NULL;
	}
	t->capacity = capacity;
	/* free list 1 -> 2 -> ... -> capacity-1 -> 0 */
	for (uint32_t i = 1; i < capacity; i++)
		t->entries[i].next_free = (i + 1 < capacity) ? i + 1 : 0;
	t->free_head = 1;
	return t;
}

void
mr_table_destroy(struct mr_table *t)
{
	if (!t)
		return;
	free(t->entries);
	free(t);
}

int
mr_reg(struct mr_table *t, uint32_t pd, uint64_t host, uint64_t iova,
       uint64_t length, uint32_t access, uint32_t *key)
{
	/* ibv_reg_mr: remote write/atomic require local write */
	if ((access & (MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & MR_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (iova + length < iova || host + length < host)
		return -EINVAL;
	uint32_t idx = t->free_head;
	if (idx == 0)
		return -ENOSPC;
	struct mr_entry *e = &t->entries[idx];
	t->free_head = e->next_free;
	uint8_t gen = (uint8_t)(e->key + 1);
	*e = (struct mr_entry){
		.host = host,
		.iova = iova,
		.length = length,
		.key = (idx << 8) | gen,
		.pd = pd,
		.access = access,
		.valid = 1,
		.in_use = 1,
	};
	t->count++;
	*key = e->key;
	return 0;
}

int
mr_dereg(struct mr_table *t, uint32_t key)
{
	struct mr_entry *e = (struct mr_entry *)mr_lookup(t, key);
	if (!e)
		return -ENOENT;
	e->valid = 0;
	e->in_use = 0;
	e->next_free = t->free_head;
	t->free_head = key >> 8;
	t->count--;
	return 0;
}

int
mr_invalidate(struct mr_table *t, uint32_t key, uint32_t pd)
{
	struct mr_entry *e = (struct mr_entry *)mr_lookup(t, key);
	if (!e || !e->valid)
		return -ENOENT;
	if (e->pd != pd)
		return -EACCES;
	e->valid = 0;
	return 0;
}

const char *
mr_status_name(enum mr_status s)
{
	static const char *const names[] = {
		[MR_OK] = "OK",
		[MR_ERR_KEY] = "KEY",
		[MR_ERR_PD] = "PD",
		[MR_ERR_ACCESS] = "ACCESS",
		[MR_ERR_RANGE] = "RANGE",
	};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}
