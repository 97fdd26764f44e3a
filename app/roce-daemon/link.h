/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Link-state tracking: what each port's link is (up, speed, MTU it carries),
 * when it changed, and who is told. Pure logic: samples come from a
 * struct link_source (port_link.c reads the ethdev and the kernel interface;
 * the unit tests use a fake), changes go to a callback (app_iface.c turns
 * them into ibv_query_port answers and IBV_EVENT_PORT_ACTIVE/ERR).
 *
 * Threads: link_tick() and everything it calls run on the control thread
 * and never block; link_lsc_raise() is the one call another thread (DPDK's
 * interrupt thread, from an RTE_ETH_EVENT_INTR_LSC callback) may make: it
 * only marks the port to be sampled at the next tick.
 *
 * Sampling: a port whose PMD raises LSC interrupts is read when one
 * arrives and, as a safety net, every poll period; the others every poll
 * period. A port that is down and whose source can recover it (a net_memif
 * client, which never reconnects on its own) gets a recover attempt every
 * retry period until it is up, the first one a retry period after it was
 * found down (a connection may be under way then).
 */
#ifndef ROCE_DAEMON_LINK_H
#define ROCE_DAEMON_LINK_H

#include <stdbool.h>
#include <stdint.h>

/** Most ports a tracker follows (CONFIG_MAX_PORTS or more). */
#define LINK_MAX_PORTS 8u

/** One reading of a link. */
struct link_sample {
	bool up;
	uint32_t speed_mbps;   /**< 0: unknown */
	uint32_t mtu;          /**< IP MTU the link carries now; 0: unknown (keep the configured) */
};

/** Where samples come from. */
struct link_source {
	/** Read port @p i without blocking. @return 0, or -errno (counted; state kept) */
	int (*read)(void *arg, unsigned int i, struct link_sample *out);
	/**
	 * Port @p i is down: try to bring it back (may take several calls; the
	 * tracker calls again every retry period while it stays down). NULL, or
	 * @return 0 (attempt made or in progress), -ENOTSUP (nothing to do for
	 * this port: not called again until it goes down anew), other -errno
	 * (attempt failed; counted).
	 */
	int (*recover)(void *arg, unsigned int i, uint64_t now_ns);
	void *arg;
};

/** What a tick found for one port. */
enum link_change {
	LINK_SAME,       /**< nothing changed */
	LINK_FIRST,      /**< first reading (not a transition) */
	LINK_UP,         /**< went up */
	LINK_DOWN,       /**< went down */
	LINK_ATTR,       /**< same state, other speed or MTU */
};

/** One port's state (control thread, except lsc_pending). */
struct link_port {
	struct link_sample cur;
	bool known;              /**< cur holds a reading */
	bool lsc;                /**< the PMD raises LSC interrupts for this port */
	bool recover_idle;       /**< recover answered -ENOTSUP since the last down */
	uint8_t lsc_pending;     /**< set by link_lsc_raise() (atomic) */
	uint64_t next_recover_ns;
	uint64_t changed_ns;     /**< time of the last transition */
	uint64_t ups;            /**< transitions down -> up */
	uint64_t downs;          /**< transitions up -> down */
	uint64_t lsc_events;     /**< LSC interrupts seen (the source counts them) */
	uint64_t read_errors;
	uint64_t recover_tries;
	uint64_t recover_errors;
};

/** Called on every change (LINK_FIRST included) with the old and new reading. */
typedef void link_change_fn(void *arg, unsigned int i, enum link_change what,
			    const struct link_sample *old, const struct link_sample *now);

/** The tracker of a set of ports. */
struct link_tracker {
	unsigned int n;
	struct link_port port[LINK_MAX_PORTS];
	struct link_source src;
	uint64_t poll_ns;        /**< every port is read at least this often */
	uint64_t retry_ns;       /**< recover attempts of a down port this far apart */
	uint64_t next_poll_ns;
	link_change_fn *on_change;
	void *on_change_arg;
};

/**
 * Prepare @p t for @p n ports (at most LINK_MAX_PORTS). Nothing is read
 * until the first link_tick(), which reads every port.
 * @return 0 or -EINVAL
 */
int link_tracker_init(struct link_tracker *t, unsigned int n, const struct link_source *src,
		      uint64_t poll_ns, uint64_t retry_ns);

/** Install the change callback (NULL: none). */
void link_tracker_on_change(struct link_tracker *t, link_change_fn *fn, void *arg);

/**
 * Compare a reading with the state and update it (no callback): what
 * changed. Counts transitions.
 */
enum link_change link_apply(struct link_port *lp, const struct link_sample *s, uint64_t now_ns);

/**
 * Control thread: read the ports that are due (all of them each poll
 * period, a port with a pending LSC interrupt now), apply, call the change
 * callback, and make recover attempts. Never blocks.
 * @return the number of changes reported (work done)
 */
unsigned int link_tick(struct link_tracker *t, uint64_t now_ns);

/** Any thread: port @p i's link may have changed; read it at the next tick. */
void link_lsc_raise(struct link_tracker *t, unsigned int i);

/** @return a name for @p c ("same", "first", "up", "down", "attr"). */
const char *link_change_name(enum link_change c);

#endif /* ROCE_DAEMON_LINK_H */
