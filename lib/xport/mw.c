/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory window table (mw.h): one table for every lcore, a spin lock per window. */
#include <errno.h>
#include <stdlib.h>

#include "mw.h"

/* Window access flags a bind may give (IBA section 10.6.7: remote read,
 * write, atomic; local write comes with them in verbs; zero-based). */
#define MW_ACCESS_OK (MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ | \
		      MR_ACCESS_REMOTE_ATOMIC | MR_ACCESS_ZERO_BASED)
#define MW_ACCESS_WRITABLE (MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_ATOMIC)

struct mw_table *
mw_table_create(uint32_t capacity, uint32_t mr_capacity)
{
	struct mw_table *t;

	if (capacity == 0 || capacity > MW_MAX_CAPACITY || mr_capacity == 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->entries = calloc(capacity, sizeof(*t->entries));
	t->mr_bound = calloc(mr_capacity, sizeof(*t->mr_bound));
	if (t->entries == NULL || t->mr_bound == NULL) {
		mw_table_destroy(t);
		return NULL;
	}
	t->capacity = capacity;
	t->mr_capacity = mr_capacity;
	return t;
}

void
mw_table_destroy(struct mw_table *t)
{
	if (t == NULL)
		return;
	free(t->entries);
	free(t->mr_bound);
	free(t);
}

/* The slot window key @p key names, or NULL (no window key, beyond the table). */
static struct mw_entry *
slot_of(const struct mw_table *t, uint32_t key)
{
	uint32_t idx = (key & ~MW_KEY_FLAG) >> 8;

	if (t == NULL || !mw_key_is_mw(key) || idx == 0 || idx > t->capacity)
		return NULL;
	return &t->entries[idx - 1];
}

/* Taken for a copy of a few words; the holder never calls out. */
static void
lock(struct mw_entry *e)
{
	while (__atomic_exchange_n(&e->lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&e->lock, __ATOMIC_RELAXED))
			;
}

static void
unlock(struct mw_entry *e)
{
	__atomic_store_n(&e->lock, 0, __ATOMIC_RELEASE);
}

/* Count one more (@p d 1) or one fewer (-1) window on MR @p mr_key's slot. */
static void
count_bound(struct mw_table *t, uint32_t mr_key, int d)
{
	uint32_t idx = mr_key >> 8;

	if (idx < t->mr_capacity)
		__atomic_add_fetch(&t->mr_bound[idx], (uint32_t)d, __ATOMIC_RELAXED);
}

/* Under the lock: the window reaches nothing any more. */
static void
unbind_locked(struct mw_table *t, struct mw_entry *e)
{
	if (e->bound)
		count_bound(t, e->mr_key, -1);
	e->bound = 0;
	e->mr_key = 0;
	e->access = 0;
	e->addr = 0;
	e->length = 0;
}

int
mw_open(struct mw_table *t, uint32_t key, uint32_t pd, enum mw_type type)
{
	struct mw_entry *e = slot_of(t, key);
	int rc = 0;

	if (e == NULL || (type != MW_TYPE_1 && type != MW_TYPE_2))
		return -EINVAL;
	lock(e);
	if (e->key != 0) {
		rc = -EEXIST;
	} else {
		unbind_locked(t, e);
		e->key = key;
		e->pd = pd;
		e->qpn = 0;
		e->type = (uint8_t)type;
	}
	unlock(e);
	return rc;
}

void
mw_close(struct mw_table *t, uint32_t key)
{
	struct mw_entry *e = slot_of(t, key);

	if (e == NULL)
		return;
	lock(e);
	if (e->key != 0) { /* whatever tag the binds gave it */
		unbind_locked(t, e);
		e->key = 0;
	}
	unlock(e);
}

/* The MR rules of a bind (C10-73, C10-74, C10-75; rxe's rxe_check_bind_mw()). */
static int
check_bind_mr(const struct mr_table *mrs, const struct mw_bind_req *b)
{
	const struct mr_entry *mr = mr_lookup(mrs, b->mr_key);

	if (mr == NULL || !mr->valid)
		return -EINVAL;
	if (mr->pd != b->pd)
		return -EACCES;
	if (!(mr->access & MR_ACCESS_MW_BIND) || (mr->access & MR_ACCESS_ZERO_BASED))
		return -EACCES;
	if ((b->access & MW_ACCESS_WRITABLE) && !(mr->access & MR_ACCESS_LOCAL_WRITE))
		return -EACCES;
	if (mr->owner_pid != 0)
		return -EINVAL; /* fallback copies are keyed by the MR: not through windows */
	if (b->addr + b->length < b->addr || b->addr < mr->iova ||
	    b->addr - mr->iova > mr->length || b->length > mr->length - (b->addr - mr->iova))
		return -EINVAL;
	return 0;
}

/* The window rules of a bind, under its lock (o10-36.2.2, o10-37.2.30, C10-72, o10-37.2.40). */
static int
check_bind_mw(const struct mw_entry *e, const struct mw_bind_req *b)
{
	if (e->key == 0 || e->key != b->mw_key)
		return -EINVAL;
	if (e->pd != b->pd)
		return -EACCES;
	if (b->access & ~(uint32_t)MW_ACCESS_OK)
		return -EINVAL;
	if (e->type == MW_TYPE_1)
		return (b->access & MR_ACCESS_ZERO_BASED) ? -EINVAL : 0;
	return e->bound || b->length == 0 ? -EINVAL : 0;
}

int
mw_bind(struct mw_table *t, const struct mr_table *mrs, const struct mw_bind_req *b)
{
	struct mw_entry *e = slot_of(t, b->mw_key);
	int rc;

	if (e == NULL)
		return -EINVAL;
	rc = b->length ? check_bind_mr(mrs, b) : 0;
	lock(e);
	if (rc == 0)
		rc = check_bind_mw(e, b);
	if (rc == 0) {
		unbind_locked(t, e);
		e->key = (e->key & ~0xffu) | (b->new_key & 0xffu);
		e->qpn = e->type == MW_TYPE_2 ? b->qpn : 0;
		if (b->length) {
			e->bound = 1;
			e->mr_key = b->mr_key;
			e->access = b->access;
			e->addr = b->addr;
			e->length = b->length;
			count_bound(t, b->mr_key, 1);
		}
	}
	unlock(e);
	return rc;
}

int
mw_invalidate(struct mw_table *t, uint32_t key, uint32_t pd, uint32_t qpn)
{
	struct mw_entry *e = slot_of(t, key);
	int rc = 0;

	if (e == NULL)
		return -ENOENT;
	lock(e);
	if (e->key != key || !e->bound)
		rc = -ENOENT;
	else if (e->type == MW_TYPE_1)
		rc = -EINVAL; /* o10-37.2.26: a type 1 window is unbound by a bind */
	else if (e->pd != pd || e->qpn != qpn)
		rc = -EACCES;
	else
		unbind_locked(t, e);
	unlock(e);
	return rc;
}

enum mr_status
mw_check(struct mw_table *t, const struct mr_table *mrs, uint32_t key, uint32_t pd, uint32_t qpn,
	 uint64_t iova, uint64_t len, uint32_t access, uint8_t **host)
{
	struct mw_entry *e = slot_of(t, key);
	struct mw_entry w;
	enum mr_status st;

	if (e == NULL)
		return MR_ERR_KEY;
	lock(e);
	w = *e;
	unlock(e);
	if (w.key != key || !w.bound)
		return MR_ERR_KEY;
	if (w.pd != pd || (w.type == MW_TYPE_2 && w.qpn != qpn))
		return MR_ERR_PD;
	if ((w.access & access) != access)
		return MR_ERR_ACCESS;
	/* a zero-based window's addresses are offsets into it */
	uint64_t base = (w.access & MR_ACCESS_ZERO_BASED) ? 0 : w.addr;
	uint64_t off = iova - base;
	if (iova < base || len > w.length || off > w.length - len)
		return MR_ERR_RANGE;
	st = mr_check(mrs, w.mr_key, pd, w.addr + off, len, 0, host);
	return st == MR_INDIRECT ? MR_ERR_ACCESS : st;
}

uint32_t
mw_mr_bound(const struct mw_table *t, uint32_t mr_key)
{
	uint32_t idx = mr_key >> 8;

	if (t == NULL || idx >= t->mr_capacity)
		return 0;
	return __atomic_load_n(&t->mr_bound[idx], __ATOMIC_RELAXED);
}

void
mw_qp_gone(struct mw_table *t, uint32_t qpn)
{
	for (uint32_t i = 0; t != NULL && i < t->capacity; i++) {
		struct mw_entry *e = &t->entries[i];

		lock(e);
		if (e->key != 0 && e->type == MW_TYPE_2 && e->bound && e->qpn == qpn)
			unbind_locked(t, e);
		unlock(e);
	}
}
