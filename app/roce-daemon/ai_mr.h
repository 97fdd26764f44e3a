/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * MRs on the lcores (ai_mr.c). Each worker has its own lib/qp MR table
 * (ai->mrs[w]), written only by MR_REG/MR_DEREG messages on that lcore.
 *
 * Contract with lib/ctl: ai_dp_mr_create() answers once every lcore running
 * a QP of the MR's PD has it (the others are told without being waited for:
 * they cannot touch it before a QP of the PD comes to them, and that QP's
 * QP_CREATE follows the MR message on their ring). A refusal anywhere is
 * undone where it was taken. ai_dp_mr_destroy() answers once no lcore that
 * may reach the region still has it; a release message that found no room
 * makes lib/ctl keep the memory for good (ctl_dp_destroy_failed()).
 */
#ifndef ROCE_DAEMON_AI_MR_H
#define ROCE_DAEMON_AI_MR_H

#include "ai_state.h"

/** @name lib/ctl dataplane callbacks (struct ctl_dataplane_ops), control thread @{ */
int ai_dp_mr_create(void *dp, struct ctl_mr_info *mr);
void ai_dp_mr_destroy(void *dp, const struct ctl_mr_info *mr);
/** @} */

/** @name On the owner lcore (CTL_MSG_MR_REG / CTL_MSG_MR_DEREG): its table @{ */
int ai_lcore_mr_reg(struct app_iface *ai, struct worker *w, const struct ctl_msg *m);
/** A key the table does not hold is not an error (the undo of a refusal). */
int ai_lcore_mr_dereg(struct app_iface *ai, struct worker *w, const struct ctl_msg *m);
/** @} */

/** @name Answers (ai_answered_fn) @{ */
/** MR_REG / MR_UNDO: done, or undo the registration where it was taken. */
void ai_mr_reg_answered(struct app_iface *ai, struct ai_op *op);
/** MR_DEREG: EIO when an lcore may still hold the MR. */
void ai_mr_dereg_answered(struct app_iface *ai, struct ai_op *op);
/** @} */

#endif /* ROCE_DAEMON_AI_MR_H */
