/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdmacm shim: QPs and SRQs on ids, and the QP walk.
 *
 * As librdmacm: rdma_create_qp(_ex) uses the device's default PD when none
 * is given, creates a completion channel and a CQ for each queue the
 * attributes leave without one, creates the QP with ibv_create_qp_ex (our
 * libibverbs), then moves it to INIT with the CM's attributes
 * (rdma_init_qp_attr); a UD QP goes on to RTR and RTS at once (SQ PSN 0).
 * A connected QP reaches RTR and RTS with the CM's attributes when the
 * connection is accepted (rdma_accept on the passive side, CONNECT_RESPONSE
 * on the active one, which then sends the RTU), and ERR on reject or
 * disconnect.
 */
#include <limits.h>
#include <string.h>

#include "rcm.h"

static int rcm_modify(struct rcm_id *p, enum ibv_qp_state state, struct ibv_qp_attr *attr,
		      int *mask)
{
	attr->qp_state = state;
	return rdma_init_qp_attr(&p->id, attr, mask);
}

int rcm_modify_qp_rtr(struct rcm_id *p, uint8_t resp_res)
{
	struct ibv_qp_attr attr;
	int mask;

	if (p->id.qp == NULL)
		return 0;
	memset(&attr, 0, sizeof(attr));
	/* Refresh INIT with the CM's values (the QP may have been made elsewhere). */
	if (rcm_modify(p, IBV_QPS_INIT, &attr, &mask))
		return -1;
	if (rcm_seterrno(ibv_modify_qp(p->id.qp, &attr, mask)))
		return -1;
	memset(&attr, 0, sizeof(attr));
	if (rcm_modify(p, IBV_QPS_RTR, &attr, &mask))
		return -1;
	if (resp_res != RDMA_MAX_RESP_RES)
		attr.max_dest_rd_atomic = resp_res;
	return rcm_seterrno(ibv_modify_qp(p->id.qp, &attr, mask));
}

int rcm_modify_qp_rts(struct rcm_id *p, uint8_t init_depth)
{
	struct ibv_qp_attr attr;
	int mask;

	if (p->id.qp == NULL)
		return 0;
	memset(&attr, 0, sizeof(attr));
	if (rcm_modify(p, IBV_QPS_RTS, &attr, &mask))
		return -1;
	if (init_depth != RDMA_MAX_INIT_DEPTH)
		attr.max_rd_atomic = init_depth;
	return rcm_seterrno(ibv_modify_qp(p->id.qp, &attr, mask));
}

int rcm_modify_qp_err(struct rcm_id *p)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (p->id.qp == NULL)
		return 0;
	return rcm_seterrno(ibv_modify_qp(p->id.qp, &attr, IBV_QP_STATE));
}

int rcm_process_conn_resp(struct rcm_id *p)
{
	int rc;

	if (rcm_modify_qp_rtr(p, RDMA_MAX_RESP_RES) || rcm_modify_qp_rts(p, RDMA_MAX_INIT_DEPTH))
		goto err;
	rc = rcm_tp_accept(rcm_tp_of(&p->id), p->handle, 0, NULL);
	if (rc) {
		errno = rc;
		goto err;
	}
	return 0;
err:
	rc = errno;
	rcm_modify_qp_err(p);
	return rcm_err(rc);
}

/* A new QP to INIT (connected) or RTS (UD) with the CM's attributes. */
static int rcm_init_qp(struct rcm_id *p, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	int mask;

	memset(&attr, 0, sizeof(attr));
	if (rcm_modify(p, IBV_QPS_INIT, &attr, &mask))
		return -1;
	if (rcm_seterrno(ibv_modify_qp(qp, &attr, mask)))
		return -1;
	if (p->id.qp_type != IBV_QPT_UD)
		return 0;
	attr.qp_state = IBV_QPS_RTR;
	if (rcm_seterrno(ibv_modify_qp(qp, &attr, IBV_QP_STATE)))
		return -1;
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	return rcm_seterrno(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN));
}

static void rcm_destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq && id->send_cq != id->recv_cq) {
			ibv_destroy_cq(id->send_cq);
			id->send_cq = NULL;
		}
		id->recv_cq = NULL;
	} else if (id->send_cq) {
		ibv_destroy_cq(id->send_cq);
		id->send_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel) {
			ibv_destroy_comp_channel(id->send_cq_channel);
			id->send_cq_channel = NULL;
		}
		id->recv_cq_channel = NULL;
	} else if (id->send_cq_channel) {
		ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
	}
}

static int rcm_create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if (recv_size) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (id->recv_cq_channel == NULL)
			goto err;
		id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
		if (id->recv_cq == NULL)
			goto err;
	}
	if (send_size) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (id->send_cq_channel == NULL)
			goto err;
		id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
		if (id->send_cq == NULL)
			goto err;
	}
	return 0;
err:
	{
		int e = errno;

		rcm_destroy_cqs(id);
		return rcm_err(e ? e : ENOMEM);
	}
}

RCM_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct rcm_id *p;
	struct ibv_qp *qp;
	int e;

	if (id == NULL || attr == NULL || id->qp)
		return rcm_err(EINVAL);
	if (id->verbs == NULL)
		return rcm_err(EINVAL); /* not bound to a device yet */
	p = rcm_id(id);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (attr->pd->context != id->verbs) {
		return rcm_err(EINVAL);
	}
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return rcm_err(EINVAL);
	if (id->qp_type == IBV_QPT_XRC_RECV)
		return rcm_err(EOPNOTSUPP); /* no XRC in the stack */

	if (rcm_create_cqs(id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
			   attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr))
		return -1;
	if (attr->send_cq == NULL)
		attr->send_cq = id->send_cq;
	if (attr->recv_cq == NULL)
		attr->recv_cq = id->recv_cq;
	if (id->srq && attr->srq == NULL)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (qp == NULL) {
		e = errno ? errno : ENOMEM;
		goto err_cqs;
	}
	if (rcm_init_qp(p, qp)) {
		e = errno;
		ibv_destroy_qp(qp);
		goto err_cqs;
	}
	id->pd = qp->pd;
	id->qp = qp;
	return 0;
err_cqs:
	rcm_destroy_cqs(id);
	return rcm_err(e);
}

RCM_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int rc;

	if (id == NULL || qp_init_attr == NULL)
		return rcm_err(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd ? pd : id->pd;
	rc = rdma_create_qp_ex(id, &ex);
	memcpy(qp_init_attr, &ex, sizeof(*qp_init_attr));
	return rc;
}

RCM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (id == NULL)
		return;
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	rcm_destroy_cqs(id);
}

RCM_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (id == NULL || attr == NULL || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return rcm_err(EINVAL);
	if (id->verbs == NULL)
		return rcm_err(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || attr->pd == NULL) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if (attr->srq_type == IBV_SRQT_XRC)
		return rcm_err(EOPNOTSUPP); /* no XRC in the stack */
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (srq == NULL)
		return rcm_err(errno ? errno : ENOMEM);
	if (id->pd == NULL)
		id->pd = attr->pd;
	id->srq = srq;
	return 0;
}

RCM_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int rc;

	if (id == NULL || attr == NULL)
		return rcm_err(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ex.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	ex.pd = pd;
	rc = rdma_create_srq_ex(id, &ex);
	memcpy(attr, &ex, sizeof(*attr));
	return rc;
}

RCM_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id == NULL)
		return;
	if (id->srq)
		ibv_destroy_srq(id->srq);
	id->srq = NULL;
	rcm_destroy_cqs(id);
}
