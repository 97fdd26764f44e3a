/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The net device of a GID (issue 15, shared-NIC mode): the kernel interface
 * in the daemon's network namespace that holds the GID's address, as
 * `ibv_query_gid_ex()` reports it in `ndev_ifindex` (rxe and RoCE NICs
 * report the netdev a GID was made from). Tools that look for the interface
 * of an RDMA address (rdma-core's pyverbs tests, rdma_cm users that print it)
 * find it; a GID whose address no kernel interface holds has none (0).
 */
#ifndef ROCE_DAEMON_GID_NDEV_H
#define ROCE_DAEMON_GID_NDEV_H

#include <stdint.h>

/**
 * The ifindex of the kernel interface holding the address of @p gid (an
 * IPv4-mapped GID as IPv4, any other as IPv6), or 0 when none does or the
 * interfaces cannot be read. Reads the kernel's address list once per call
 * (getifaddrs: a netlink dump of this namespace, no wait on anyone else).
 */
unsigned int gid_ndev_ifindex(const uint8_t gid[16]);

#endif /* ROCE_DAEMON_GID_NDEV_H */
