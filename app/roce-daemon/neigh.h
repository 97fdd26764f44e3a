/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Neighbours: ARP (RFC 826) and IPv6 neighbour discovery (RFC 4861) for the
 * daemon's own addresses, and a neighbour table that resolves a peer's MAC
 * from the destination GID of an address vector (IPv4-mapped or IPv6).
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
 *
 * Frames: workers pass ARP, NS/NA and echo requests to the control thread,
 * which answers through neigh_input() (in place, reusing the mbuf) and sends
 * probes with neigh_probe().
 */
#ifndef ROCE_DAEMON_NEIGH_H
#define ROCE_DAEMON_NEIGH_H

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

/** @name Shared-NIC mode: the kernel's neighbour table (neigh_kernel.c) @{ */
/**
 * Read the kernel's entry for @p ip on interface @p ifindex (rtnetlink).
 * @return 0 with @p mac when the kernel has a usable entry, else -ENOENT or -errno
 */
int neigh_kernel_lookup(unsigned int ifindex, const uint8_t ip[16], uint8_t mac[6]);
/** Make the kernel resolve @p ip: one empty UDP datagram to the discard port. */
void neigh_kernel_kick(unsigned int ifindex, const uint8_t ip[16]);
/** @} */

/** @name Protocol (needs the daemon: ports, addresses, rings) @{ */
struct daemon;
struct rte_mbuf;

/**
 * Control thread: handle an ARP, NS/NA or echo frame received on port
 * @p port_idx. Learns neighbours and answers requests for our addresses by
 * rewriting @p m in place. Consumes @p m (sent or freed).
 */
void neigh_input(struct daemon *d, uint16_t port_idx, struct rte_mbuf *m, uint64_t now);

/**
 * Control thread: send an ARP request or a neighbour solicitation for @p ip;
 * on a shared port, read the kernel's table instead (and make the kernel
 * resolve if it does not know @p ip yet).
 */
void neigh_probe(struct daemon *d, uint16_t port_idx, const uint8_t ip[16]);

/**
 * Next hop for @p dgid on port @p port_idx: @p dgid itself when on-link (in
 * a prefix of the port, link-local, or no gateway for its family), else the
 * gateway. @return false if there is no route (no address of that family).
 */
bool neigh_next_hop(const struct daemon *d, uint16_t port_idx, const uint8_t dgid[16],
		    uint8_t nh[16]);

/**
 * Any thread: the destination MAC for @p dgid on port @p port_idx. Our own
 * GIDs (any port) resolve to that port's MAC (the frame then takes the
 * loopback path). On a miss, resolution is requested: directly when called
 * from the control thread (@p worker_idx < 0), else through the worker's
 * request ring.
 * @return 0 with @p mac filled, -EAGAIN while resolving, -EHOSTUNREACH if
 *         resolution failed or there is no route
 */
int neigh_resolve(struct daemon *d, int worker_idx, uint16_t port_idx, const uint8_t dgid[16],
		  uint8_t mac[6]);

/** @} */

#endif /* ROCE_DAEMON_NEIGH_H */
