/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Address handle table: UD address vectors the daemon resolved and holds.
 *
 * A UD send WQE comes from the application's shared ring; it names an
 * address handle (struct wr_av.ah_handle) and the engine takes the address
 * vector from here, never from the ring: source MAC and GID, destination
 * MAC, VLAN and UDP source port are the daemon's, so an application cannot
 * send as another host or onto another VLAN. An entry answers only to its
 * own protection domain (IBA 10.2.3: an AH is used only by QPs of its PD).
 *
 * One writer (the control thread: ah_table_set/clear), any number of
 * reader lcores (ah_table_get): each entry is a sequence lock, so a reader
 * sees a whole entry or retries; an entry cleared or refilled under a WQE
 * already fetched does not matter, the WQE holds its own copy.
 */
#ifndef QP_AH_TABLE_H
#define QP_AH_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "wqe.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One address handle. */
struct ah_entry {
	uint32_t seq;          /**< sequence lock: odd while written */
	uint32_t pd;           /**< protection domain of the AH */
	uint32_t valid;        /**< 1: in use */
	uint32_t reserved;
	struct wr_av av;       /**< resolved address vector (av.ah_handle = the index) */
};

/** The table: entries [0, capacity). */
struct ah_table {
	struct ah_entry *entries;
	uint32_t capacity;
};

/** A table of @p capacity handles (0 < capacity <= 2^24). @return it or NULL */
struct ah_table *ah_table_create(uint32_t capacity);

/** Free it. NULL is ignored. */
void ah_table_destroy(struct ah_table *t);

/**
 * Writer only: handle @p handle is now @p av of PD @p pd.
 * @return 0, -EINVAL (beyond the table)
 */
int ah_table_set(struct ah_table *t, uint32_t handle, uint32_t pd, const struct wr_av *av);

/** Writer only: handle @p handle is no more. @return 0, -EINVAL */
int ah_table_clear(struct ah_table *t, uint32_t handle);

/**
 * Any thread: the address vector of @p handle, if it is in use and of PD
 * @p pd, into @p out.
 * @return true, or false (unknown, destroyed, another PD, or a writer kept
 *   the entry busy through every retry)
 */
bool ah_table_get(const struct ah_table *t, uint32_t handle, uint32_t pd, struct wr_av *out);

#ifdef __cplusplus
}
#endif
#endif /* QP_AH_TABLE_H */
