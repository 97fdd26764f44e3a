/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: receive work queues, indirection tables and RSS QPs
 * (verbs_context create_wq, modify_wq, destroy_wq, create_rwq_ind_table,
 * destroy_rwq_ind_table; ibv_create_qp_ex with IBV_QP_INIT_ATTR_RX_HASH).
 *
 * - A WQ (IBV_WQT_RQ) is, to the daemon, a receive-only RAW_PACKET QP of
 *   this context with its own receive queue and the WQ's CQ: its WQ number
 *   is that QP's number, ibv_post_wq_recv writes its RQ ring, and its
 *   states map onto the QP's (RESET, RDY = RTR, ERR). Its async events are
 *   dropped (the QP is not the application's). So it needs what a
 *   RAW_PACKET QP needs (CAP_NET_RAW, a QP of the quota).
 * - An indirection table is the shim's alone: its WQs, kept from being
 *   destroyed while it names them (EBUSY, as Linux).
 * - An RSS QP (CREATE_RSS_QP) takes the table's WQ handles, the Toeplitz
 *   key and the hash fields; the daemon checks them all, and its flows
 *   steer each frame to the WQ the hash picks. It has no queue: posting
 *   on it is EINVAL, modify and query are EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

struct shim_wq {
	struct ibv_wq wq;         /* must be first */
	struct ibv_qp *qp;        /* the daemon's RAW_PACKET QP behind it */
	uint32_t tables;          /* indirection tables naming it (atomic) */
};
static inline struct shim_wq *shim_wq(struct ibv_wq *w) { return (struct shim_wq *)w; }

struct shim_ind_table {
	struct ibv_rwq_ind_table t; /* must be first */
	uint32_t log_size;
	uint32_t qps;             /* RSS QPs using it (atomic) */
	struct ibv_wq *wq[IPC_RSS_MAX_ENTRIES];
};
static inline struct shim_ind_table *shim_ind(struct ibv_rwq_ind_table *t)
{
	return (struct shim_ind_table *)t;
}

static int shim_wq_post_recv(struct ibv_wq *wq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return shim_post_recv(shim_wq(wq)->qp, wr, bad);
}

struct ibv_wq *shim_create_wq(struct ibv_context *context, struct ibv_wq_init_attr *attr)
{
	struct ibv_qp_init_attr_ex qa;
	struct shim_wq *wq;

	if (attr->wq_type != IBV_WQT_RQ)
		return shim_null(EOPNOTSUPP);
	if ((attr->comp_mask & ~(uint32_t)IBV_WQ_INIT_ATTR_FLAGS) ||
	    ((attr->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) && attr->create_flags != 0))
		return shim_null(EOPNOTSUPP); /* no VLAN stripping, FCS, padding offloads */
	if (attr->pd == NULL || attr->cq == NULL || attr->max_wr == 0 ||
	    attr->pd->context != context || attr->cq->context != context)
		return shim_null(EINVAL);
	wq = calloc(1, sizeof(*wq));
	if (wq == NULL)
		return shim_null(ENOMEM);
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RAW_PACKET;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = attr->pd;
	qa.send_cq = attr->cq;
	qa.recv_cq = attr->cq;
	qa.cap.max_recv_wr = attr->max_wr;
	qa.cap.max_recv_sge = attr->max_sge;
	wq->qp = shim_create_qp_ex(context, &qa);
	if (wq->qp == NULL) {
		int e = errno;

		free(wq);
		return shim_null(e);
	}
	/* its events name no object of the application's: drop them */
	shim_live_del(context, wq->qp, &shim_qp(wq->qp)->async_events);
	attr->max_wr = qa.cap.max_recv_wr;
	attr->max_sge = qa.cap.max_recv_sge;
	wq->wq.context = context;
	wq->wq.wq_context = attr->wq_context;
	wq->wq.pd = attr->pd;
	wq->wq.cq = attr->cq;
	wq->wq.wq_num = wq->qp->qp_num;
	wq->wq.handle = wq->qp->handle;
	wq->wq.state = IBV_WQS_RESET;
	wq->wq.wq_type = IBV_WQT_RQ;
	wq->wq.post_recv = shim_wq_post_recv;
	return &wq->wq;
}

/* One QP modify to @p state (RAW_PACKET INIT names its port). */
static int shim_wq_qp_to(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = { .qp_state = state, .port_num = 1 };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | (state == IBV_QPS_INIT ? IBV_QP_PORT : 0));
}

/*
 * IBV_WQ_ATTR_STATE (with IBV_WQ_ATTR_CURR_STATE, which must be the WQ's
 * state): RESET -> RDY, RDY -> RDY, any -> ERR, any -> RESET, as mlx5.
 * IBV_WQ_ATTR_FLAGS with a nonzero flags_mask is EOPNOTSUPP (no offloads).
 */
int shim_modify_wq(struct ibv_wq *ibwq, struct ibv_wq_attr *attr)
{
	struct shim_wq *wq = shim_wq(ibwq);
	const uint32_t known = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE | IBV_WQ_ATTR_FLAGS;
	enum ibv_wq_state cur = ibwq->state, next;
	int rc = 0;

	if (attr->attr_mask & ~known)
		return shim_ret(EINVAL);
	if ((attr->attr_mask & IBV_WQ_ATTR_FLAGS) && attr->flags_mask != 0)
		return shim_ret(EOPNOTSUPP);
	if ((attr->attr_mask & IBV_WQ_ATTR_CURR_STATE) && attr->curr_wq_state != cur)
		return shim_ret(EINVAL);
	if (!(attr->attr_mask & IBV_WQ_ATTR_STATE))
		return 0;
	next = attr->wq_state;
	switch (next) {
	case IBV_WQS_RDY:
		if (cur == IBV_WQS_RDY)
			return 0;
		if (cur != IBV_WQS_RESET)
			return shim_ret(EINVAL);
		rc = shim_wq_qp_to(wq->qp, IBV_QPS_INIT);
		if (rc == 0)
			rc = shim_wq_qp_to(wq->qp, IBV_QPS_RTR);
		if (rc && wq->qp->state != IBV_QPS_RESET)
			(void)shim_wq_qp_to(wq->qp, IBV_QPS_RESET); /* all or nothing */
		break;
	case IBV_WQS_ERR:
		rc = shim_wq_qp_to(wq->qp, IBV_QPS_ERR);
		break;
	case IBV_WQS_RESET:
		rc = shim_wq_qp_to(wq->qp, IBV_QPS_RESET);
		break;
	default:
		return shim_ret(EINVAL);
	}
	if (rc)
		return shim_ret(rc);
	ibwq->state = next;
	return 0;
}

int shim_destroy_wq(struct ibv_wq *ibwq)
{
	struct shim_wq *wq = shim_wq(ibwq);
	int rc;

	if (__atomic_load_n(&wq->tables, __ATOMIC_ACQUIRE) != 0)
		return shim_ret(EBUSY); /* an indirection table names it */
	rc = ibv_destroy_qp(wq->qp);
	if (rc)
		return shim_ret(rc);
	free(wq);
	return 0;
}

struct ibv_rwq_ind_table *shim_create_rwq_ind_table(struct ibv_context *context,
						    struct ibv_rwq_ind_table_init_attr *attr)
{
	static uint32_t next_num;
	struct shim_ind_table *t;
	uint32_t n;

	if (attr->comp_mask != 0)
		return shim_null(EINVAL);
	if (attr->log_ind_tbl_size > 6 || attr->ind_tbl == NULL)
		return shim_null(EINVAL);
	n = 1u << attr->log_ind_tbl_size;
	for (uint32_t i = 0; i < n; i++)
		if (attr->ind_tbl[i] == NULL || attr->ind_tbl[i]->context != context ||
		    attr->ind_tbl[i]->wq_type != IBV_WQT_RQ)
			return shim_null(EINVAL);
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return shim_null(ENOMEM);
	t->log_size = attr->log_ind_tbl_size;
	for (uint32_t i = 0; i < n; i++) {
		t->wq[i] = attr->ind_tbl[i];
		__atomic_add_fetch(&shim_wq(t->wq[i])->tables, 1, __ATOMIC_ACQ_REL);
	}
	t->t.context = context;
	t->t.ind_tbl_num = __atomic_add_fetch(&next_num, 1, __ATOMIC_RELAXED);
	t->t.ind_tbl_handle = (int)t->t.ind_tbl_num;
	return &t->t;
}

int shim_destroy_rwq_ind_table(struct ibv_rwq_ind_table *it)
{
	struct shim_ind_table *t = shim_ind(it);
	uint32_t n = 1u << t->log_size;

	if (__atomic_load_n(&t->qps, __ATOMIC_ACQUIRE) != 0)
		return shim_ret(EBUSY); /* an RSS QP uses it */
	for (uint32_t i = 0; i < n; i++)
		__atomic_sub_fetch(&shim_wq(t->wq[i])->tables, 1, __ATOMIC_ACQ_REL);
	free(t);
	return 0;
}

_Static_assert(sizeof(((struct ibv_rx_hash_conf *)0)->rx_hash_key_len) == 1, "key length u8");

struct ibv_qp *shim_create_rss_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	const uint64_t need = IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_IND_TABLE |
			      IBV_QP_INIT_ATTR_PD;
	const uint64_t known = need | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	struct ipc_create_rss_qp_req *q;
	struct shim_ind_table *t;
	struct ipc_msg req, rsp;
	struct shim_qp *qp;
	uint32_t n;
	int rc;

	if ((attr->comp_mask & need) != need || attr->pd == NULL ||
	    attr->rwq_ind_tbl == NULL || attr->qp_type != IBV_QPT_RAW_PACKET || attr->srq != NULL)
		return shim_null(EINVAL);
	if ((attr->comp_mask & ~known) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags))
		return shim_null(EOPNOTSUPP);
	if (attr->rx_hash_conf.rx_hash_key_len > sizeof(q->key) ||
	    (attr->rx_hash_conf.rx_hash_key_len && attr->rx_hash_conf.rx_hash_key == NULL))
		return shim_null(EINVAL);
	t = shim_ind(attr->rwq_ind_tbl);
	if (t->t.context != context)
		return shim_null(EINVAL);
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return shim_null(ENOMEM);
	shim_req(&req, IPC_OP_CREATE_RSS_QP);
	q = &req.u.req_CREATE_RSS_QP;
	q->user_handle = (uintptr_t)qp;
	q->pd = shim_pd(attr->pd)->handle;
	q->log_size = t->log_size;
	q->hash_function = attr->rx_hash_conf.rx_hash_function;
	q->key_len = attr->rx_hash_conf.rx_hash_key_len;
	q->fields_mask = attr->rx_hash_conf.rx_hash_fields_mask;
	if (q->key_len)
		memcpy(q->key, attr->rx_hash_conf.rx_hash_key, q->key_len);
	n = 1u << t->log_size;
	for (uint32_t i = 0; i < n; i++)
		q->wq[i] = shim_qp(shim_wq(t->wq[i])->qp)->handle;
	rc = shim_rpc(shim_ctx(context), &req, NULL, 0, &rsp, NULL);
	if (rc) {
		free(qp);
		return shim_null(rc);
	}
	shim_qp_init_common(qp, context, attr->qp_context, rsp.u.rsp_CREATE_RSS_QP.handle,
			    rsp.u.rsp_CREATE_RSS_QP.num, IBV_QPT_RAW_PACKET);
	qp->rss_table = t;
	__atomic_add_fetch(&t->qps, 1, __ATOMIC_ACQ_REL);
	qp->qp.pd = attr->pd;
	memset(&attr->cap, 0, sizeof(attr->cap)); /* no queue of its own */
	shim_live_add(context, &qp->qp);
	return &qp->qp;
}

void shim_rss_qp_gone(struct shim_qp *qp)
{
	if (qp->rss_table != NULL)
		__atomic_sub_fetch(&((struct shim_ind_table *)qp->rss_table)->qps, 1,
				   __ATOMIC_ACQ_REL);
	qp->rss_table = NULL;
}
