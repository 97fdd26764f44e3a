/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdmacm shim: the synchronous endpoint API (rdma_create_ep,
 * rdma_destroy_ep, rdma_get_request), as librdmacm builds it from the
 * asynchronous calls on an id with its own channel:
 *  - passive (RAI_PASSIVE): bind to ai_src_addr; the PD and QP attributes
 *    are kept for the QP rdma_get_request creates on each new connection;
 *  - active: resolve address and route (2 s each), create the QP if
 *    attributes are given, keep ai_connect to prepend to rdma_connect's
 *    private data.
 */
#include <stdlib.h>
#include <string.h>

#include "rcm.h"

static int rcm_passive_ep(struct rdma_cm_id *id, struct rdma_addrinfo *res, struct ibv_pd *pd,
			  struct ibv_qp_init_attr *qp_init_attr)
{
	struct rcm_id *p = rcm_id(id);

	if (rdma_bind_addr(id, res->ai_src_addr))
		return -1;
	if (pd)
		id->pd = pd;
	if (qp_init_attr) {
		p->qp_init_attr = malloc(sizeof(*qp_init_attr));
		if (p->qp_init_attr == NULL)
			return rcm_err(ENOMEM);
		*p->qp_init_attr = *qp_init_attr;
		p->qp_init_attr->qp_type = res->ai_qp_type;
	}
	return 0;
}

RCM_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
			      struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	struct rcm_id *p;
	int e;

	if (id == NULL || res == NULL)
		return rcm_err(EINVAL);
	if (rcm_create_id2(NULL, &cm_id, NULL, res->ai_port_space, res->ai_qp_type))
		return -1;
	p = rcm_id(cm_id);
	if (res->ai_flags & RAI_PASSIVE) {
		if (rcm_passive_ep(cm_id, res, pd, qp_init_attr))
			goto err;
		*id = cm_id;
		return 0;
	}
	if (rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000))
		goto err;
	if (res->ai_route_len) {
		/* An IB path record from ib_acm: there is no such service here. */
		errno = EOPNOTSUPP;
		goto err;
	}
	if (rdma_resolve_route(cm_id, 2000))
		goto err;
	if (qp_init_attr) {
		qp_init_attr->qp_type = res->ai_qp_type;
		if (rdma_create_qp(cm_id, pd, qp_init_attr))
			goto err;
	}
	if (res->ai_connect_len) {
		if (res->ai_connect_len > UINT8_MAX || res->ai_connect == NULL) {
			errno = EINVAL;
			goto err;
		}
		p->connect = malloc(res->ai_connect_len);
		if (p->connect == NULL) {
			errno = ENOMEM;
			goto err;
		}
		memcpy(p->connect, res->ai_connect, res->ai_connect_len);
		p->connect_len = (uint8_t)res->ai_connect_len;
	}
	*id = cm_id;
	return 0;
err:
	e = errno;
	rdma_destroy_ep(cm_id);
	return rcm_err(e);
}

RCM_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id == NULL)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

RCM_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rcm_id *lp;
	struct rdma_cm_event *event;

	if (listen == NULL || id == NULL)
		return rcm_err(EINVAL);
	lp = rcm_id(listen);
	if (!lp->sync)
		return rcm_err(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &event))
		return -1;
	if (event->event == RDMA_CM_EVENT_REJECTED) {
		errno = ECONNREFUSED;
		goto err;
	}
	if (event->status) {
		errno = event->status < 0 ? -event->status : event->status;
		goto err;
	}
	if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		errno = EINVAL;
		goto err;
	}
	if (lp->qp_init_attr) {
		struct ibv_qp_init_attr attr = *lp->qp_init_attr;

		if (rdma_create_qp(event->id, listen->pd, &attr))
			goto err;
	}
	*id = event->id;
	(*id)->event = event;
	return 0;
err:
	listen->event = event;
	return -1;
}
