/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: UD send queues drain before the objects their WQEs name go.
 *
 * A UD WQE names its AH by handle; the daemon's lcore reads the address
 * vector from its AH table when it fetches the WQE (lib/xport/xport_req.c
 * fetch_wqe), not when the application posts it. A NIC copies the AV at post
 * time, so applications (rdma-core's mckey) post unsignaled sends and destroy
 * the AH, or the QP, at once. To keep that working:
 *  - ibv_destroy_ah first waits until every UD QP of the AH's PD in RTS has
 *    completed the WQEs posted before the call;
 *  - ibv_destroy_qp of a UD QP in RTS first waits for its own SQ.
 * "Completed" is the SQ consumer index, written by the daemon when a WQE
 * completes, signaled or not (lib/xport/xport.c xport_sq_complete_head), and on a move
 * to RESET or a flush. The wait is bounded (ROCE_SHIM_UD_DRAIN_MS, default
 * 1000 ms), costs nothing when the SQ is already drained, and ends at once
 * when the daemon connection is gone. Outside RTS nothing is waited for: in
 * SQD the daemon fetches nothing, in SQE/ERR it flushes.
 */
#include <stdlib.h>
#include <time.h>

#include "shim.h"

#define SHIM_UD_DRAIN_ENV "ROCE_SHIM_UD_DRAIN_MS"
#define SHIM_UD_DRAIN_DEFAULT_MS 1000u
#define SHIM_UD_DRAIN_MAX_MS 60000u
#define SHIM_UD_DRAIN_NAP_NS 50000L /* between looks: give a busy core to the lcore */

void shim_ud_add(struct shim_qp *qp)
{
	struct shim_context *ctx = shim_ctx(qp->qp.context);

	pthread_mutex_lock(&ctx->ud_lock);
	qp->ud_next = ctx->ud_qps;
	ctx->ud_qps = qp;
	pthread_mutex_unlock(&ctx->ud_lock);
}

void shim_ud_del(struct shim_qp *qp)
{
	struct shim_context *ctx = shim_ctx(qp->qp.context);

	pthread_mutex_lock(&ctx->ud_lock);
	for (struct shim_qp **p = &ctx->ud_qps; *p != NULL; p = &(*p)->ud_next)
		if (*p == qp) {
			*p = qp->ud_next;
			break;
		}
	pthread_mutex_unlock(&ctx->ud_lock);
}

/*
 * The SQ producer index to wait for, read without sq_lock (an ibv_wr_*
 * builder of this very thread may hold it): the WQEs published before now.
 * @return false when nothing is to be waited for (not in RTS, or drained).
 */
static bool shim_ud_target(const struct shim_qp *qp, uint32_t *target)
{
	if (__atomic_load_n(&qp->qp.state, __ATOMIC_RELAXED) != IBV_QPS_RTS)
		return false;
	*target = __atomic_load_n(&qp->sq->prod, __ATOMIC_ACQUIRE);
	return __atomic_load_n(&qp->sq->cons, __ATOMIC_ACQUIRE) != *target;
}

static bool shim_ud_reached(const struct shim_qp *qp, uint32_t target)
{
	uint32_t cons = __atomic_load_n(&qp->sq->cons, __ATOMIC_ACQUIRE);

	return (int32_t)(cons - target) >= 0;
}

static uint64_t shim_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The deadline of a wait starting now. */
static uint64_t shim_ud_deadline(void)
{
	uint32_t ms = shim_env_u32(SHIM_UD_DRAIN_ENV, SHIM_UD_DRAIN_DEFAULT_MS, SHIM_UD_DRAIN_MAX_MS);

	return shim_now_ns() + (uint64_t)ms * 1000000u;
}

/*
 * Wait until @p qp's SQ consumer reached @p target, the daemon is gone, or
 * @p deadline passed. @return false when the wait is over for every QP.
 */
static bool shim_ud_wait(struct shim_context *ctx, const struct shim_qp *qp, uint32_t target,
			 uint64_t deadline)
{
	const struct timespec nap = { .tv_nsec = SHIM_UD_DRAIN_NAP_NS };

	while (!shim_ud_reached(qp, target)) {
		if (shim_ctx_lost(ctx) || shim_now_ns() >= deadline)
			return false;
		nanosleep(&nap, NULL);
	}
	return true;
}

void shim_ud_drain_qp(struct shim_qp *qp)
{
	uint32_t target;

	if (shim_ud_target(qp, &target))
		shim_ud_wait(shim_ctx(qp->qp.context), qp, target, shim_ud_deadline());
}

void shim_ud_drain_pd(struct ibv_pd *pd)
{
	struct shim_context *ctx = shim_ctx(pd->context);
	uint32_t handle = shim_pd(pd)->handle;
	bool any = false;
	uint64_t deadline;

	/* Held throughout: a UD QP destroyed meanwhile leaves the list only after. */
	pthread_mutex_lock(&ctx->ud_lock);
	for (struct shim_qp *q = ctx->ud_qps; q != NULL; q = q->ud_next) {
		q->ud_wait = shim_pd(q->qp.pd)->handle == handle && shim_ud_target(q, &q->ud_target);
		any |= q->ud_wait;
	}
	if (any) {
		deadline = shim_ud_deadline();
		for (struct shim_qp *q = ctx->ud_qps; q != NULL; q = q->ud_next)
			if (q->ud_wait && !shim_ud_wait(ctx, q, q->ud_target, deadline))
				break;
	}
	pthread_mutex_unlock(&ctx->ud_lock);
}
