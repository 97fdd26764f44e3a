/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Creation attributes in (ibv_create_qp) and connection parameters out
 * (rdma_init_qp_attr): the two places a QP's attributes come from besides
 * modify itself.
 */
#include <errno.h>
#include <string.h>

#include "qp_attr.h"

/* Ring size as rxe allocates it: a power of two with one slot kept free. */
static uint32_t
ring_entries(uint32_t wanted)
{
	uint64_t slots = 1;

	while (slots < (uint64_t)wanted + 1)
		slots <<= 1;
	return (uint32_t)(slots - 1);
}

static int
check_type(enum ibv_qp_type type, const struct qp_sem_device *dev)
{
	switch (type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_RAW_PACKET:
	case IBV_QPT_XRC_SEND:
		return (dev->qp_types & (1u << type)) ? 0 : EOPNOTSUPP;
	case IBV_QPT_XRC_RECV:
		/* Linux (uverbs create_qp) wants the XRC domain first: a device
		 * without XRC has none to name, so EINVAL (the oracle's answer) */
		return (dev->qp_types & (1u << type)) ? 0 : EINVAL;
	case IBV_QPT_DRIVER:
		return EOPNOTSUPP;
	default:
		return EINVAL;
	}
}

static int
check_caps(const struct ibv_qp_cap *cap, bool srq,
	   const struct qp_sem_device *dev)
{
	uint32_t max_wr = (uint32_t)dev->attr.max_qp_wr;
	uint32_t max_sge = (uint32_t)dev->attr.max_sge;

	if (cap->max_send_wr > max_wr || cap->max_send_sge > max_sge ||
	    cap->max_inline_data > dev->max_inline_data)
		return EINVAL;
	if (!srq && (cap->max_recv_wr > max_wr || cap->max_recv_sge > max_sge))
		return EINVAL;
	return 0;
}

int
qp_sem_create(struct qp_sem *qp, const struct ibv_qp_init_attr *init,
	      const struct qp_sem_device *dev)
{
	const size_t sge_size = sizeof(struct ibv_sge);
	struct ibv_qp_cap cap = init->cap;
	uint32_t wqe_bytes;
	int rc;

	/* XRC (IBTA 9.8.2): INI has a send queue only, TGT no queue of its own */
	bool ini = init->qp_type == IBV_QPT_XRC_SEND, tgt = init->qp_type == IBV_QPT_XRC_RECV;

	rc = check_type(init->qp_type, dev);
	if (rc != 0)
		return rc;
	if ((!tgt && init->send_cq == NULL) || (!ini && !tgt && init->recv_cq == NULL))
		return EINVAL;
	if (tgt) {
		cap.max_send_wr = cap.max_send_sge = cap.max_inline_data = 0;
		cap.max_recv_wr = cap.max_recv_sge = 0;
	}
	rc = check_caps(&cap, init->srq != NULL || ini || tgt, dev);
	if (rc != 0)
		return rc;

	/* A send WQE holds either its SGEs or its inline data. */
	wqe_bytes = cap.max_send_sge * sge_size;
	if (cap.max_inline_data > wqe_bytes)
		wqe_bytes = cap.max_inline_data;
	cap.max_send_sge = wqe_bytes / sge_size;
	cap.max_inline_data = wqe_bytes;
	cap.max_send_wr = tgt ? 0 : ring_entries(cap.max_send_wr);
	if (init->srq != NULL || ini || tgt) {
		cap.max_recv_wr = 0;
		cap.max_recv_sge = 0;
	} else {
		cap.max_recv_wr = ring_entries(cap.max_recv_wr);
	}

	memset(qp, 0, sizeof(*qp));
	qp->init = *init;
	qp->init.cap = cap;
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.cap = cap;
	/* What rxe reports before anything is set: 256-byte MTU, and AVs that
	 * claim a GRH (RoCE addresses always have one). */
	qp->attr.path_mtu = IBV_MTU_256;
	qp->attr.ah_attr.is_global = 1;
	qp->attr.alt_ah_attr.is_global = 1;
	return 0;
}

unsigned int
qp_sem_cm_access_flags(enum ibv_qp_type type, uint8_t responder_resources)
{
	unsigned int flags = IBV_ACCESS_REMOTE_WRITE;

	if (type == IBV_QPT_RC && responder_resources > 0)
		flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	return flags;
}

static void
init_attr_init(const struct qp_sem_conn_param *cp, int ti,
	       struct ibv_qp_attr *a, int *mask)
{
	a->port_num = cp->port_num;
	*mask |= IBV_QP_PORT;
	if (ti == QP_SEM_RAW_PACKET)
		return;
	a->pkey_index = cp->pkey_index;
	*mask |= IBV_QP_PKEY_INDEX;
	if (ti == QP_SEM_UD) {
		a->qkey = cp->qkey;
		*mask |= IBV_QP_QKEY;
	} else {
		a->qp_access_flags = cp->access_flags;
		*mask |= IBV_QP_ACCESS_FLAGS;
	}
}

static void
init_attr_rtr(const struct qp_sem_conn_param *cp, int ti,
	      const struct qp_sem_device *dev, struct ibv_qp_attr *a, int *mask)
{
	if (ti != QP_SEM_RC && ti != QP_SEM_UC)
		return;
	a->ah_attr = cp->ah_attr;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = cp->port_num;
	a->path_mtu = cp->path_mtu;
	if (dev != NULL && cp->port_num >= 1 &&
	    cp->port_num <= dev->attr.phys_port_cnt &&
	    (unsigned int)a->path_mtu > (unsigned int)dev->port[cp->port_num - 1].active_mtu)
		a->path_mtu = dev->port[cp->port_num - 1].active_mtu;
	a->dest_qp_num = cp->remote_qpn;
	a->rq_psn = cp->rq_psn;
	*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (ti == QP_SEM_RC) {
		a->max_dest_rd_atomic = cp->responder_resources;
		a->min_rnr_timer = cp->min_rnr_timer;
		*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
}

static void
init_attr_rts(const struct qp_sem_conn_param *cp, int ti,
	      struct ibv_qp_attr *a, int *mask)
{
	if (ti != QP_SEM_RAW_PACKET) {
		a->sq_psn = cp->sq_psn;
		*mask |= IBV_QP_SQ_PSN;
	}
	if (ti == QP_SEM_RC) {
		a->timeout = cp->timeout;
		a->retry_cnt = cp->retry_cnt;
		a->rnr_retry = cp->rnr_retry;
		a->max_rd_atomic = cp->initiator_depth;
		*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			 IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (cp->rate_limit != 0 && (ti == QP_SEM_RC || ti == QP_SEM_RAW_PACKET)) {
		a->rate_limit = cp->rate_limit;
		*mask |= IBV_QP_RATE_LIMIT;
	}
}

int
qp_sem_init_attr(const struct qp_sem_conn_param *cp, enum ibv_qp_state state,
		 const struct qp_sem_device *dev, struct ibv_qp_attr *attr,
		 int *attr_mask)
{
	int ti = qp_sem_type_index(cp->qp_type);
	int mask = IBV_QP_STATE;

	/* rdma_cm ids carry RC, UC, UD (and RAW_PACKET) QPs, never XRC ones */
	if (ti < 0 || ti == QP_SEM_XRC_INI || ti == QP_SEM_XRC_TGT)
		return EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = state;
	switch (state) {
	case IBV_QPS_INIT:
		init_attr_init(cp, ti, attr, &mask);
		break;
	case IBV_QPS_RTR:
		init_attr_rtr(cp, ti, dev, attr, &mask);
		break;
	case IBV_QPS_RTS:
		init_attr_rts(cp, ti, attr, &mask);
		break;
	default:
		return EINVAL;
	}
	*attr_mask = mask;
	return 0;
}
