/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Operations in flight and the control messages that carry them (ai_op.c):
 * the bottom of the application interface's files. Control thread only.
 *
 * An operation (struct ai_op, ai_state.h) is what one dataplane callback of
 * lib/ctl started and lib/ctl waits for: it counts the answers it still
 * expects. Its life:
 *
 *     op = ai_op_new(ai, kind);          in the callback
 *     ai_send(ai, lcore, op, &msg) ...   each message: one more answer expected
 *     return ai_op_return(ai, op);       the result now, or deferred (0)
 *     ... ai_answers() in the control loop: each answer counted;
 *     the last one -> ai_op_answered() -> ai->answered[kind] (the role's
 *     function) -> ai_op_finish(ai, op, errno) -> ctl_dp_done()
 *
 * Once the workers stopped (shutdown), ai_send() runs the message here at
 * once and the answer comes back before it returns; ai_op_finish() inside
 * the callback only records the result for ai_op_return().
 */
#ifndef ROCE_DAEMON_AI_OP_H
#define ROCE_DAEMON_AI_OP_H

#include "ai_state.h"

/** A new operation of @p kind, inside its dataplane callback. NULL: none free. */
struct ai_op *ai_op_new(struct app_iface *ai, enum ai_op_kind kind);

/** Give back @p op without an answer to lib/ctl (the callback answers itself). */
void ai_op_free(struct app_iface *ai, struct ai_op *op);

/**
 * @p op is over with @p result (0 or a positive errno). Inside its callback
 * the callback returns it (ai_op_return()); afterwards lib/ctl gets it
 * (ctl_dp_done()), which may start other operations.
 */
void ai_op_finish(struct app_iface *ai, struct ai_op *op, int result);

/**
 * The end of a dataplane callback that started @p op: its result if it is
 * over already, else 0 with lib/ctl's answer deferred (ctl_dp_defer()).
 */
int ai_op_return(struct app_iface *ai, struct ai_op *op);

/** Every answer of @p op is in: call its role's function (ai->answered). */
void ai_op_answered(struct app_iface *ai, struct ai_op *op);

/**
 * Send @p m for operation @p op (NULL: nobody waits for the answer) to
 * lcore @p wi. A full ring (or as many messages outstanding as its answer
 * ring holds) puts it in the backlog, in order behind what waits there;
 * releases (QP_DESTROY, MR_DEREG) have a reserve of their own.
 * @return 0, or -ENOBUFS when even the backlog is full (nothing sent)
 */
int ai_send(struct app_iface *ai, unsigned int wi, struct ai_op *op, struct ctl_msg *m);

/**
 * Send release @p m (a destroy's message) for @p op to lcore @p wi and end
 * the destroy callback: its answer deferred, or, when even the release
 * reserve is full, the object quarantined (destroys_held,
 * ctl_dp_destroy_failed()) and @p op freed.
 * @return 0, or -1 when it could not be sent (the lcore may hold the object)
 */
int ai_send_release(struct app_iface *ai, unsigned int wi, struct ai_op *op, struct ctl_msg *m);

/** Drain every lcore's answers and refill its ring from the backlog. @return answers */
unsigned int ai_answers(struct app_iface *ai);

/**
 * Once the workers stopped (shutdown): run what is still queued for them
 * here, in the order the lcores would have, so every operation gets its answer.
 */
void ai_drain_stopped(struct app_iface *ai);

/** Stall requests of a test (app_iface_stall_worker()) become STALL messages. */
void ai_stall_requests(struct app_iface *ai);

#endif /* ROCE_DAEMON_AI_OP_H */
