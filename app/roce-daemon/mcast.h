/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * UD multicast, the control side: lib/ctl's attach/detach into the
 * membership table (mcast_table.h, which the workers read), and the host's
 * membership on the link (IGMP/MLD); /roce/mcast telemetry.
 *
 * - **Link.** The first QP of a group on a port makes the host join it on
 *   the link: IGMPv3 (IGMPv2 while a v2 querier was heard in the last
 *   260 s) or MLDv2 report, sent again once 1 s later as Linux repeats
 *   unsolicited reports; the last QP's detach sends the leave the same way.
 *   Queries heard on the link (general or for one of our groups) are
 *   answered with a current-state report of our groups.
 *   The port already receives every multicast frame (allmulticast, port.c).
 *
 * Control thread only (mcast_create()/mcast_destroy() while no worker runs).
 */
#ifndef ROCE_DAEMON_MCAST_H
#define ROCE_DAEMON_MCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl_mcast.h"
#include "mcast_table.h"

struct daemon;
struct rte_mbuf;

/** Allocate d->mcast (before the workers start). @return 0 or -ENOMEM */
int mcast_create(struct daemon *d);
/** Free d->mcast (the workers have stopped). */
void mcast_destroy(struct daemon *d);

/** lib/ctl's mcast_attach, control thread: @return 0 or a positive errno. */
int mcast_attach(struct daemon *d, const struct ctl_mcast_info *m);
/** lib/ctl's mcast_detach, control thread. */
void mcast_detach(struct daemon *d, const struct ctl_mcast_info *m);

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
