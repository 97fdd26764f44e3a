/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Neighbours: ARP (RFC 826) and IPv6 neighbour discovery (RFC 4861) for the
 * daemon's own addresses, and resolution of a peer's MAC from the
 * destination GID of an address vector (IPv4-mapped or IPv6) through the
 * neighbour table (neigh_table.h).
 *
 * Frames: workers pass ARP, NS/NA and echo requests to the control thread,
 * which answers through neigh_input() (in place, reusing the mbuf) and sends
 * probes with neigh_probe().
 */
#ifndef ROCE_DAEMON_NEIGH_H
#define ROCE_DAEMON_NEIGH_H

#include <stdbool.h>
#include <stdint.h>

#include "neigh_kernel.h"
#include "neigh_table.h"

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
