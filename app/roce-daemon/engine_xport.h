/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The transport engine (lib/xport xport.h) on the daemon's workers.
 *
 * engine_xport is a struct engine_ops: per lcore it owns a timer wheel
 * (lib/timer timer_wheel.h, 1 us ticks) and one xport_out; per QP the engine
 * object sits in the lcore's QP table (worker.h), its xport handle is the
 * slot index (qpn / n_workers), so timer handles are
 * timer_wheel_handle(slot, timer) and nothing is referred to by pointer
 * across time. After every engine call the output is flushed at once:
 * frames are built into mbufs of the QP's port and sent with worker_tx()
 * (loopback included), timer actions go to the wheel, events go to the
 * control thread through the worker's event ring (struct worker_event:
 * type = enum xport_event_type, code = enum async_event / enum xport_err).
 *
 * Time: the engine's `now` is nanoseconds from the TSC.
 *
 * QP lifetime functions run on the owning lcore: for the control thread as
 * control messages (ctl_msg.h, app_iface.c), or directly in tests that
 * drive the workers themselves. Debug builds assert it (WORKER_OWNER_ASSERT,
 * worker.h) in them, in the rx and poll hooks and in lcore_init/lcore_fini.
 */
#ifndef ROCE_DAEMON_ENGINE_XPORT_H
#define ROCE_DAEMON_ENGINE_XPORT_H

#include <stdint.h>

#include "worker.h"
#include "xport.h"

struct daemon;

extern const struct engine_ops engine_xport;

/** @name Owner lcore only (asserted in debug builds) @{ */
/**
 * Create the engine QP of @p cfg (cfg->qpn must be owned by @p w) on daemon
 * port @p port, in state RESET. cfg->handle is set by this function.
 * @p cookie is echoed in every event of this QP (worker_event.cookie), so
 * the control thread can tell a stale event of a destroyed QP from one of
 * the QP that reuses its QPN.
 * @return 0, -EINVAL (bad cfg or QPN), -EEXIST, -ENOMEM
 */
int engine_xport_qp_create(struct worker *w, const struct xport_cfg *cfg, uint16_t port,
			   uint32_t cookie);
/** Move QP @p qpn to @p state. @return 0 or -ENOENT */
int engine_xport_qp_set_state(struct worker *w, uint32_t qpn, enum xport_state state);
/**
 * Apply @p cfg (xport_qp_modify(); cfg->handle is set by this function),
 * then move to @p state unless it is negative. From then on the QP's events
 * carry @p cookie: a new cookie on a reset lets the control thread drop
 * events raised before it (still queued on the event ring) instead of
 * applying them to the QP's next life.
 * @return 0, -ENOENT, -EINVAL or -ENOMEM (xport_qp_modify refused)
 */
int engine_xport_qp_modify(struct worker *w, uint32_t qpn, const struct xport_cfg *cfg, int state,
			   uint32_t cookie);
/** Destroy QP @p qpn (its timers are cancelled). @return 0 or -ENOENT */
int engine_xport_qp_destroy(struct worker *w, uint32_t qpn);
/** The engine QP of @p qpn, or NULL. */
struct xport_qp *engine_xport_qp(struct worker *w, uint32_t qpn);
/**
 * QPs of @p w run on every loop now. The others (out of RESET, idle per
 * xport_qp_idle()) cost a loop nothing but a bounded share of one SQ
 * doorbell read each; a packet, a timer, a state change or a post makes
 * them busy again.
 */
uint32_t engine_xport_busy(const struct worker *w);

/**
 * Tag matching SRQs (IBV_SRQT_TM) of @p w: every loop takes up to
 * ENGINE_TM_BUDGET operations of each one's ops ring
 * (xport_srq_tm_poll()). At most ENGINE_TM_MAX per lcore.
 * @return 0, -ENOSPC (full), -EEXIST
 */
int engine_xport_tm_attach(struct worker *w, struct xport_srq *srq);
/** Stop polling @p srq (no-op if it is not attached). */
void engine_xport_tm_detach(struct worker *w, struct xport_srq *srq);
#define ENGINE_TM_MAX 64u
#define ENGINE_TM_BUDGET 32u
/** @} */

#endif /* ROCE_DAEMON_ENGINE_XPORT_H */
