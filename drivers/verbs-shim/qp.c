/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: queue pairs. Create/modify/query/destroy go to the daemon (which
 * owns the QP state machine, lib/ctl); posting writes WQEs straight into the
 * shared SQ/RQ rings and releases the producer index, the doorbell of a
 * polling daemon, with no system call.
 *
 * Posting errors follow rdma-core providers (rxe): the errno value is
 * returned and *bad_wr points at the first WR not posted; the WRs before it
 * are posted.
 *   EINVAL  QP state (send: below RTS; receive: RESET), too many SGEs,
 *           opcode not valid for the QP type, inline data too long,
 *           UD without an AH, receive on a QP that uses an SRQ;
 *   ENOMEM  the queue is full.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

_Static_assert(sizeof(struct wr_sge) == sizeof(struct ibv_sge), "SGEs are copied as they are");

/* ---- create / modify / query / destroy ---- */

static bool shim_ring_desc_ok(const struct ipc_ring_desc *d, uint32_t stride, uint32_t cap,
			      uint64_t shm_size)
{
	size_t bytes = ipc_ring_bytes(d->entries, d->stride);

	return d->stride == stride && bytes != 0 && d->offset + bytes <= shm_size && cap < d->entries;
}

static int shim_qp_map(struct shim_qp *qp, const struct ipc_create_qp_rsp *r, int fd, bool srq)
{
	void *shm;

	if (!shim_ring_desc_ok(&r->sq, sizeof(struct sq_wqe), r->cap.max_send_wr, r->shm_size) ||
	    (!srq && !shim_ring_desc_ok(&r->rq, rq_wqe_stride(r->cap.max_recv_sge),
					 r->cap.max_recv_wr, r->shm_size)) ||
	    r->cap.max_send_sge > WQE_MAX_SGE || r->cap.max_recv_sge > WQE_MAX_SGE ||
	    r->cap.max_inline_data > WQE_MAX_INLINE)
		return EPROTO;
	shm = shim_map_shm(fd, r->shm_size);
	if (shm == NULL)
		return errno;
	qp->shm = shm;
	qp->shm_size = r->shm_size;
	qp->sq = (struct spsc_ring *)((uint8_t *)shm + r->sq.offset);
	qp->rq = srq ? NULL : (struct spsc_ring *)((uint8_t *)shm + r->rq.offset);
	qp->sq_prod = __atomic_load_n(&qp->sq->prod, __ATOMIC_RELAXED);
	qp->rq_prod = qp->rq ? __atomic_load_n(&qp->rq->prod, __ATOMIC_RELAXED) : 0;
	return 0;
}

int shim_check_send_ops(enum ibv_qp_type type, uint64_t f)
{
	uint64_t ok = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

	if (type == IBV_QPT_XRC_SEND) /* sends as RC does */
		type = IBV_QPT_RC;
	else if (type == IBV_QPT_XRC_RECV) /* sends nothing */
		return f ? EOPNOTSUPP : 0;

	if (type == IBV_QPT_UC || type == IBV_QPT_RC)
		ok |= IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		      IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
	if (type == IBV_QPT_RC)
		ok |= IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV |
		      IBV_QP_EX_WITH_ATOMIC_WRITE;
	return (f & ~ok) ? EOPNOTSUPP : 0;
}

/*
 * What a QP of its type must name (EINVAL otherwise), as rdma-core's
 * ibv_cmd_create_qp_ex2(): XRC_RECV (TGT) an XRC domain and nothing else
 * of its own; XRC_SEND (INI) a PD and a send CQ; the others a PD and both CQs.
 */
static int shim_qp_objs_ok(const struct ibv_qp_init_attr_ex *attr)
{
	bool has_pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) && attr->pd != NULL;

	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) && attr->xrcd != NULL ? 0 : EINVAL;
	if (!has_pd || attr->send_cq == NULL)
		return EINVAL;
	if (attr->qp_type == IBV_QPT_XRC_SEND)
		return 0;
	return attr->recv_cq == NULL ? EINVAL : 0;
}

/* verbs_context.create_qp_ex, and the body of ibv_create_qp. */
struct ibv_qp *shim_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_XRCD;
	struct ipc_msg req, rsp;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	bool tgt = attr->qp_type == IBV_QPT_XRC_RECV;
	bool xrc = tgt || attr->qp_type == IBV_QPT_XRC_SEND;
	struct shim_qp *qp;
	int rc;

	if (attr->comp_mask & (IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_IND_TABLE))
		return shim_create_rss_qp(context, attr); /* wq.c */
	if (attr->comp_mask & ~known)
		return shim_null(EOPNOTSUPP);
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD && !xrc &&
	    attr->qp_type != IBV_QPT_RAW_PACKET) /* the daemon says whether it has RAW_PACKET QPs */
		return shim_null(EOPNOTSUPP);
	if ((rc = shim_qp_objs_ok(attr)) != 0)
		return shim_null(rc);
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)
		return shim_null(EOPNOTSUPP);
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (rc = shim_check_send_ops(attr->qp_type, attr->send_ops_flags)) != 0)
		return shim_null(rc);
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return shim_null(ENOMEM);

	shim_req(&req, IPC_OP_CREATE_QP);
	req.u.req_CREATE_QP.user_handle = (uintptr_t)qp;
	if (!tgt) {
		req.u.req_CREATE_QP.pd = shim_pd(attr->pd)->handle;
		req.u.req_CREATE_QP.send_cq = shim_cq(attr->send_cq)->handle;
	}
	if (!xrc) {
		req.u.req_CREATE_QP.recv_cq = shim_cq(attr->recv_cq)->handle;
		req.u.req_CREATE_QP.srq = attr->srq ? shim_srq(attr->srq)->handle : IPC_HANDLE_NONE;
	}
	if (tgt)
		req.u.req_CREATE_QP.xrcd = shim_xrcd(attr->xrcd)->handle;
	req.u.req_CREATE_QP.qp_type = attr->qp_type;
	req.u.req_CREATE_QP.sq_sig_all = attr->sq_sig_all != 0;
	req.u.req_CREATE_QP.send_ops_flags =
		(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ? attr->send_ops_flags : 0;
	ipc_cap_from_ibv(&attr->cap, &req.u.req_CREATE_QP.cap);
	rc = shim_rpc(shim_ctx(context), &req, NULL, 0, &rsp, rfds);
	if (rc == 0 && rfds[0] < 0 && !tgt)
		rc = EPROTO;
	if (rc == 0 && !tgt) { /* a TGT QP has no queue of the application's */
		rc = shim_qp_map(qp, &rsp.u.rsp_CREATE_QP, rfds[0], attr->srq != NULL || xrc);
		if (rc) {
			struct ipc_msg d, dr;

			shim_req(&d, IPC_OP_DESTROY_QP);
			d.u.req_DESTROY_QP.handle = rsp.u.rsp_CREATE_QP.handle;
			shim_rpc(shim_ctx(context), &d, NULL, 0, &dr, NULL);
		}
	}
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		if (rfds[i] >= 0)
			close(rfds[i]);
	if (rc) {
		free(qp);
		return shim_null(rc);
	}
	shim_qp_init_common(qp, context, attr->qp_context, rsp.u.rsp_CREATE_QP.handle,
			    rsp.u.rsp_CREATE_QP.qpn, attr->qp_type);
	qp->sq_sig_all = attr->sq_sig_all != 0;
	ipc_cap_to_ibv(&rsp.u.rsp_CREATE_QP.cap, &qp->cap);
	attr->cap = qp->cap; /* report what the QP really holds, as providers do */
	qp->qp.pd = tgt ? NULL : attr->pd;
	qp->qp.send_cq = tgt ? NULL : attr->send_cq;
	qp->qp.recv_cq = xrc ? NULL : attr->recv_cq;
	qp->qp.srq = xrc ? NULL : attr->srq;
	if (tgt) {
		qp->xrcd = attr->xrcd;
		qp->comp_mask |= 1u << 0; /* VERBS_QP_XRCD */
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		qp->has_qpx = true;
		qp->comp_mask |= 1u << 1; /* VERBS_QP_EX */
		shim_qp_ex_init(qp, attr->send_ops_flags);
	}
	shim_live_add(context, &qp->qp);
	if (qp->qp.qp_type == IBV_QPT_UD)
		shim_ud_add(qp);
	return &qp->qp;
}

void shim_qp_init_common(struct shim_qp *qp, struct ibv_context *context, void *qp_context,
			 uint32_t handle, uint32_t qpn, enum ibv_qp_type type)
{
	qp->handle = handle;
	shim_lock_init(&qp->sq_lock);
	shim_lock_init(&qp->rq_lock);
	pthread_mutex_init(&qp->qp.mutex, NULL);
	pthread_cond_init(&qp->qp.cond, NULL);
	qp->qp.context = context;
	qp->qp.qp_context = qp_context;
	qp->qp.handle = handle;
	qp->qp.qp_num = qpn;
	qp->qp.state = IBV_QPS_RESET;
	qp->qp.qp_type = type;
}

SHIM_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	memset(&ex, 0, sizeof(ex));
	ex.qp_context = attr->qp_context;
	ex.send_cq = attr->send_cq;
	ex.recv_cq = attr->recv_cq;
	ex.srq = attr->srq;
	ex.cap = attr->cap;
	ex.qp_type = attr->qp_type;
	ex.sq_sig_all = attr->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = shim_create_qp_ex(pd->context, &ex);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

SHIM_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct shim_qp *qp = shim_qp(ibqp);

	return qp->has_qpx ? &qp->qpx : NULL;
}

/* Remove the QP's pending completions from its CQs (RESET, destroy). */
static void shim_qp_clean_cqs(struct ibv_qp *ibqp)
{
	if (ibqp->send_cq != NULL)
		shim_cq_clean(shim_cq(ibqp->send_cq), ibqp->qp_num);
	if (ibqp->recv_cq != NULL && ibqp->recv_cq != ibqp->send_cq)
		shim_cq_clean(shim_cq(ibqp->recv_cq), ibqp->qp_num);
}

SHIM_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct shim_qp *qp = shim_qp(ibqp);
	struct ipc_msg req, rsp;
	int rc;

	shim_req(&req, IPC_OP_MODIFY_QP);
	req.u.req_MODIFY_QP.handle = qp->handle;
	req.u.req_MODIFY_QP.mask = (uint32_t)attr_mask;
	ipc_qp_attr_from_ibv(attr, &req.u.req_MODIFY_QP.attr);
	rc = shim_rpc(shim_ctx(ibqp->context), &req, NULL, 0, &rsp, NULL);
	if (rc)
		return shim_ret(rc);
	bool sq_owned = shim_lock(&qp->sq_lock), rq_owned = shim_lock(&qp->rq_lock);

	ibqp->state = (enum ibv_qp_state)rsp.u.rsp_MODIFY_QP.state;
	shim_unlock(&qp->rq_lock, rq_owned);
	shim_unlock(&qp->sq_lock, sq_owned);
	/* The daemon answered after the engine dropped the QP's work: no CQE follows. */
	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET)
		shim_qp_clean_cqs(ibqp);
	return 0;
}

/*
 * verbs_context.modify_qp_rate_limit (ibv_modify_qp_rate_limit): an RTS -> RTS
 * modify with IBV_QP_RATE_LIMIT, as rdma-core's mlx5 provider does it.
 * rate_limit is in kbps, 0 lifts the limit; the engine paces packets, so
 * max_burst_sz and typical_pkt_sz are accepted and not used (bursts are one
 * packet). EINVAL: comp_mask set, QP not in RTS, rate outside
 * packet_pacing_caps, QP type not in its supported_qpts.
 */
int shim_modify_qp_rate_limit(struct ibv_qp *ibqp, struct ibv_qp_rate_limit_attr *attr)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };

	if (attr == NULL || attr->comp_mask != 0)
		return shim_ret(EINVAL);
	a.rate_limit = attr->rate_limit;
	return ibv_modify_qp(ibqp, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT);
}

SHIM_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
			     struct ibv_qp_init_attr *init_attr)
{
	struct shim_qp *qp = shim_qp(ibqp);
	struct ipc_msg req, rsp;
	uint8_t notify;
	uint32_t rate_limit;
	int rc;

	shim_req(&req, IPC_OP_QUERY_QP);
	req.u.req_QUERY_QP.handle = qp->handle;
	req.u.req_QUERY_QP.mask = (uint32_t)attr_mask;
	rc = shim_rpc(shim_ctx(ibqp->context), &req, NULL, 0, &rsp, NULL);
	if (rc)
		return shim_ret(rc);
	/* The kernel (ib_uverbs_query_qp) never writes these two: leave the
	 * caller's values as they were, as Linux does. */
	notify = attr->en_sqd_async_notify;
	rate_limit = attr->rate_limit;
	ipc_qp_attr_to_ibv(&rsp.u.rsp_QUERY_QP.attr, attr);
	attr->en_sqd_async_notify = notify;
	attr->rate_limit = rate_limit;
	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = ibqp->qp_context;
		init_attr->send_cq = ibqp->send_cq;
		init_attr->recv_cq = ibqp->recv_cq;
		init_attr->srq = ibqp->srq;
		ipc_cap_to_ibv(&rsp.u.rsp_QUERY_QP.init_cap, &init_attr->cap);
		init_attr->qp_type = ibqp->qp_type;
		init_attr->sq_sig_all = (int)rsp.u.rsp_QUERY_QP.sq_sig_all;
	}
	if (attr_mask & IBV_QP_STATE) /* libibverbs caches it only then */
		ibqp->state = attr->qp_state;
	return 0;
}

SHIM_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct shim_qp *qp = shim_qp(ibqp);
	struct ipc_msg req, rsp;
	uint32_t events;
	int rc;

	if (ibqp->qp_type == IBV_QPT_UD) {
		shim_ud_drain_qp(qp); /* its posted sends go out first, as a NIC's would */
		shim_ud_del(qp);      /* no ibv_destroy_ah waits for it once it is gone */
	}
	shim_req(&req, IPC_OP_DESTROY_QP);
	req.u.req_DESTROY_QP.handle = qp->handle;
	rc = shim_destroy_rc(ibqp->context, shim_rpc(shim_ctx(ibqp->context), &req, NULL, 0, &rsp, NULL));
	if (rc) {
		if (ibqp->qp_type == IBV_QPT_UD)
			shim_ud_add(qp);
		return shim_ret(rc);
	}
	events = shim_live_del(ibqp->context, ibqp, &qp->async_events);
	if (!shim_ctx(ibqp->context)->dead)
		shim_wait_async_acks(&ibqp->mutex, &ibqp->cond, &ibqp->events_completed, events);
	shim_qp_clean_cqs(ibqp);
	if (qp->shm != NULL) /* an XRC TGT QP has none */
		munmap(qp->shm, qp->shm_size);
	shim_rss_qp_gone(qp);
	shim_lock_destroy(&qp->sq_lock);
	shim_lock_destroy(&qp->rq_lock);
	free(qp);
	return 0;
}

SHIM_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	return 0; /* no in-order guarantee is advertised */
}

SHIM_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return shim_ret(EOPNOTSUPP);
}

SHIM_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return shim_ret(EOPNOTSUPP);
}

/* ---- posting (application side, no system call) ---- */

static bool shim_send_state_ok(enum ibv_qp_state s)
{
	/* Linux rxe: posting a send below RTS is EINVAL; SQD/SQE/ERR accept (and flush). */
	return s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE || s == IBV_QPS_ERR;
}

/*
 * The WR opcode table's entry (wqe.h) for @p op on a QP of type @p t, kind
 * WR_KIND_NONE when it cannot post it. TSO and DRIVER1 are not supported.
 * FLUSH (14, rdma-core 45's IBV_WR_FLUSH) is the engine's, but struct
 * ibv_send_wr of rdma-core 44 cannot carry its placement type and
 * selectivity, and its ibv_qp_ex has no wr_flush: no application reaches it.
 */
static struct wr_opcode_desc shim_opcode_on(enum ibv_qp_type t, enum ibv_wr_opcode op)
{
	struct wr_opcode_desc d = wr_opcode_desc((uint32_t)op);

	if ((uint32_t)op == WR_FLUSH)
		d.kind = WR_KIND_NONE;
	if (t == IBV_QPT_XRC_SEND) { /* an XRC INI QP sends as RC (IBTA 9.8.2) */
		/* IBTA 1.5 ATOMIC WRITE has no XRC opcode in the engine (nor in rxe) */
		if ((uint32_t)op == WR_ATOMIC_WRITE)
			d.kind = WR_KIND_NONE;
		t = IBV_QPT_RC;
	}
	if (!wr_desc_valid_on(&d, (uint32_t)t))
		d.kind = WR_KIND_NONE;
	return d;
}

bool shim_opcode_ok(enum ibv_qp_type t, enum ibv_wr_opcode op)
{
	return shim_opcode_on(t, op).kind != WR_KIND_NONE;
}

/* What shim_check_send() learnt of a valid send WR, for shim_fill_send(). */
struct shim_send_info {
	struct wr_opcode_desc op; /* the opcode table's entry, read once per post */
	uint32_t inline_len;      /* IBV_SEND_INLINE: the bytes of its SGEs; else 0 */
};

/*
 * Everything that makes a send WR invalid (EINVAL), checked before it takes
 * a slot. @return 0 and what the fill needs in @p info, or EINVAL
 */
static int shim_check_send(const struct shim_qp *qp, const struct ibv_send_wr *wr,
			   struct shim_send_info *info)
{
	enum ibv_qp_type t = qp->qp.qp_type;

	info->op = shim_opcode_on(t, wr->opcode);
	info->inline_len = 0;
	if (info->op.kind == WR_KIND_NONE || wr->num_sge < 0)
		return EINVAL;
	if (t == IBV_QPT_UD && wr->wr.ud.ah == NULL)
		return EINVAL;
	if (wr->opcode == IBV_WR_BIND_MW && wr->bind_mw.mw == NULL)
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint64_t total = 0;

		if (!wr_kind_sends_payload(info->op.kind))
			return EINVAL; /* READ, ATOMIC */
		for (int i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > qp->cap.max_inline_data)
			return EINVAL;
		info->inline_len = (uint32_t)total;
		return 0;
	}
	return (uint32_t)wr->num_sge > qp->cap.max_send_sge ? EINVAL : 0;
}

/* Fill send WR @p wr, checked by shim_check_send() (@p info), into the WQE @p w. */
static void shim_fill_send(struct shim_qp *qp, struct sq_wqe *w, const struct ibv_send_wr *wr,
			   const struct shim_send_info *info)
{
	memset(w, 0, SQ_WQE_HEAD_BYTES); /* the AV line is UD's only (wqe.h) */
	w->wr_id = wr->wr_id;
	w->opcode = (uint8_t)wr->opcode;
	w->send_flags = wr->send_flags;
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint8_t *dst = shim_wqe_payload(qp, w, true, info->inline_len);
		uint32_t total = 0;

		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(dst + total, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			total += wr->sg_list[i].length;
		}
		w->inline_len = (uint16_t)total;
	} else {
		shim_sge_copy(shim_wqe_payload(qp, w, false, (size_t)wr->num_sge), wr->sg_list,
			      (size_t)wr->num_sge);
		w->num_sge = (uint8_t)wr->num_sge;
	}
	const struct wr_opcode_desc op = info->op;

	switch (op.kind) {
	case WR_KIND_WRITE:
	case WR_KIND_READ:
	case WR_KIND_ATOMIC_WRITE: /* its 8 bytes are the SGEs' (or inline) */
		w->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		w->wr.rdma.rkey = wr->wr.rdma.rkey;
		break;
	case WR_KIND_ATOMIC:
		w->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		w->wr.atomic.rkey = wr->wr.atomic.rkey;
		w->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		w->wr.atomic.swap = wr->wr.atomic.swap;
		break;
	case WR_KIND_LOCAL:
		w->num_sge = 0; /* the engine reads no SGEs of a local operation */
		if (wr->opcode == IBV_WR_BIND_MW)
			shim_fill_bind(w, wr->bind_mw.mw, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
		break;
	default:
		break;
	}
	if (op.imm == WR_IMM_INV)
		w->imm_data = wr->invalidate_rkey;
	else if (op.imm == WR_IMM_DATA)
		w->imm_data = wr->imm_data;
	if (qp->qp.qp_type == IBV_QPT_XRC_SEND)
		w->xrc_remote_srqn = wr->qp_type.xrc.remote_srqn;
	if (qp->qp.qp_type == IBV_QPT_UD) {
		w->wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
		w->wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
		w->av = shim_ah(wr->wr.ud.ah)->av;
	}
}

int shim_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct shim_qp *qp = shim_qp(ibqp);
	uint32_t n = 0, room;
	bool bell = false;
	int rc = 0;

	bool owned = shim_lock(&qp->sq_lock);

	if (qp->sq == NULL || !shim_send_state_ok(ibqp->state)) { /* XRC TGT: no send queue */
		rc = EINVAL;
		goto out;
	}
	room = shim_wq_room(qp->sq, qp->sq_prod, qp->cap.max_send_wr, 1, &qp->sq_cons_seen);
	for (; wr != NULL; wr = wr->next, n++) {
		struct shim_send_info info;

		rc = shim_check_send(qp, wr, &info);
		if (rc == 0 && n == room) {
			room = shim_wq_room(qp->sq, qp->sq_prod, qp->cap.max_send_wr, n + 1,
					    &qp->sq_cons_seen);
			if (n == room)
				rc = ENOMEM;
		}
		if (rc)
			break;
		shim_sq_prefetch(qp, n + SHIM_WQ_PREFETCH, room);
		shim_fill_send(qp, spsc_ring_slot(qp->sq, qp->sq_prod + n), wr, &info);
	}
out:
	if (n)
		bell = shim_sq_publish(qp, n); /* release: the doorbell */
	shim_unlock(&qp->sq_lock, owned);
	if (bell)
		shim_sq_ring_bell(qp);
	if (rc)
		*bad = wr;
	return shim_ret(rc);
}

/* Fill one receive WQE (num_sge checked). */
static void shim_fill_recv(struct rq_wqe *w, const struct ibv_recv_wr *wr)
{
	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	w->reserved = 0;
	if (wr->num_sge > 0)
		shim_sge_copy(w->sg_list, wr->sg_list, (size_t)wr->num_sge);
}

/* Post @p wr to @p ring of capacity @p cap; shared by QP receive queues and SRQs. */
int shim_post_recv_ring(struct spsc_ring *ring, uint32_t *prod, uint32_t cap, uint32_t max_sge,
			uint32_t *cons_seen, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	uint32_t room = shim_wq_room(ring, *prod, cap, 1, cons_seen);
	uint32_t n = 0;
	int rc = 0;

	for (; wr != NULL; wr = wr->next, n++) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
			rc = EINVAL;
		else if (n == room && (room = shim_wq_room(ring, *prod, cap, n + 1, cons_seen)) == n)
			rc = ENOMEM;
		if (rc)
			break;
		shim_fill_recv(spsc_ring_slot(ring, *prod + n), wr);
		if (n + SHIM_WQ_PREFETCH < room)
			spsc_ring_prefetchw(spsc_ring_slot(ring, *prod + n + SHIM_WQ_PREFETCH));
	}
	if (n) {
		*prod += n;
		spsc_ring_publish_to(ring, *prod);
	}
	if (rc)
		*bad = wr;
	return rc;
}

int shim_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct shim_qp *qp = shim_qp(ibqp);
	int rc;
	bool owned = shim_lock(&qp->rq_lock);

	/* Linux rxe: a receive may be posted from INIT on; a QP with an SRQ has no RQ (XRC neither). */
	if (qp->rq == NULL || ibqp->state == IBV_QPS_RESET) {
		*bad = wr;
		rc = EINVAL;
	} else {
		rc = shim_post_recv_ring(qp->rq, &qp->rq_prod, qp->cap.max_recv_wr,
					 qp->cap.max_recv_sge, &qp->rq_cons_seen, wr, bad);
	}
	shim_unlock(&qp->rq_lock, owned);
	return shim_ret(rc);
}
