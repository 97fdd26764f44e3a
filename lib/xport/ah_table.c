/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/xport: the daemon's UD address handles (ah_table.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ah_table.h"

#define AH_TABLE_MAX (1u << 24)
#define AH_READ_TRIES 8

struct ah_table *
ah_table_create(uint32_t capacity)
{
	struct ah_table *t;

	if (capacity == 0 || capacity > AH_TABLE_MAX)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->entries = calloc(capacity, sizeof(*t->entries));
	if (t->entries == NULL) {
		free(t);
		return NULL;
	}
	t->capacity = capacity;
	return t;
}

void
ah_table_destroy(struct ah_table *t)
{
	if (t == NULL)
		return;
	free(t->entries);
	free(t);
}

/*
 * The writer's half of the sequence lock: seq odd (relaxed store, then a
 * release fence so no field store moves above it), the fields, then seq
 * even with a release store (the fields are visible before it).
 */
static void
ah_write(struct ah_entry *e, uint32_t pd, uint32_t valid, const struct wr_av *av)
{
	uint32_t s = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&e->seq, s + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&e->pd, pd, __ATOMIC_RELAXED);
	__atomic_store_n(&e->valid, valid, __ATOMIC_RELAXED);
	if (av != NULL)
		memcpy(&e->av, av, sizeof(e->av));
	__atomic_store_n(&e->seq, s + 2, __ATOMIC_RELEASE);
}

int
ah_table_set(struct ah_table *t, uint32_t handle, uint32_t pd, const struct wr_av *av)
{
	struct wr_av copy;

	if (handle >= t->capacity)
		return -EINVAL;
	copy = *av;
	copy.ah_handle = handle;
	ah_write(&t->entries[handle], pd, 1, &copy);
	return 0;
}

int
ah_table_clear(struct ah_table *t, uint32_t handle)
{
	if (handle >= t->capacity)
		return -EINVAL;
	ah_write(&t->entries[handle], 0, 0, NULL);
	return 0;
}

bool
ah_table_get(const struct ah_table *t, uint32_t handle, uint32_t pd, struct wr_av *out)
{
	const struct ah_entry *e;

	if (t == NULL || handle >= t->capacity)
		return false;
	e = &t->entries[handle];
	for (int i = 0; i < AH_READ_TRIES; i++) {
		uint32_t s = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);

		if (s & 1)
			continue;
		uint32_t p = __atomic_load_n(&e->pd, __ATOMIC_RELAXED);
		uint32_t v = __atomic_load_n(&e->valid, __ATOMIC_RELAXED);

		memcpy(out, &e->av, sizeof(*out));
		/* the copy above happens before the re-read of seq */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) != s)
			continue;
		return v == 1 && p == pd;
	}
	return false;
}
