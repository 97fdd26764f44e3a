/* SPDX-License-Identifier: BSD-3-Clause */
/* verbs shim: shared receive queues (basic, XRC and tag matching SRQs). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

/* The TM part of a CREATE_SRQ answer: is it what we asked for and inside the memfd? */
static bool shim_srq_tm_ok(const struct ipc_create_srq_rsp *r, const struct ibv_tm_cap *tm)
{
	uint64_t ring = ipc_ring_bytes(r->tm_ops.entries, r->tm_ops.stride);

	return r->tm_ops.stride == sizeof(struct tm_op_wqe) && ring != 0 &&
	       r->max_ops >= tm->max_ops && r->max_ops < r->tm_ops.entries &&
	       r->max_num_tags == tm->max_num_tags && r->tm_ops.offset % 64 == 0 &&
	       r->tm_ops.offset + ring <= r->shm_size && r->tm_released % 4 == 0 &&
	       r->tm_released + (uint64_t)r->max_num_tags * sizeof(uint32_t) <= r->shm_size;
}

/*
 * @p xrcd and @p cq: an XRC SRQ's (IBV_SRQT_XRC), else NULL; @p tm and @p
 * cq: a tag matching SRQ's (IBV_SRQT_TM), else NULL.
 */
static struct ibv_srq *shim_srq_create(struct ibv_pd *pd, void *srq_context,
				       struct ibv_srq_attr *attr, struct ibv_xrcd *xrcd,
				       struct ibv_cq *cq, const struct ibv_tm_cap *tm)
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
	if (tm != NULL) {
		req.u.req_CREATE_SRQ.srq_type = IBV_SRQT_TM;
		req.u.req_CREATE_SRQ.cq = shim_cq(cq)->handle;
		req.u.req_CREATE_SRQ.max_num_tags = tm->max_num_tags;
		req.u.req_CREATE_SRQ.max_ops = tm->max_ops;
		srq->tm_posted = calloc(tm->max_num_tags ? tm->max_num_tags : 1, sizeof(uint32_t));
		if (srq->tm_posted == NULL) {
			free(srq);
			return shim_null(ENOMEM);
		}
	}
	rc = shim_rpc(shim_ctx(context), &req, NULL, 0, &rsp, rfds);
	if (rc == 0 && (rfds[0] < 0 || r->ring.stride != rq_wqe_stride(r->max_sge) ||
			ipc_ring_bytes(r->ring.entries, r->ring.stride) == 0 ||
			r->max_wr >= r->ring.entries || r->max_sge > WQE_MAX_SGE ||
			r->ring.offset + ipc_ring_bytes(r->ring.entries, r->ring.stride) > r->shm_size ||
			(tm != NULL && !shim_srq_tm_ok(r, tm))))
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
		free(srq->tm_posted);
		free(srq);
		return shim_null(rc);
	}
	srq->handle = r->handle;
	srq->srqn = r->srqn;
	srq->shm_size = r->shm_size;
	srq->max_wr = r->max_wr;
	srq->max_sge = r->max_sge;
	srq->ring = (struct spsc_ring *)((uint8_t *)srq->shm + r->ring.offset);
	srq->prod = __atomic_load_n(&srq->ring->prod, __ATOMIC_RELAXED);
	if (tm != NULL) {
		srq->tm_ops = (struct spsc_ring *)((uint8_t *)srq->shm + r->tm_ops.offset);
		srq->tm_prod = __atomic_load_n(&srq->tm_ops->prod, __ATOMIC_RELAXED);
		srq->tm_released = (const uint32_t *)((uint8_t *)srq->shm + r->tm_released);
		srq->max_num_tags = r->max_num_tags;
		srq->max_ops = r->max_ops;
	}
	shim_lock_init(&srq->lock);
	pthread_mutex_init(&srq->v.srq.mutex, NULL);
	pthread_cond_init(&srq->v.srq.cond, NULL);
	srq->v.srq.context = context;
	srq->v.srq.srq_context = srq_context;
	srq->v.srq.pd = pd;
	srq->v.srq.handle = srq->handle;
	srq->v.srq_type = xrcd ? IBV_SRQT_XRC : tm ? IBV_SRQT_TM : IBV_SRQT_BASIC;
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
	return shim_srq_create(pd, init->srq_context, &init->attr, NULL, NULL, NULL);
}

/*
 * verbs_context.create_srq_ex: basic SRQs, XRC SRQs (IBV_SRQT_XRC with an
 * XRC domain, a CQ and a PD, as rdma-core's ibv_cmd_create_srq_ex()
 * requires) and tag matching SRQs (IBV_SRQT_TM with a CQ, a PD and
 * tm_cap; the daemon bounds max_num_tags and max_ops: EINVAL, or
 * EOPNOTSUPP where it has no tag matching).
 */
struct ibv_srq *shim_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *init)
{
	const uint32_t xrc = IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	const uint32_t tm = IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	bool typed = init->comp_mask & IBV_SRQ_INIT_ATTR_TYPE;
	bool is_xrc = typed && init->srq_type == IBV_SRQT_XRC;
	bool is_tm = typed && init->srq_type == IBV_SRQT_TM;

	(void)context;
	if (init->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | xrc | tm))
		return shim_null(EOPNOTSUPP);
	if (typed && init->srq_type != IBV_SRQT_BASIC && !is_xrc && !is_tm)
		return shim_null(EOPNOTSUPP);
	if (!(init->comp_mask & IBV_SRQ_INIT_ATTR_PD) || init->pd == NULL)
		return shim_null(EINVAL);
	if (is_xrc && ((init->comp_mask & xrc) != xrc || init->xrcd == NULL || init->cq == NULL))
		return shim_null(EINVAL);
	if (is_tm && ((init->comp_mask & tm) != tm || init->cq == NULL ||
		      init->tm_cap.max_num_tags == 0 || init->tm_cap.max_ops == 0))
		return shim_null(EINVAL);
	return shim_srq_create(init->pd, init->srq_context, &init->attr, is_xrc ? init->xrcd : NULL,
			       is_xrc || is_tm ? init->cq : NULL, is_tm ? &init->tm_cap : NULL);
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
	shim_lock_destroy(&srq->lock);
	free(srq->tm_posted);
	free(srq);
	return 0;
}

/* ops.post_srq_recv: EINVAL for too many SGEs, ENOMEM when full; *bad at the first WR not posted. */
int shim_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct shim_srq *srq = shim_srq(ibsrq);
	int rc;

	bool owned = shim_lock(&srq->lock);

	rc = shim_post_recv_ring(srq->ring, &srq->prod, srq->max_wr, srq->max_sge, &srq->cons_seen,
				 wr, bad);
	shim_unlock(&srq->lock, owned);
	return shim_ret(rc);
}

_Static_assert((int)TM_OP_ADD == (int)IBV_WR_TAG_ADD && (int)TM_OP_DEL == (int)IBV_WR_TAG_DEL &&
	       (int)TM_OP_SYNC == (int)IBV_WR_TAG_SYNC, "tm_op_code is enum ibv_ops_wr_opcode");
_Static_assert((int)TM_OP_SIGNALED == (int)IBV_OPS_SIGNALED &&
	       (int)TM_OP_SYNC_CNT == (int)IBV_OPS_TM_SYNC, "tm_op_flag is enum ibv_ops_flags");

/* A free entry index of a TM SRQ (the engine released every ADD posted at it), or -1. */
static int64_t shim_tm_index(struct shim_srq *srq)
{
	for (uint32_t k = 0; k < srq->max_num_tags; k++) {
		uint32_t i = (srq->tm_next + k) % srq->max_num_tags;

		if (__atomic_load_n(&srq->tm_released[i], __ATOMIC_ACQUIRE) == srq->tm_posted[i]) {
			srq->tm_next = (i + 1) % srq->max_num_tags;
			return i;
		}
	}
	return -1;
}

/*
 * verbs_context.post_srq_ops (ibv_post_srq_ops(3)) on a TM SRQ: each
 * operation goes to the ops ring the SRQ's lcore consumes; an ADD gets its
 * handle (the index of a free entry) here, at once. EINVAL: not a TM SRQ,
 * an unknown opcode, too many SGEs, a DEL of a handle out of range;
 * ENOMEM: max_ops operations outstanding, or every entry in use (as mlx5).
 * *bad at the first operation not posted.
 */
int shim_post_srq_ops(struct ibv_srq *ibsrq, struct ibv_ops_wr *op, struct ibv_ops_wr **bad)
{
	struct shim_srq *srq = shim_srq(ibsrq);
	uint32_t room, n = 0;
	int rc = 0;

	if (srq->max_num_tags == 0) {
		*bad = op;
		return shim_ret(EINVAL);
	}
	bool owned = shim_lock(&srq->lock);

	room = shim_wq_room(srq->tm_ops, srq->tm_prod, srq->max_ops, 1, &srq->tm_cons_seen);
	for (; op != NULL; op = op->next, n++) {
		struct tm_op_wqe *w;
		int64_t idx = 0;

		if ((uint32_t)op->opcode > TM_OP_SYNC ||
		    (op->flags & ~(int)(IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC)) ||
		    (op->opcode == IBV_WR_TAG_ADD &&
		     (op->tm.add.num_sge < 0 || (uint32_t)op->tm.add.num_sge > srq->max_sge)) ||
		    (op->opcode == IBV_WR_TAG_DEL && op->tm.handle >= srq->max_num_tags))
			rc = EINVAL;
		else if (n == room &&
			 (room = shim_wq_room(srq->tm_ops, srq->tm_prod, srq->max_ops, n + 1,
					      &srq->tm_cons_seen)) == n)
			rc = ENOMEM;
		else if (op->opcode == IBV_WR_TAG_ADD && (idx = shim_tm_index(srq)) < 0)
			rc = ENOMEM;
		if (rc)
			break;
		w = spsc_ring_slot(srq->tm_ops, srq->tm_prod + n);
		memset(w, 0, offsetof(struct tm_op_wqe, sg_list));
		w->wr_id = op->wr_id;
		w->opcode = op->opcode;
		w->flags = (uint32_t)op->flags;
		w->unexpected_cnt = op->tm.unexpected_cnt;
		if (op->opcode == IBV_WR_TAG_DEL)
			w->handle = op->tm.handle;
		if (op->opcode == IBV_WR_TAG_ADD) {
			w->handle = (uint32_t)idx;
			w->recv_wr_id = op->tm.add.recv_wr_id;
			w->tag = op->tm.add.tag;
			w->mask = op->tm.add.mask;
			w->num_sge = (uint32_t)op->tm.add.num_sge;
			for (int k = 0; k < op->tm.add.num_sge; k++)
				w->sg_list[k] = (struct wr_sge){ op->tm.add.sg_list[k].addr,
								 op->tm.add.sg_list[k].length,
								 op->tm.add.sg_list[k].lkey };
			srq->tm_posted[idx]++;
			op->tm.handle = (uint32_t)idx;
		}
	}
	if (n) {
		srq->tm_prod += n;
		spsc_ring_publish_to(srq->tm_ops, srq->tm_prod);
	}
	shim_unlock(&srq->lock, owned);
	if (rc)
		*bad = op;
	return shim_ret(rc);
}
