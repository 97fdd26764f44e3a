/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Memory region table: key -> {host address, IOVA, length, access, PD}.
 *
 * Preallocated at start-up (never grows). A key is (slot index << 8) | an
 * 8-bit generation that changes on every registration of the slot, so a
 * stale key of a deregistered MR never matches its successor. lkey == rkey.
 * Slot 0 is never used, so the key 0 of a zeroed WQE is always invalid.
 *
 * Every data access of the engine goes through mr_check(): key valid, same
 * protection domain, access flags allow the operation, and the whole range
 * inside the region; only then is the host address returned. Callers keep
 * keys (not pointers) across time and check again on every use.
 *
 * Ownership: one writer (the lcore owning the QPs of these MRs, or the
 * control path while no lcore uses the table); no locks.
 */
#ifndef QP_MR_H
#define QP_MR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Access flags (= enum ibv_access_flags). */
enum mr_access {
	MR_ACCESS_LOCAL_WRITE = 1u << 0,
	MR_ACCESS_REMOTE_WRITE = 1u << 1,
	MR_ACCESS_REMOTE_READ = 1u << 2,
	MR_ACCESS_REMOTE_ATOMIC = 1u << 3,
	MR_ACCESS_MW_BIND = 1u << 4,
	MR_ACCESS_ZERO_BASED = 1u << 5,
};

/** Result of a key check. */
enum mr_status {
	MR_OK = 0,
	MR_ERR_KEY,     /**< no such key, deregistered or invalidated */
	MR_ERR_PD,      /**< region belongs to another protection domain */
	MR_ERR_ACCESS,  /**< access flags do not allow the operation */
	MR_ERR_RANGE,   /**< [iova, iova + len) not inside the region */
};

/** One registered region. */
struct mr_entry {
	uint64_t host;     /**< address of the first byte in this process */
	uint64_t iova;     /**< address of the first byte as the application sees it */
	uint64_t length;
	uint32_t key;      /**< current lkey == rkey of the slot */
	uint32_t pd;       /**< protection domain handle */
	uint32_t access;   /**< enum mr_access set */
	uint8_t valid;     /**< registered and not invalidated */
	uint8_t in_use;    /**< slot allocated */
	uint16_t reserved;
	uint32_t next_free;  /**< free list (doubly linked, so any slot can leave it) */
	uint32_t prev_free;
};

/** The table. */
struct mr_table {
	struct mr_entry *entries; /**< capacity entries, [0] unused */
	uint32_t capacity;
	uint32_t free_head;       /**< first free slot, 0 = none */
	uint32_t count;           /**< registered regions */
};

/**
 * Allocate a table for up to @p capacity - 1 regions (slot 0 is reserved).
 * @return the table, or NULL if capacity is 0 or above 2^24, or on ENOMEM
 */
struct mr_table *mr_table_create(uint32_t capacity);

/** Free a table made by mr_table_create(). NULL is ignored. */
void mr_table_destroy(struct mr_table *t);

/**
 * Register a region.
 * @param host    address of the memory in this process
 * @param iova    address the application uses (0 for zero-based)
 * @param access  enum mr_access set; REMOTE_WRITE/ATOMIC need LOCAL_WRITE
 * @param[out] key  the new lkey == rkey
 * @return 0, -EINVAL (bad access combination or length wraps), -ENOSPC (table full)
 */
int mr_reg(struct mr_table *t, uint32_t pd, uint64_t host, uint64_t iova,
	   uint64_t length, uint32_t access, uint32_t *key);

/**
 * Register a region under a key chosen by the caller (the daemon's control
 * plane hands keys out; each lcore's table mirrors them): slot key >> 8,
 * generation key & 0xff. Same checks as mr_reg().
 * @return 0, -EINVAL (slot 0 or beyond the capacity, bad access, wrap),
 *   -EEXIST (the slot holds a registration)
 */
int mr_reg_key(struct mr_table *t, uint32_t key, uint32_t pd, uint64_t host, uint64_t iova,
	       uint64_t length, uint32_t access);

/** Deregister. @return 0 or -ENOENT */
int mr_dereg(struct mr_table *t, uint32_t key);

/**
 * Invalidate @p key (SEND_WITH_INV, LOCAL_INV): later checks fail with
 * MR_ERR_KEY until the slot is registered again.
 * @return 0, -ENOENT (unknown or already invalid key), -EACCES (other PD)
 */
int mr_invalidate(struct mr_table *t, uint32_t key, uint32_t pd);

/** @return the entry of @p key if the key is current (valid or not), else NULL. */
static inline const struct mr_entry *
mr_lookup(const struct mr_table *t, uint32_t key)
{
	uint32_t idx = key >> 8;
	if (idx == 0 || idx >= t->capacity)
		return 0;
	const struct mr_entry *e = &t->entries[idx];
	return (e->in_use && e->key == key) ? e : 0;
}

/**
 * Check an access to [@p iova, @p iova + @p len) through @p key from
 * protection domain @p pd needing all of @p access (0 for local reads).
 * On success stores the host address of @p iova into @p host.
 */
static inline enum mr_status
mr_check(const struct mr_table *t, uint32_t key, uint32_t pd, uint64_t iova,
	 uint64_t len, uint32_t access, uint8_t **host)
{
	const struct mr_entry *e = mr_lookup(t, key);
	if (!e || !e->valid)
		return MR_ERR_KEY;
	if (e->pd != pd)
		return MR_ERR_PD;
	if ((e->access & access) != access)
		return MR_ERR_ACCESS;
	uint64_t off = iova - e->iova;
	if (iova < e->iova || len > e->length || off > e->length - len)
		return MR_ERR_RANGE;
	*host = (uint8_t *)(uintptr_t)(e->host + off);
	return MR_OK;
}

/** @return the name of @p s ("OK", "KEY", ...). */
const char *mr_status_name(enum mr_status s);

#ifdef __cplusplus
}
#endif
#endif /* QP_MR_H */
