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
 * Indirect regions (the fallback for memory the daemon cannot map): the
 * bytes live in another process, the region's owner, at entry.host of
 * *its* address space. mr_check() then returns MR_INDIRECT instead of
 * MR_OK, so a caller that only knows MR_OK fails closed and never touches
 * a foreign address; callers that support the fallback move the bytes with
 * mr_indirect_read() / mr_indirect_write() / mr_indirect_atomic()
 * (pread/pwrite of the owner's /proc/PID/mem, opened at registration: a
 * system call per copy, and the daemon needs CAP_SYS_PTRACE). A failed
 * copy (owner gone or exec'd, pages unmapped) is MR_ERR_COPY. Like a
 * debugger's, a write reaches a private page the owner made read-only
 * after registering (copy-on-write: the owner's own memory only).
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
	/** IBV_ACCESS_FLUSH_GLOBAL / _PERSISTENT of rdma-core 45 (= the
	 *  kernel's IB_ACCESS_FLUSH_*; rdma-core 44 does not name them): the
	 *  target of an RDMA FLUSH of that placement type (IBTA 1.5) */
	MR_ACCESS_FLUSH_GLOBAL = 1u << 8,
	MR_ACCESS_FLUSH_PERSISTENT = 1u << 9,
	/**
	 * Not a verbs flag: the region may be invalidated by a remote SEND with
	 * Invalidate (mr_invalidate_remote()). Linux rxe allows that only for
	 * fast-registration MRs (IB_MR_TYPE_MEM_REG) and type 2 memory
	 * windows, never for a region of ibv_reg_mr(), so the daemon never sets
	 * it (app_iface passes only the six bits above).
	 */
	MR_ACCESS_REMOTE_INVALIDATE = 1u << 31,
};

/** Result of a key check. */
enum mr_status {
	MR_OK = 0,
	MR_ERR_KEY,     /**< no such key, deregistered or invalidated */
	MR_ERR_PD,      /**< region belongs to another protection domain */
	MR_ERR_ACCESS,  /**< access flags do not allow the operation */
	MR_ERR_RANGE,   /**< [iova, iova + len) not inside the region */
	/**
	 * Checks passed, but the region lives in its owner process: the
	 * address returned is the owner's; use the mr_indirect_*() copies.
	 */
	MR_INDIRECT,
	MR_ERR_COPY,    /**< copy to/from the owner failed: gone, unmapped or read-only */
};

/** One registered region. */
struct mr_entry {
	uint64_t host;     /**< address of the first byte in this process (in the owner's if indirect) */
	uint64_t iova;     /**< address of the first byte as the application sees it */
	uint64_t length;
	uint32_t key;      /**< current lkey == rkey of the slot */
	uint32_t pd;       /**< protection domain handle */
	uint32_t access;   /**< enum mr_access set */
	int32_t owner_pid; /**< 0: host is in this process; else the owner process (indirect) */
	uint8_t valid;     /**< registered and not invalidated */
	uint8_t in_use;    /**< slot allocated */
	uint16_t reserved;
	uint32_t next_free;  /**< free list (doubly linked, so any slot can leave it) */
	uint32_t prev_free;
	int32_t owner_memfd; /**< the caller's open /proc/owner_pid/mem: bound to the registering image */
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

/**
 * Register an indirect region (see the file comment) under a key chosen by
 * the caller, as mr_reg_key(): [@p addr, @p addr + @p length) of process
 * @p pid. @p mem_fd (an open /proc/PID/mem of @p pid, read/write) stays
 * the caller's and must stay open until mr_dereg(). It is bound to the
 * address space @p pid had when it was opened: after an exec or exit of
 * the process every copy fails (MR_ERR_COPY), so an exec'd (setuid)
 * program is never reached through the registration.
 * @return as mr_reg_key(); -EINVAL also for pid <= 0 or mem_fd < 0
 */
int mr_reg_key_indirect(struct mr_table *t, uint32_t key, uint32_t pd, uint64_t addr,
			uint64_t iova, uint64_t length, uint32_t access, int32_t pid, int mem_fd);

/** Deregister. @return 0 or -ENOENT */
int mr_dereg(struct mr_table *t, uint32_t key);

/**
 * Invalidate @p key (SEND_WITH_INV, LOCAL_INV): later checks fail with
 * MR_ERR_KEY until the slot is registered again.
 * @return 0, -ENOENT (unknown or already invalid key), -EACCES (other PD)
 */
int mr_invalidate(struct mr_table *t, uint32_t key, uint32_t pd);

/**
 * Invalidate @p key for a remote SEND with Invalidate (IBA 9.4.1 step 4
 * of the responder: the R_Key of the IETH): as mr_invalidate(), and only a
 * region registered with MR_ACCESS_REMOTE_INVALIDATE (as rxe's
 * rxe_invalidate_mr() accepts only fast-registration MRs).
 * @return 0, -ENOENT, -EACCES (other PD, or not remotely invalidatable)
 */
int mr_invalidate_remote(struct mr_table *t, uint32_t key, uint32_t pd);

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
 * On success stores the host address of @p iova into @p host and returns
 * MR_OK, or, for an indirect region, the owner's address and MR_INDIRECT
 * (one predictable branch on the direct path).
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
	return __builtin_expect(e->owner_pid == 0, 1) ? MR_OK : MR_INDIRECT;
}

/**
 * @name Indirect copies
 * Precondition: mr_check() of @p key returned MR_INDIRECT and @p addr for
 * the whole range, in the same engine call (no deregistration in between).
 * Each is a system call or three; partial copies count as failures (the
 * bytes already moved stay moved, as a DMA stopped by a fault would).
 * @return MR_OK, MR_ERR_KEY (not an indirect key) or MR_ERR_COPY
 * @{
 */
/** Copy @p len bytes at the owner's @p addr into @p dst. */
enum mr_status mr_indirect_read(const struct mr_table *t, uint32_t key, const uint8_t *addr,
				void *dst, uint64_t len);
/** Copy @p len bytes from @p src to the owner's @p addr. */
enum mr_status mr_indirect_write(const struct mr_table *t, uint32_t key, uint8_t *addr,
				 const void *src, uint64_t len);
/**
 * 64-bit compare-and-swap (@p cas) or fetch-and-add on the owner's @p addr;
 * the value before goes to @p orig. Read, modify, write under one process-
 * wide lock: atomic against every other mr_indirect_atomic(), NOT against
 * the owner's own CPU accesses (nor a direct mapping of the same pages).
 */
enum mr_status mr_indirect_atomic(const struct mr_table *t, uint32_t key, uint8_t *addr, bool cas,
				  uint64_t compare, uint64_t swap_add, uint64_t *orig);
/** @} */

/**
 * Registration-time probe: can byte @p addr of process @p pid be read
 * through @p mem_fd (its /proc/PID/mem)?
 * @return 0, or -errno (-EIO/-EFAULT: not mapped, -ESRCH: the image is gone)
 */
int mr_indirect_probe(int32_t pid, int mem_fd, uint64_t addr);

/** @return the name of @p s ("OK", "KEY", ...). */
const char *mr_status_name(enum mr_status s);

#ifdef __cplusplus
}
#endif
#endif /* QP_MR_H */
