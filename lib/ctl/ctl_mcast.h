/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * UD multicast membership in the control plane (ibv_attach_mcast(3),
 * ibv_detach_mcast(3)).
 *
 * lib/ctl keeps which QP is attached to which group, per device, bounded
 * three ways as Linux rxe bounds them (rxe_mcast.c): groups per device
 * (ipc_device_attr.max_mcast_grp), QPs per group (max_mcast_qp_attach) and
 * attachments per device (max_total_mcast_qp_attach), plus a per-client
 * quota (ctl_quota.max_mcast_attach). Every refusal is counted.
 *
 * The dataplane hears of every change through struct ctl_dataplane_ops'
 * mcast_attach / mcast_detach with a struct ctl_mcast_info: the QP, the
 * group and how many QPs of the device the group has after the change, so
 * the first attach can join the group on the link (IGMP/MLD report, MAC
 * filter) and the last detach can leave it.
 */
#ifndef CTL_MCAST_H
#define CTL_MCAST_H

#include <stdbool.h>
#include <stdint.h>

/** Hard caps on the tables, whatever the device attributes say. */
#define CTL_MCAST_MAX_GROUPS 4096u
#define CTL_MCAST_MAX_ATTACH 16384u
/** rdma_cm joins (rdma_join_multicast): in all, and per client when it has no quota. */
#define CTL_MCAST_CM_MAX 1024u
#define CTL_MCAST_CM_PER_CLIENT 64u

/** One attach or detach as the dataplane sees it. */
struct ctl_mcast_info {
	uint32_t dev;     /**< device index in the configuration */
	uint32_t port;    /**< device-local port 1.. */
	uint32_t qpn;     /**< the UD QP */
	uint32_t members; /**< the group's QPs on the device after the change (1: first, 0: last) */
	uint8_t gid[16];  /**< the group: ff00::/8, or ::ffff:224.0.0.0/4 for an IPv4 group */
};

/** Counters of the membership table (ctl_mcast_get_stats()). */
struct ctl_mcast_stats {
	uint32_t groups;          /**< groups with at least one QP, all devices */
	uint32_t attached;        /**< attachments, all devices */
	uint64_t attaches;        /**< successful attaches (a repeated attach counts 0) */
	uint64_t detaches;        /**< successful detaches, QP destroys included */
	uint64_t refused_groups;  /**< ENOMEM: the device's group table is full */
	uint64_t refused_group_full; /**< ENOMEM: the group has max_mcast_qp_attach QPs */
	uint64_t refused_total;   /**< ENOMEM: the device has max_total_mcast_qp_attach */
	uint64_t refused_quota;   /**< ENOMEM: the client's max_mcast_attach */
	uint64_t refused_bad;     /**< EINVAL: not a UD QP, not a multicast GID, not attached */
	uint64_t refused_dp;      /**< the dataplane refused (its errno) */
	uint32_t cm_joins;        /**< rdma_cm joins held now */
	uint64_t cm_refused;      /**< rdma_cm joins refused: ENOMEM (table or client full), EADDRINUSE */
};

struct ctl;
/** Fill @p st from @p ctl's membership table. */
void ctl_mcast_get_stats(const struct ctl *ctl, struct ctl_mcast_stats *st);
/**
 * QPs of device @p dev attached to @p gid, at most @p max written to @p qpn.
 * @return how many are attached (may exceed @p max)
 */
uint32_t ctl_mcast_members(const struct ctl *ctl, uint32_t dev, const uint8_t gid[16],
			   uint32_t *qpn, uint32_t max);

#endif /* CTL_MCAST_H */
