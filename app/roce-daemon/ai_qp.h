/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * QPs on their owner lcore (ai_qp.c).
 *
 * A QP runs on lcore worker_of_qpn(qpn) (lib/ctl chose the QPN so that its
 * CQs and SRQ are bound there, ai_cq.h). The control thread keeps the
 * engine configuration it last gave (struct ai_qp.cfg) and the QP's event
 * epoch (cookie); every change is a message carrying the whole new
 * configuration by value (xport_cfg_from_sem()):
 *
 * - create: binds its CQs/SRQ, counts the QP on its PD and lcore (MRs of the
 *   PD then wait for that lcore), sends QP_CREATE;
 * - modify: a new path first waits for its neighbour (QP_RESOLVE, through
 *   ai_resolve.h), then QP_MODIFY; a reset starts a new epoch, so events the
 *   engine raised before it are dropped (ai_event.c);
 * - destroy: QP_DESTROY; answered once the lcore let go of the QP. A release
 *   that finds no room makes lib/ctl keep its memory for good.
 *
 * The QP's configuration and epoch change only when the lcore's answer says
 * it took them.
 */
#ifndef ROCE_DAEMON_AI_QP_H
#define ROCE_DAEMON_AI_QP_H

#include "ai_state.h"
#include "qp_attr.h"

/** The slot of QP @p qpn; NULL beyond the table. */
struct ai_qp *ai_qp_of(struct app_iface *ai, uint32_t qpn);

/** @name lib/ctl dataplane callbacks (struct ctl_dataplane_ops), control thread @{ */
int ai_dp_qp_create(void *dp, const struct ctl_qp_info *info);
int ai_dp_qp_modify(void *dp, const struct ctl_qp_info *info, const struct qp_sem *next,
		    const struct qp_sem_effects *fx);
void ai_dp_qp_destroy(void *dp, const struct ctl_qp_info *info);
/** @} */

/** @name On the owner lcore: engine_xport.h @{ */
int ai_lcore_qp_create(struct app_iface *ai, struct worker *w, const struct ctl_msg *m);
int ai_lcore_qp_modify(struct app_iface *ai, struct worker *w, const struct ctl_msg *m);
int ai_lcore_qp_destroy(struct app_iface *ai, struct worker *w, const struct ctl_msg *m);
/** @} */

/** @name Answers (ai_answered_fn) @{ */
void ai_qp_created(struct app_iface *ai, struct ai_op *op);
void ai_qp_resolved(struct app_iface *ai, struct ai_op *op);
void ai_qp_modified(struct app_iface *ai, struct ai_op *op);
void ai_qp_destroyed(struct app_iface *ai, struct ai_op *op);
/** @} */

#endif /* ROCE_DAEMON_AI_QP_H */
