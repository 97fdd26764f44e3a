/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The neighbour table (neigh_table.c): IP -> MAC per daemon port, no
 * protocol (neigh.h sends and answers the frames).
 *
 * The table is fixed-size (set-associative: NEIGH_WAYS entries per bucket,
 * the least recently confirmed entry of a full bucket is replaced) and has a
 * single writer, the control thread. Any thread may look entries up: each
 * entry is guarded by an rte_seqcount (writer: write_begin/write_end around
 * the update; reader: retry while a write overlapped), so lookups take no
 * lock and never block the writer.
 *
 * Entry life: INCOMPLETE (probing every retry interval, up to `retries`
 * probes) -> REACHABLE (usable; re-probed after the reachable time while
 * still usable) -> FAILED when probes stay unanswered. A FAILED entry is
 * probed again on the next request.
 */
#ifndef ROCE_DAEMON_NEIGH_TABLE_H
#define ROCE_DAEMON_NEIGH_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_seqcount.h>

#define NEIGH_WAYS 4u

enum neigh_state {
	NEIGH_FREE = 0,
	NEIGH_INCOMPLETE,  /**< probing, no MAC yet */
	NEIGH_REACHABLE,   /**< MAC known */
	NEIGH_FAILED,      /**< probes unanswered */
	NEIGH_LOCAL,       /**< one of our own addresses (lookup result only) */
};

/** One neighbour. Fields above `probes` are read by any thread under `sc`. */
struct neigh_entry {
	rte_seqcount_t sc;
	uint8_t ip[16];       /**< IPv6, or IPv4-mapped */
	uint16_t port;        /**< daemon port index */
	uint8_t mac[6];
	uint8_t state;        /**< enum neigh_state */
	/* control thread only */
	uint8_t probes;       /**< probes sent in the current round */
	bool refreshing;      /**< REACHABLE, re-probing after its reachable time */
	uint64_t deadline;    /**< next probe, or end of reachability (TSC) */
	uint64_t confirmed;   /**< last confirmation (TSC), for replacement */
};

/** The table; sizes fixed at neigh_table_init(). */
struct neigh_table {
	struct neigh_entry *entry;  /**< n_buckets * NEIGH_WAYS */
	uint32_t n_buckets;         /**< power of two */
	uint64_t reachable_tsc;
	uint64_t retry_tsc;
	uint32_t retries;
};

/** A lookup answer. */
struct neigh_result {
	enum neigh_state state;
	uint8_t mac[6];             /**< valid when REACHABLE or LOCAL */
};

/**
 * Allocate a table of at least @p entries entries.
 * @return 0 or -ENOMEM
 */
int neigh_table_init(struct neigh_table *t, uint32_t entries, uint64_t reachable_tsc,
		     uint64_t retry_tsc, uint32_t retries);
void neigh_table_free(struct neigh_table *t);

/** Any thread: the state and MAC of (@p port, @p ip); NEIGH_FREE when unknown. */
struct neigh_result neigh_lookup(const struct neigh_table *t, uint16_t port, const uint8_t ip[16]);

/**
 * Control thread: a frame told us @p ip is at @p mac. Updates an existing
 * entry; creates one only if @p create (the frame was addressed to us).
 * @return true if an entry now holds @p mac
 */
bool neigh_learn(struct neigh_table *t, uint16_t port, const uint8_t ip[16], const uint8_t mac[6],
		 bool create, uint64_t now);

/**
 * Control thread: someone needs (@p port, @p ip). Creates an INCOMPLETE
 * entry (or restarts a FAILED one).
 * @return true if the caller must send a probe now
 */
bool neigh_want(struct neigh_table *t, uint16_t port, const uint8_t ip[16], uint64_t now);

/** Callback of neigh_expire(): send one probe. */
typedef void (*neigh_probe_fn)(void *arg, uint16_t port, const uint8_t ip[16]);

/**
 * Control thread: run the timers. Re-probes INCOMPLETE and aging REACHABLE
 * entries through @p probe, fails entries whose probes ran out.
 * @return entries whose state changed
 */
unsigned int neigh_expire(struct neigh_table *t, uint64_t now, neigh_probe_fn probe, void *arg);

#endif /* ROCE_DAEMON_NEIGH_TABLE_H */
