/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory region table (mr.h): preallocated slots, generation-tagged keys. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

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
	/* free list 1 <-> 2 <-> ... <-> capacity-1, 0 terminates both ways */
	for (uint32_t i = 1; i < capacity; i++) {
		t->entries[i].next_free = (i + 1 < capacity) ? i + 1 : 0;
		t->entries[i].prev_free = i - 1;
	}
	t->free_head = 1;
	return t;
}

/* Take slot @p idx off the free list. */
static void
free_unlink(struct mr_table *t, uint32_t idx)
{
	struct mr_entry *e = &t->entries[idx];

	if (e->prev_free)
		t->entries[e->prev_free].next_free = e->next_free;
	else
		t->free_head = e->next_free;
	if (e->next_free)
		t->entries[e->next_free].prev_free = e->prev_free;
}

/* Put slot @p idx at the head of the free list. */
static void
free_push(struct mr_table *t, uint32_t idx)
{
	struct mr_entry *e = &t->entries[idx];

	e->prev_free = 0;
	e->next_free = t->free_head;
	if (t->free_head)
		t->entries[t->free_head].prev_free = idx;
	t->free_head = idx;
}

static bool
reg_args_ok(uint64_t host, uint64_t iova, uint64_t length, uint32_t access)
{
	/* ibv_reg_mr: remote write/atomic require local write */
	if ((access & (MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & MR_ACCESS_LOCAL_WRITE))
		return false;
	return iova + length >= iova && host + length >= host;
}

/* Fill slot @p idx (already off the free list) with key @p key. */
static void
slot_fill(struct mr_table *t, uint32_t idx, uint32_t key, uint32_t pd, uint64_t host,
	  uint64_t iova, uint64_t length, uint32_t access)
{
	t->entries[idx] = (struct mr_entry){
		.host = host,
		.iova = iova,
		.length = length,
		.key = key,
		.pd = pd,
		.access = access,
		.valid = 1,
		.in_use = 1,
		.owner_memfd = -1,
	};
	t->count++;
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
	if (!reg_args_ok(host, iova, length, access))
		return -EINVAL;
	uint32_t idx = t->free_head;
	if (idx == 0)
		return -ENOSPC;
	free_unlink(t, idx);
	uint8_t gen = (uint8_t)(t->entries[idx].key + 1);
	slot_fill(t, idx, (idx << 8) | gen, pd, host, iova, length, access);
	*key = t->entries[idx].key;
	return 0;
}

int
mr_reg_key(struct mr_table *t, uint32_t key, uint32_t pd, uint64_t host, uint64_t iova,
	   uint64_t length, uint32_t access)
{
	uint32_t idx = key >> 8;

	if (idx == 0 || idx >= t->capacity || !reg_args_ok(host, iova, length, access))
		return -EINVAL;
	if (t->entries[idx].in_use)
		return -EEXIST;
	free_unlink(t, idx);
	slot_fill(t, idx, key, pd, host, iova, length, access);
	return 0;
}

int
mr_reg_key_indirect(struct mr_table *t, uint32_t key, uint32_t pd, uint64_t addr, uint64_t iova,
		    uint64_t length, uint32_t access, int32_t pid, int mem_fd)
{
	if (pid <= 0 || mem_fd < 0)
		return -EINVAL;
	int rc = mr_reg_key(t, key, pd, addr, iova, length, access);
	if (rc == 0) {
		t->entries[key >> 8].owner_pid = pid;
		t->entries[key >> 8].owner_memfd = mem_fd;
	}
	return rc;
}

int
mr_dereg(struct mr_table *t, uint32_t key)
{
	struct mr_entry *e = (struct mr_entry *)mr_lookup(t, key);
	if (!e)
		return -ENOENT;
	e->valid = 0;
	e->in_use = 0;
	free_push(t, key >> 8);
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

int
mr_invalidate_remote(struct mr_table *t, uint32_t key, uint32_t pd)
{
	const struct mr_entry *e = mr_lookup(t, key);

	if (!e || !e->valid)
		return -ENOENT;
	if (e->pd != pd || !(e->access & MR_ACCESS_REMOTE_INVALIDATE))
		return -EACCES;
	return mr_invalidate(t, key, pd);
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
		[MR_INDIRECT] = "INDIRECT",
		[MR_ERR_COPY] = "COPY",
	};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* ---- indirect regions: copies through the owner's /proc/PID/mem ---- */

/* The owner of indirect key @p key, or NULL. */
static const struct mr_entry *
indirect_entry(const struct mr_table *t, uint32_t key)
{
	const struct mr_entry *e = mr_lookup(t, key);

	return e && e->owner_pid != 0 ? e : NULL;
}

/*
 * Move @p len bytes between @p local and the owner's @p remote, through
 * owner_memfd: an open /proc/PID/mem, which is bound to the address space
 * (mm) the process had when it was opened. After an exec (a setuid program
 * included) or an exit that mm is gone and every access moves nothing, so
 * a registration never reaches another program's memory, whatever the
 * PID names now (process_vm_readv/writev by PID did, issue 16).
 * @return 0, or -errno: -ESRCH (the registering image is gone: 0 bytes
 * moved), pread/pwrite's own (-EIO, -EFAULT: not mapped)
 */
static int
owner_move(const struct mr_entry *e, void *local, uint64_t remote, uint64_t len, bool write)
{
	uint64_t done = 0;

	if (remote > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - remote)
		return -EFAULT; /* beyond any user address: off_t would wrap */
	while (done < len) { /* each round moves >= 1 byte or stops */
		uint8_t *l = (uint8_t *)local + done;
		off_t off = (off_t)(remote + done);
		ssize_t n = write ? pwrite(e->owner_memfd, l, len - done, off)
				  : pread(e->owner_memfd, l, len - done, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ESRCH;
		done += (uint64_t)n;
	}
	return 0;
}

/* owner_move() as a key check's status: a partial move is a failed one. */
static enum mr_status
owner_copy(const struct mr_entry *e, void *local, uint64_t remote, uint64_t len, bool write)
{
	return owner_move(e, local, remote, len, write) == 0 ? MR_OK : MR_ERR_COPY;
}

enum mr_status
mr_indirect_read(const struct mr_table *t, uint32_t key, const uint8_t *addr, void *dst,
		 uint64_t len)
{
	const struct mr_entry *e = indirect_entry(t, key);

	return e ? owner_copy(e, dst, (uintptr_t)addr, len, false) : MR_ERR_KEY;
}

enum mr_status
mr_indirect_write(const struct mr_table *t, uint32_t key, uint8_t *addr, const void *src,
		  uint64_t len)
{
	const struct mr_entry *e = indirect_entry(t, key);

	return e ? owner_copy(e, (void *)(uintptr_t)src, (uintptr_t)addr, len, true) : MR_ERR_KEY;
}

/* Serialises indirect read-modify-writes of every lcore (rare, slow path). */
static pthread_mutex_t indirect_atomic_lock = PTHREAD_MUTEX_INITIALIZER;

enum mr_status
mr_indirect_atomic(const struct mr_table *t, uint32_t key, uint8_t *addr, bool cas,
		   uint64_t compare, uint64_t swap_add, uint64_t *orig)
{
	const struct mr_entry *e = indirect_entry(t, key);
	enum mr_status st;
	uint64_t v;

	if (!e)
		return MR_ERR_KEY;
	pthread_mutex_lock(&indirect_atomic_lock);
	st = owner_copy(e, &v, (uintptr_t)addr, sizeof(v), false);
	if (st == MR_OK) {
		uint64_t next = cas ? (v == compare ? swap_add : v) : v + swap_add;

		if (next != v)
			st = owner_copy(e, &next, (uintptr_t)addr, sizeof(next), true);
		*orig = v;
	}
	pthread_mutex_unlock(&indirect_atomic_lock);
	return st;
}

int
mr_indirect_probe(int32_t pid, int mem_fd, uint64_t addr)
{
	struct mr_entry e = { .owner_pid = pid, .owner_memfd = mem_fd };
	uint8_t byte;

	if (pid <= 0 || mem_fd < 0)
		return -EINVAL;
	return owner_move(&e, &byte, addr, 1, false);
}
