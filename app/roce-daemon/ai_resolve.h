/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Address resolution for the application interface (ai_resolve.c), on the
 * control thread, through neigh.c's table.
 *
 * Nothing waits in a loop: an operation whose neighbour is not known yet is
 * marked resolving (ai_resolve_start()); each control-loop pass
 * ai_resolve_tick() asks the table again, and once the MAC is there (op->rc
 * 0) or the table gave up or ai->resolve_ms passed (op->rc -ETIMEDOUT), the
 * operation goes on through its role's answer function (ai->answered):
 * ai_ah_resolved() for an AH, the QP's for a modify (ai_qp.h).
 */
#ifndef ROCE_DAEMON_AI_RESOLVE_H
#define ROCE_DAEMON_AI_RESOLVE_H

#include "ai_state.h"
#include "qp_attr.h"

/**
 * lib/qp's resolve hook (qp_sem_device.resolve), inside a modify's checks:
 * it only starts the resolution. @return 0 (known or under way), ETIMEDOUT
 * when there is no route (as Linux ib_resolve_eth_dmac answers)
 */
int ai_resolve(void *ctx, uint8_t port_num, const struct ibv_global_route *grh,
	       const struct qp_sem_gid *sgid, uint8_t *hop_limit);

/**
 * Start resolving the MAC of @p dgid from daemon port @p port into @p mac
 * (storage that outlives @p op) for @p op.
 * @return 0 resolved now, -EAGAIN: @p op waits (ai_resolve_tick()),
 *         ETIMEDOUT: unresolvable
 */
int ai_resolve_start(struct app_iface *ai, struct ai_op *op, uint16_t port, const uint8_t dgid[16],
		     uint8_t *mac);

/** Operations waiting for a neighbour: resolved, or out of time. @return those that moved */
unsigned int ai_resolve_tick(struct app_iface *ai);

/** @name Address handles: lib/ctl dataplane callbacks @{ */
/** Resolves the AV, then publishes it in the lcores' AH table (ah_table.h). */
int ai_dp_ah_create(void *dp, struct ctl_ah_info *ah);
void ai_dp_ah_destroy(void *dp, const struct ctl_ah_info *ah);
/** @} */

/** AH_RESOLVE answered (ai_answered_fn): publish, or ETIMEDOUT. */
void ai_ah_resolved(struct app_iface *ai, struct ai_op *op);

/**
 * rdma_cm's resolver (ctl_cm_ops.resolve): -ENETUNREACH without a route,
 * 0 with the MAC in @p mac, -EAGAIN while ARP/ND is under way (the id's
 * own timeout ends the wait).
 */
int ai_cm_resolve(void *ctx, uint32_t dev, const uint8_t dgid[16], uint8_t mac[6]);

#endif /* ROCE_DAEMON_AI_RESOLVE_H */
