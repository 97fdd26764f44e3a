/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * From QP semantics to the transport engine: what a QP's verbs attributes
 * (struct qp_sem, qp_attr.h) mean as an engine configuration (struct
 * xport_cfg, xport.h).
 *
 * Pure functions: no state, no allocation, no I/O; any thread. The daemon
 * calls them on the control thread when a QP is created or modified and
 * sends the result to the QP's lcore by value (app/roce-daemon ai_qp.c).
 */
#ifndef ROCE_QP_XPORT_SEM_H
#define ROCE_QP_XPORT_SEM_H

#include <stdbool.h>
#include <stdint.h>

#include "qp_attr.h"
#include "xport.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the QP's port and the daemon's settings add to its attributes. */
struct xport_sem_port {
	uint8_t active_mtu;          /**< IB MTU enum 1..5: UD, and a path without one */
	const uint16_t *pkeys;       /**< P_Key table, indexed by pkey_index */
	uint32_t n_pkeys;            /**< entries in @c pkeys (>= 1) */
	const uint8_t (*gids)[16];   /**< GID table, indexed by sgid_index */
	uint32_t n_gids;             /**< entries in @c gids (>= 1) */
	const uint8_t *mac;          /**< the port's MAC (6 bytes): the path's source */
	uint16_t vlan;               /**< the port's 802.1Q VID (1..4094): every path is tagged
				      *   with it (priority 0: the engine adds the port's pcp);
				      *   0: untagged */
	uint32_t max_unacked;        /**< [daemon] max_inflight_packets (xport_cfg) */
	uint32_t min_window;         /**< [daemon] min_inflight_packets (xport_cfg) */
	const struct xport_cc *cc;   /**< the port's congestion control, or NULL */
	/** RAW_PACKET sends: the port's MTU plus the Ethernet header (xport_cfg.raw_frame_max) */
	uint32_t raw_frame_max;
};

/**
 * The engine state for verbs state @p s: RTR, RTS (also for SQE: the engine
 * has no SQE, its send queue keeps running), SQD, ERR; RESET and INIT both
 * become XPORT_STATE_RESET (nothing is sent or accepted).
 */
uint8_t xport_state_from_sem(enum ibv_qp_state s);

/**
 * The engine configuration of a QP with attributes @p sem.
 *
 * @param cur  the QP's configuration now: its identity (qpn, pd, handle),
 *             queues, tables and the path it resolved before are kept
 * @param sem  the QP's attributes (after qp_sem_create()/qp_sem_modify())
 * @param port its port and the daemon's window settings
 * @param out  @p cur with every attribute of @p sem applied (may be @p cur)
 * @return true when out->av.dmac is still to be resolved: a connected QP in
 *         RTR/RTS/SQD/SQE whose destination GID is new (or never resolved);
 *         false otherwise (the MAC resolved for the same GID is kept, so
 *         RTR -> RTS never waits for ARP)
 *
 * Values are clamped to what the engine holds (max_rd_atomic to
 * XPORT_MAX_RD_ATOMIC, max_dest_rd_atomic to 1..XPORT_MAX_RD_ATOMIC, the
 * access flags to the REMOTE_* bits, PSNs and the destination
 * QPN to 24 bits, the flow label to 20); an out-of-table pkey_index or
 * sgid_index takes entry 0 (lib/qp refused them already).
 */
bool xport_cfg_from_sem(const struct xport_cfg *cur, const struct qp_sem *sem,
			const struct xport_sem_port *port, struct xport_cfg *out);

#ifdef __cplusplus
}
#endif

#endif /* ROCE_QP_XPORT_SEM_H */
