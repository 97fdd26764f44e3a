/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * UD multicast in the daemon: which QPs of each port are attached to which
 * group, the fan-out lookup the workers make for a frame to a group, and
 * the host's membership on the link (IGMP/MLD).
 *
 * - **Table.** Per port, MCAST_MAX_GROUPS groups of at most
 *   MCAST_MAX_MEMBERS QPNs, preallocated. One writer, the control thread
 *   (lib/ctl's mcast_attach/mcast_detach through app_iface.c); the workers
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
 *   it is attached.
 * - **Link.** The first QP of a group on a port makes the host join it on
 *   the link: IGMPv3 (IGMPv2 while a v2 querier was heard in the last
 *   260 s) or MLDv2 report, sent again once 1 s later as Linux repeats
 *   unsolicited reports; the last QP's detach sends the leave the same way.
 *   Queries heard on the link (general or for one of our groups) are
 *   answered with a current-state report of our groups.
 *   The port already receives every multicast frame (allmulticast, port.c).
 */
#ifndef ROCE_DAEMON_MCAST_H
#define ROCE_DAEMON_MCAST_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_seqcount.h>

#include "config.h"
#include "ctl_mcast.h"

#define MCAST_MAX_GROUPS 64u   /**< groups per port (the device's max_mcast_grp) */
#define MCAST_MAX_MEMBERS 32u  /**< QPs per group (max_mcast_qp_attach) */
#define MCAST_MAX_ATTACH 512u  /**< attachments per port (max_total_mcast_qp_attach) */
#define MCAST_REPEATS 16u      /**< repeated reports waiting at once */

struct daemon;
struct rte_mbuf;
struct worker;

/** One group of one port. */
struct mcast_group {
	rte_seqcount_t sc;             /**< the writer's begin/end around every change */
	uint32_t n;                    /**< members; 0: free entry */
	uint32_t qpn[MCAST_MAX_MEMBERS];
	uint8_t gid[16];
};

/** A report to send again later (Linux repeats unsolicited reports). */
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

/** The daemon's multicast state (d->mcast). */
struct mcast_table {
	struct mcast_port port[CONFIG_MAX_PORTS];
	struct mcast_repeat repeat[MCAST_REPEATS];
	uint64_t ctr[MCAST_CTR_COUNT];  /**< written by the control thread, relaxed */
	struct ctl_mcast_stats ctl;     /**< lib/ctl's, copied by mcast_publish_ctl() (relaxed) */
};

/** Allocate d->mcast (before the workers start). @return 0 or -ENOMEM */
int mcast_create(struct daemon *d);
/** Free d->mcast (the workers have stopped). */
void mcast_destroy(struct daemon *d);

/** lib/ctl's mcast_attach, control thread: @return 0 or a positive errno. */
int mcast_attach(struct daemon *d, const struct ctl_mcast_info *m);
/** lib/ctl's mcast_detach, control thread. */
void mcast_detach(struct daemon *d, const struct ctl_mcast_info *m);

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

/**
 * Worker: a copy of frame @p m (about to go out on port @p port) when it is
 * a RoCE frame to a group with members on that port, for the loopback
 * queue; NULL otherwise (or no mbuf: counted in loopback_drops by the caller).
 */
struct rte_mbuf *mcast_loop_copy(struct worker *w, uint16_t port, const struct rte_mbuf *m);

/** Worker: is this frame (not RoCE) an IGMP or MLD message the control thread wants? */
bool mcast_is_ctl_frame(const uint8_t *f, uint32_t len);

/**
 * Control thread: a slow-path frame; an IGMP/MLD query is answered and
 * consumed. @return true when it was one (@p m freed)
 */
bool mcast_input(struct daemon *d, uint16_t port, struct rte_mbuf *m);

/** Control thread: publish lib/ctl's membership counters for /roce/mcast. */
void mcast_publish_ctl(struct daemon *d, const struct ctl_mcast_stats *st);

/** Control thread: send the reports that are due. @return how many */
unsigned int mcast_tick(struct daemon *d, uint64_t now);

#endif /* ROCE_DAEMON_MCAST_H */
