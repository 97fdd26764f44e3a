/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Shared-NIC mode neighbours (neigh_kernel.c): the kernel owns ARP/ND on
 * the interface, so the daemon reads the kernel's neighbour table over
 * rtnetlink and, for an address the kernel does not know yet, makes it
 * resolve. Control thread; blocking only on the local netlink socket.
 */
#ifndef ROCE_DAEMON_NEIGH_KERNEL_H
#define ROCE_DAEMON_NEIGH_KERNEL_H

#include <stdint.h>

/** @name Shared-NIC mode: the kernel's neighbour table (neigh_kernel.c) @{ */
/**
 * Read the kernel's entry for @p ip on interface @p ifindex (rtnetlink).
 * @return 0 with @p mac when the kernel has a usable entry, else -ENOENT or -errno
 */
int neigh_kernel_lookup(unsigned int ifindex, const uint8_t ip[16], uint8_t mac[6]);
/** Make the kernel resolve @p ip: one empty UDP datagram to the discard port. */
void neigh_kernel_kick(unsigned int ifindex, const uint8_t ip[16]);
/** @} */

#endif /* ROCE_DAEMON_NEIGH_KERNEL_H */
