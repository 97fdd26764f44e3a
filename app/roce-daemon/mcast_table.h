/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * UD multicast membership: which QPs of each port are attached to which
 * group, and the lookups a worker makes for a frame (mcast.h is the control
 * side: attach/detach, IGMP/MLD reports and queries, /roce/mcast).
 *
 * - **Table.** Per port, MCAST_MAX_GROUPS groups of at most
 *   MCAST_MAX_MEMBERS QPNs, preallocated. One writer, the control thread
 *   (mcast_table_add()/mcast_table_remove(), called by mcast.c); the workers
 *   read an entry under its rte_seqcount and copy its members out, so a
 *   reader never sees half a change.
 * - **Receive.** A RoCE frame whose destination GID is a multicast group
 *   (roce_gid_is_mcast()) and whose BTH DestQP is 0xFFFFFF is delivered to
 *   every QP attached to that group on the port it arrived on, once each:
 *   the worker takes one mbuf reference per member and hands each its own
 *   record (worker.c rx_mcast()). No member: dropped, counted.
 * - **Transmit.** A UD send to a group goes to the group's MAC
 *   (neigh_resolve() answers it without ARP/ND) and, as Linux rxe does
 *   (the kernel loops multicast back to the host), a copy goes through the
 *   loopback queue to the port's own members, the sender's QP included if
 *   it is attached (worker.c mcast_loop_copy()).
 *
 * Below the workers (layer table: test/daemon/include_layers.py): this
 * module includes nothing of the daemon but config.h.
 */
#ifndef ROCE_DAEMON_MCAST_TABLE_H
#define ROCE_DAEMON_MCAST_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_seqcount.h>

#include "config.h"
#include "ctl_mcast.h"

#define MCAST_MAX_GROUPS 64u   /**< groups per port (the device's max_mcast_grp) */
#define MCAST_MAX_MEMBERS 32u  /**< QPs per group (max_mcast_qp_attach) */
#define MCAST_MAX_ATTACH 512u  /**< attachments per port (max_total_mcast_qp_attach) */
#define MCAST_REPEATS 16u      /**< repeated reports waiting at once */

/** One group of one port. */
struct mcast_group {
	rte_seqcount_t sc;             /**< the writer's begin/end around every change */
	uint32_t n;                    /**< members; 0: free entry */
	uint32_t qpn[MCAST_MAX_MEMBERS];
	uint8_t gid[16];
};

/** A report to send again later (Linux repeats unsolicited reports; mcast.c). */
struct mcast_repeat {
	uint64_t due;                  /**< TSC; 0: free */
	uint16_t port;
	bool leave;
	uint8_t gid[16];
};

/** Control-thread counters (published for /roce/mcast). */
#define MCAST_CTR_LIST(X) \
	X(REPORTS_TX, "reports_tx", "IGMP/MLD reports and leaves sent") \
	X(REPORTS_FAILED, "reports_failed", "reports not sent: no mbuf or no source address") \
	X(QUERIES_RX, "queries_rx", "IGMP/MLD queries heard on the link") \
	X(QUERIES_ANSWERED, "queries_answered", "queries answered with a report of our groups") \
	X(ATTACH_REFUSED, "attach_refused", "attaches the daemon's table refused (full)")

enum mcast_ctr {
#define MCAST_CTR_ENUM(sym, name, desc) MCAST_CTR_##sym,
	MCAST_CTR_LIST(MCAST_CTR_ENUM)
#undef MCAST_CTR_ENUM
	MCAST_CTR_COUNT,
};

/** Per port. */
struct mcast_port {
	uint32_t n_groups;             /**< entries in use (relaxed; readers skip an empty port) */
	uint32_t n_attach;
	uint64_t igmp_v2_until;        /**< TSC until which an IGMPv2 querier is assumed present */
	struct mcast_group grp[MCAST_MAX_GROUPS];
};

/** The daemon's multicast state (d->mcast, daemon_state.h). */
struct mcast_table {
	struct mcast_port port[CONFIG_MAX_PORTS];
	struct mcast_repeat repeat[MCAST_REPEATS];
	uint64_t ctr[MCAST_CTR_COUNT];  /**< written by the control thread, relaxed */
	struct ctl_mcast_stats ctl;     /**< lib/ctl's, copied by mcast_publish_ctl() (relaxed) */
};

/** A zeroed table with its seqcounts set up. @return NULL: no memory */
struct mcast_table *mcast_table_new(void);

/** Free @p t (NULL: nothing); no reader may be left. */
void mcast_table_free(struct mcast_table *t);

/** Control thread: count one of the control side's events (relaxed store). */
void mcast_table_count(struct mcast_table *t, enum mcast_ctr c);

/**
 * Control thread: the group @p gid of port @p port, or NULL. @p port must
 * be below CONFIG_MAX_PORTS.
 */
struct mcast_group *mcast_table_find(struct mcast_table *t, uint16_t port, const uint8_t gid[16]);

/**
 * Control thread: attach @p qpn to group @p gid of port @p port (@p port
 * below CONFIG_MAX_PORTS). Attached already: 0, nothing changes.
 * @param[out] first true when the group is new on the port (join the link)
 * @return 0, or ENOMEM when the port's groups, the group's members or the
 *   port's attachments are full (counted in MCAST_CTR_ATTACH_REFUSED)
 */
int mcast_table_add(struct mcast_table *t, uint16_t port, const uint8_t gid[16], uint32_t qpn,
		    bool *first);

/**
 * Control thread: detach @p qpn from group @p gid of port @p port (@p port
 * below CONFIG_MAX_PORTS).
 * @return true when that emptied the group (leave the link); false when
 *   members remain or @p qpn was not attached
 */
bool mcast_table_remove(struct mcast_table *t, uint16_t port, const uint8_t gid[16],
			uint32_t qpn);

/**
 * Any thread: the QPs of port @p port attached to @p gid, copied to @p qpn
 * (MCAST_MAX_MEMBERS entries). @return how many (0: none, or no such group)
 */
uint32_t mcast_members(const struct mcast_table *t, uint16_t port, const uint8_t gid[16],
		       uint32_t qpn[MCAST_MAX_MEMBERS]);

/** Any thread: does port @p port have any group? (a cheap test before the rest) */
static inline bool mcast_port_active(const struct mcast_table *t, uint16_t port)
{
	return t != NULL && port < CONFIG_MAX_PORTS &&
	       __atomic_load_n(&t->port[port].n_groups, __ATOMIC_RELAXED) != 0;
}

/** Worker: is this frame (not RoCE) an IGMP or MLD message the control thread wants? */
bool mcast_is_ctl_frame(const uint8_t *f, uint32_t len);

#endif /* ROCE_DAEMON_MCAST_TABLE_H */
