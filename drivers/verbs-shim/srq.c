/* SPDX-License-Identifier: BSD-3-Clause */
/* verbs shim: shared receive queues (basic and XRC SRQs; tag matching is not supported). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

/* @p xrcd and @p cq: an XRC SRQ's (IBV_SRQT_XRC), else NULL. */
static struct ibv_srq *shim_srq_create(struct ibv_pd *pd, void *srq_context,
				       struct ibv_srq_attr *attr, struct ibv_xrcd *xrcd,
				       struct ibv_cq *cq)
{
	struct ibv_context *context = pd->context;
	struct ipc_msg req, rsp;
	const struct ipc_create_srq_rsp *r = &rsp.u.rsp_CREATE_SRQ;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	struct shim_srq *srq = calloc(1, sizeof(*srq));
	int rc;

	if (srq == NULL)
		return shim_null(ENOMEM);
	shim_req(&req, IPC_OP_CREATE_SRQ);
	req.u.req_CREATE_SRQ.user_handle = (uintptr_t)srq;
	req.u.req_CREATE_SRQ.pd = shim_pd(pd)->handle;
	req.u.req_CREATE_SRQ.max_wr = attr->max_wr;
	req.u.req_CREATE_SRQ.max_sge = attr->max_sge;
	req.u.req_CREATE_SRQ.srq_limit = attr->srq_limit;
	if (xrcd != NULL) {
		req.u.req_CREATE_SRQ.srq_type = IBV_SRQT_XRC;
		req.u.req_CREATE_SRQ.xrcd = shim_xrcd(xrcd)->handle;
		req.u.req_CREATE_SRQ.cq = shim_cq(cq)->handle;
	}
	rc = shim_rpc(shim_ctx(context), &req, NULL, 0, &rsp, rfds);
	if (rc == 0 && (rfds[0] < 0 || r->ring.stride != sizeof(struct rq_wqe) ||
			ipc_ring_bytes(r->ring.entries, r->ring.stride) == 0 ||
			r->max_wr >= r->ring.entries || r->max_sge > WQE_MAX_SGE ||
			r->ring.offset + ipc_ring_bytes(r->ring.entries, r->ring.stride) > r->shm_size))
		rc = EPROTO;
	if (rc == 0) {
		srq->shm = shim_map_shm(rfds[0], r->shm_size);
		if (srq->shm == NULL) {
			struct ipc_msg d, dr;

			rc = errno;
			shim_req(&d, IPC_OP_DESTROY_SRQ);
			d.u.req_DESTROY_SRQ.handle = r->handle;
			shim_rpc(shim_ctx(context), &d, NULL, 0, &dr, NULL);
		}
	}
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		if (rfds[i] >= 0)
			close(rfds[i]);
	if (rc) {
		free(srq);
		return shim_null(rc);
	}
	srq->handle = r->handle;
	srq->srqn = r->srqn;
	srq->shm_size = r->shm_size;
	srq->max_wr = r->max_wr;
	srq->max_sge = r->max_sge;
	srq->ring = (struct spsc_ring *)((uint8_t *)srq->shm + r->ring.offset);
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_init(&srq->v.srq.mutex, NULL);
	pthread_cond_init(&srq->v.srq.cond, NULL);
	srq->v.srq.context = context;
	srq->v.srq.srq_context = srq_context;
	srq->v.srq.pd = pd;
	srq->v.srq.handle = srq->handle;
	srq->v.srq_type = xrcd ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	srq->v.xrcd = xrcd;
	srq->v.cq = cq;
	srq->v.srq_num = srq->srqn;
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	shim_live_add(context, &srq->v.srq);
	return &srq->v.srq;
}

SHIM_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	return shim_srq_create(pd, init->srq_context, &init->attr, NULL, NULL);
}

/*
 * verbs_context.create_srq_ex: basic SRQs, and XRC SRQs (IBV_SRQT_XRC with
 * an XRC domain, a CQ and a PD, as rdma-core's ibv_cmd_create_srq_ex()
 * requires); tag matching is not supported.
 */
struct ibv_srq *shim_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *init)
{
	const uint32_t xrc = IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	bool is_xrc = (init->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && init->srq_type == IBV_SRQT_XRC;

	(void)context;
	if (init->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | xrc))
		return shim_null(EOPNOTSUPP);
	if ((init->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && init->srq_type != IBV_SRQT_BASIC && !is_xrc)
		return shim_null(EOPNOTSUPP);
	if (!(init->comp_mask & IBV_SRQ_INIT_ATTR_PD) || init->pd == NULL)
		return shim_null(EINVAL);
	if (is_xrc && ((init->comp_mask & xrc) != xrc || init->xrcd == NULL || init->cq == NULL))
		return shim_null(EINVAL);
	return shim_srq_create(init->pd, init->srq_context, &init->attr, is_xrc ? init->xrcd : NULL,
			       is_xrc ? init->cq : NULL);
}

int shim_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	*srq_num = shim_srq(srq)->srqn;
	return 0;
}

SHIM_EXPORT int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct ipc_msg req, rsp;

	shim_req(&req, IPC_OP_MODIFY_SRQ);
	req.u.req_MODIFY_SRQ.handle = shim_srq(ibsrq)->handle;
	req.u.req_MODIFY_SRQ.mask = (uint32_t)mask;
	req.u.req_MODIFY_SRQ.max_wr = attr->max_wr;
	req.u.req_MODIFY_SRQ.srq_limit = attr->srq_limit;
	return shim_ret(shim_rpc(shim_ctx(ibsrq->context), &req, NULL, 0, &rsp, NULL));
}

SHIM_EXPORT int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ipc_msg req, rsp;
	int rc;

	shim_req(&req, IPC_OP_QUERY_SRQ);
	req.u.req_QUERY_SRQ.handle = shim_srq(ibsrq)->handle;
	rc = shim_rpc(shim_ctx(ibsrq->context), &req, NULL, 0, &rsp, NULL);
	if (rc)
		return shim_ret(rc);
	attr->max_wr = rsp.u.rsp_QUERY_SRQ.max_wr;
	attr->max_sge = rsp.u.rsp_QUERY_SRQ.max_sge;
	attr->srq_limit = rsp.u.rsp_QUERY_SRQ.srq_limit;
	return 0;
}

SHIM_EXPORT int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct shim_srq *srq = shim_srq(ibsrq);
	struct ipc_msg req, rsp;
	uint32_t events;
	int rc;

	shim_req(&req, IPC_OP_DESTROY_SRQ);
	req.u.req_DESTROY_SRQ.handle = srq->handle;
	rc = shim_destroy_rc(ibsrq->context, shim_rpc(shim_ctx(ibsrq->context), &req, NULL, 0, &rsp, NULL));
	if (rc)
		return shim_ret(rc); /* EBUSY while QPs use it */
	events = shim_live_del(ibsrq->context, ibsrq, &srq->async_events);
	if (!shim_ctx(ibsrq->context)->dead)
		shim_wait_async_acks(&ibsrq->mutex, &ibsrq->cond, &ibsrq->events_completed, events);
	munmap(srq->shm, srq->shm_size);
	pthread_spin_destroy(&srq->lock);
	free(srq);
	return 0;
}

/* ops.post_srq_recv: EINVAL for too many SGEs, ENOMEM when full; *bad at the first WR not posted. */
int shim_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct shim_srq *srq = shim_srq(ibsrq);
	int rc;

	pthread_spin_lock(&srq->lock);
	rc = shim_post_recv_ring(srq->ring, srq->max_wr, srq->max_sge, wr, bad);
	pthread_spin_unlock(&srq->lock);
	return shim_ret(rc);
}
