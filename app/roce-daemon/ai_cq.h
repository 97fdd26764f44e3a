/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * CQs and SRQs as the engine sees them (ai_cq.c).
 *
 * Each CQ and SRQ lib/ctl creates gets a slot (struct ai_cq, ai_srq in
 * ai_state.h) holding the engine's view (struct xport_cq/xport_srq) and a
 * generation, so engine events name it by a handle (gen << 20 | number)
 * that a destroyed and recreated object does not answer to.
 *
 * Binding: a CQ ring has one producer and an SRQ ring one consumer, so a
 * CQ/SRQ is bound to the lcore of the first QP that uses it and stays bound
 * while QPs use it (lib/ctl places QPs accordingly, ctl.h "QP placement").
 * While bound, its view belongs to that lcore: a resize or a new SRQ limit
 * is a control message to it; while unbound, the control thread changes
 * the view directly.
 */
#ifndef ROCE_DAEMON_AI_CQ_H
#define ROCE_DAEMON_AI_CQ_H

#include "ai_state.h"

/** @name lib/ctl dataplane callbacks (struct ctl_dataplane_ops), control thread @{ */
int ai_dp_cq_create(void *dp, const struct ctl_cq_info *cq);
/** Moves the unconsumed CQEs into the new ring (on the bound lcore, the producer). */
int ai_dp_cq_resize(void *dp, const struct ctl_cq_info *cq, const struct ctl_cq_info *old);
void ai_dp_cq_destroy(void *dp, const struct ctl_cq_info *cq);
int ai_dp_srq_create(void *dp, const struct ctl_srq_info *srq);
int ai_dp_srq_modify(void *dp, const struct ctl_srq_info *srq);
void ai_dp_srq_destroy(void *dp, const struct ctl_srq_info *srq);
/** @} */

/** @name On the bound lcore (or the control thread while unbound, @p w NULL) @{ */
int ai_lcore_cq_resize(struct app_iface *ai, struct worker *w, const struct ctl_msg *m);
int ai_lcore_srq_limit(struct app_iface *ai, struct worker *w, const struct ctl_msg *m);
/** SRQ_DETACH on the XRC SRQ's lcore: TGT QPs no longer reach it. */
int ai_lcore_srq_detach(struct app_iface *ai, struct worker *w, const struct ctl_msg *m);
int ai_lcore_tm_attach(struct app_iface *ai, struct worker *w, const struct ctl_msg *m);
/** The engine's XRC SRQ lookup (xport_cfg.xrc_srq; @p ctx is the app_iface). */
struct xport_srq *ai_xrc_srq(void *ctx, uint32_t srqn);
/** @} */

/** @name Answers (ai_answered_fn) @{ */
void ai_cq_resize_answered(struct app_iface *ai, struct ai_op *op);
void ai_srq_limit_answered(struct app_iface *ai, struct ai_op *op);
/** SRQ_DETACH answered: the XRC SRQ's CQ and PD let go, lib/ctl told. */
void ai_srq_detached(struct app_iface *ai, struct ai_op *op);
void ai_tm_attached(struct app_iface *ai, struct ai_op *op);
/** @} */

/**
 * One more QP reference on CQ @p c from @p lcore; the first binds the CQ to
 * it and sets the engine's view up. @return 0, -EINVAL: bound elsewhere
 */
int ai_cq_bind(struct ai_cq *c, uint32_t lcore);
/** As ai_cq_bind() for an SRQ. */
int ai_srq_bind(struct ai_srq *s, uint32_t lcore);

/** The CQ / SRQ an engine event's handle names; NULL: destroyed meanwhile. */
struct ai_cq *ai_cq_of_handle(struct app_iface *ai, uint32_t h);
struct ai_srq *ai_srq_of_handle(struct app_iface *ai, uint32_t h);

#endif /* ROCE_DAEMON_AI_CQ_H */
