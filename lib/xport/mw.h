/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Memory window table: R_Key -> {window of an MR, access, PD, QP}.
 *
 * A memory window (IBA section 10.6.7) is a remote key for a part of a
 * registered region. Type 1 windows belong to a PD and are bound with
 * ibv_bind_mw(); type 2 windows are bound with a BIND_MW work request and,
 * being type 2B here, reach memory only through the QP that bound them.
 * Both are bound by a send WQE executed on the lcore owning the QP, and
 * used by the responder of every QP of the PD, on any lcore; so unlike the
 * per-lcore MR tables (mr.h) there is one window table for all lcores and
 * the control thread, each entry under its own spin lock (held for a copy
 * of a few words: a bind, an invalidation, a look-up; never across a call).
 *
 * Keys: MW_KEY_FLAG | (slot + 1) << 8 | an 8-bit tag. The flag keeps them
 * apart from MR keys (whose slot number is below 2^23), so mr_check() never
 * accepts a window key and a window key is never an L_Key. Each bind
 * replaces the tag with the low byte the binder chose (ibv_inc_rkey() for
 * type 1, the work request's rkey for type 2), so a key of an earlier
 * binding no longer matches (IBA section 10.6.7, the window key).
 *
 * What the engine checks, from the rules of IBA section 10.6.7 (the C10-72
 * to C10-75 compliance statements) and o10-36.2 / o10-37.2:
 * - bind: the window is open and in the QP's PD; the MR is current, in that
 *   PD, registered with MW_BIND, not zero-based, reachable directly (no
 *   fallback copies), and allows local write if the window allows remote
 *   write or atomic; the window lies inside the MR; a type 1 window is not
 *   zero-based; a type 2 window must be free (invalidated or never bound)
 *   and have a nonzero length; a zero-length type 1 bind unbinds.
 * - access (mw_check()): the key current and bound, same PD, type 2: the
 *   same QP, the window's access flags, the range inside the window, then
 *   the MR itself (mr_check(): still registered, range).
 * - invalidation (LOCAL_INV, SEND with Invalidate): type 2 only, bound,
 *   same PD and QP.
 *
 * A bound window holds its MR: mw_mr_bound() counts the windows bound to an
 * MR slot, and deregistration is refused meanwhile (EINVAL, as Linux rxe's
 * rxe_dereg_mr()). The count is per slot: it goes back down when the
 * window is unbound, invalidated or closed, whatever became of the MR.
 */
#ifndef QP_MW_H
#define QP_MW_H

#include <stdbool.h>
#include <stdint.h>

#include "mr.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MW_KEY_FLAG 0x80000000u /**< set in every window key, never in an MR key */
#define MW_MAX_CAPACITY (1u << 22) /**< windows a table can hold */

/** Window types (= enum ibv_mw_type). */
enum mw_type {
	MW_TYPE_1 = 1,
	MW_TYPE_2 = 2,
};

/** @return true if @p key names a memory window (not an MR). */
static inline bool
mw_key_is_mw(uint32_t key)
{
	return (key & MW_KEY_FLAG) != 0;
}

/** @return the key of window slot @p index with tag @p tag. */
static inline uint32_t
mw_key_make(uint32_t index, uint8_t tag)
{
	return MW_KEY_FLAG | (index + 1) << 8 | tag;
}

/** One window. Read and written under @c lock only. */
struct mw_entry {
	uint32_t lock;     /**< 0 free, 1 held */
	uint32_t key;      /**< current R_Key; 0: the slot is not open */
	uint32_t pd;       /**< protection domain */
	uint32_t qpn;      /**< type 2: the QP that bound it */
	uint32_t mr_key;   /**< bound: the MR's key */
	uint32_t access;   /**< bound: enum mr_access set */
	uint8_t type;      /**< enum mw_type */
	uint8_t bound;     /**< bound to a nonzero range */
	uint16_t reserved;
	uint64_t addr;     /**< first byte (MR IOVA space) */
	uint64_t length;
};

/** The table, shared by the lcores and the control thread. */
struct mw_table {
	struct mw_entry *entries;  /**< capacity entries */
	uint32_t capacity;
	uint32_t mr_capacity;      /**< entries of mr_bound: MR slots (key >> 8) */
	uint32_t *mr_bound;        /**< windows bound per MR slot (atomic) */
};

/** A bind work request, as the engine read it from the WQE. */
struct mw_bind_req {
	uint32_t mw_key;   /**< the window's current key */
	uint32_t new_key;  /**< its low byte is the window's new tag */
	uint32_t mr_key;   /**< the MR to bind to (ignored for length 0) */
	uint32_t access;   /**< the window's access (enum mr_access set) */
	uint32_t pd;       /**< the binding QP's PD */
	uint32_t qpn;      /**< the binding QP */
	uint64_t addr;
	uint64_t length;
};

/**
 * Allocate a table of @p capacity windows for MR keys of slots below
 * @p mr_capacity. @return the table, or NULL (0 or too large, ENOMEM)
 */
struct mw_table *mw_table_create(uint32_t capacity, uint32_t mr_capacity);

/** Free a table. NULL is ignored. */
void mw_table_destroy(struct mw_table *t);

/**
 * Open window @p key (made by mw_key_make()) of @p pd, unbound.
 * @return 0, -EINVAL (not a window key, slot beyond the table, bad type),
 *   -EEXIST (the slot is open)
 */
int mw_open(struct mw_table *t, uint32_t key, uint32_t pd, enum mw_type type);

/**
 * Close the window in @p key's slot, whatever tag its binds gave it
 * (ibv_dealloc_mw): unbound, the slot free. Keys of no slot are ignored.
 */
void mw_close(struct mw_table *t, uint32_t key);

/**
 * Bind (or, type 1 with length 0, unbind) a window, checking it and the MR
 * in @p mrs (the binding lcore's table) by the rules in the file comment.
 * @return 0, or -EINVAL (a rule broken), -EACCES (other PD, MR access)
 */
int mw_bind(struct mw_table *t, const struct mr_table *mrs, const struct mw_bind_req *b);

/**
 * Invalidate type 2 window @p key (LOCAL_INV, or the R_Key of a SEND with
 * Invalidate) for QP @p qpn of @p pd: free again, its key reaches nothing.
 * @return 0, -ENOENT (unknown key or not bound), -EINVAL (type 1), -EACCES
 *   (other PD or QP)
 */
int mw_invalidate(struct mw_table *t, uint32_t key, uint32_t pd, uint32_t qpn);

/**
 * Check a remote access through window @p key by QP @p qpn of @p pd to
 * [@p iova, @p iova + @p len) needing @p access, then the MR it is bound to
 * in @p mrs (the checking lcore's table). On MR_OK stores the host address.
 * @return MR_OK, or why not (never MR_INDIRECT)
 */
enum mr_status mw_check(struct mw_table *t, const struct mr_table *mrs, uint32_t key, uint32_t pd,
			uint32_t qpn, uint64_t iova, uint64_t len, uint32_t access, uint8_t **host);

/** @return the windows bound to MR @p mr_key's slot now (a relaxed read). */
uint32_t mw_mr_bound(const struct mw_table *t, uint32_t mr_key);

/** QP @p qpn is gone: its type 2 windows are unbound (a later QP of that number cannot use them). */
void mw_qp_gone(struct mw_table *t, uint32_t qpn);

#ifdef __cplusplus
}
#endif
#endif /* QP_MW_H */
