/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdmacm shim: rdma_cm ids and the calls on them.
 *
 * Each call is one request to the daemon's CM on the id's channel, then,
 * as librdmacm does: the id's route/device are refreshed after bind/listen
 * and on ADDR/ROUTE_RESOLVED; an id created without a channel gets its own
 * and every call that starts an event waits for it (synchronous use), the
 * event staying in id->event until the next call or rdma_destroy_id.
 *
 * Arguments the kernel's rdma_ucm would refuse are refused here first with
 * its errno (EINVAL for an unknown port space, an address family it does
 * not know, private data beyond the IBTA size of the CM message).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ib.h>

#include "rcm.h"

#define RCM_ID_BUCKETS 1024u

static pthread_mutex_t rcm_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rcm_id *rcm_reg[RCM_ID_BUCKETS];

static unsigned int rcm_bucket(const void *p)
{
	uintptr_t v = (uintptr_t)p >> 4;

	return (unsigned int)((v ^ (v >> 10) ^ (v >> 20)) % RCM_ID_BUCKETS);
}

void rcm_id_register(struct rcm_id *p)
{
	unsigned int b = rcm_bucket(p);

	pthread_mutex_lock(&rcm_reg_lock);
	p->hnext = rcm_reg[b];
	rcm_reg[b] = p;
	pthread_mutex_unlock(&rcm_reg_lock);
}

void rcm_id_unregister(struct rcm_id *p)
{
	struct rcm_id **pp;

	pthread_mutex_lock(&rcm_reg_lock);
	for (pp = &rcm_reg[rcm_bucket(p)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == p) {
			*pp = p->hnext;
			break;
		}
	}
	p->hnext = NULL;
	pthread_mutex_unlock(&rcm_reg_lock);
}

struct rcm_id *rcm_id_hold(uint64_t uid, uint32_t handle)
{
	struct rcm_id *want = (struct rcm_id *)(uintptr_t)uid, *p;

	pthread_mutex_lock(&rcm_reg_lock);
	for (p = rcm_reg[rcm_bucket(want)]; p; p = p->hnext)
		if (p == want && (handle == UINT32_MAX || p->handle == handle))
			break;
	if (p) {
		pthread_mutex_lock(&p->mut);
		p->events_delivered++;
		pthread_mutex_unlock(&p->mut);
	}
	pthread_mutex_unlock(&rcm_reg_lock);
	return p;
}

socklen_t rcm_addrlen(const struct sockaddr *addr)
{
	if (addr == NULL)
		return 0;
	switch (addr->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0; /* AF_IB: no kernel, no AF_IB support (as librdmacm without it) */
	}
}

struct rcm_id *rcm_id_alloc(struct rdma_event_channel *channel, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct rcm_id *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->id.context = context;
	p->id.ps = ps;
	p->id.qp_type = qp_type;
	p->handle = UINT32_MAX;
	pthread_mutex_init(&p->mut, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (channel == NULL) {
		p->id.channel = rdma_create_event_channel();
		if (p->id.channel == NULL) {
			int e = errno;

			rcm_id_free(p);
			errno = e;
			return NULL;
		}
		p->sync = true;
	} else {
		p->id.channel = channel;
	}
	return p;
}

void rcm_id_free(struct rcm_id *p)
{
	rcm_mc_free_all(p);
	if (p->dev)
		rcm_device_put(p->dev);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->mut);
	if (p->sync && p->id.channel)
		rdma_destroy_event_channel(p->id.channel);
	free(p->connect);
	free(p->qp_init_attr);
	free(p);
}

int rcm_create_id2(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct rcm_id *p;
	int rc;

	if (id == NULL)
		return rcm_err(EINVAL);
	/* The kernel's port spaces and the QP type each implies (ucma_get_qp_type). */
	switch (ps) {
	case RDMA_PS_TCP:
		if (qp_type != IBV_QPT_RC)
			return rcm_err(EINVAL);
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		if (qp_type != IBV_QPT_UD)
			return rcm_err(EINVAL);
		break;
	case RDMA_PS_IB:
		break;
	default:
		return rcm_err(EINVAL);
	}
	if (rcm_init())
		return -1;
	p = rcm_id_alloc(channel, context, ps, qp_type);
	if (p == NULL)
		return -1;
	rc = rcm_tp_create_id(rcm_tp_of(&p->id), (uint64_t)(uintptr_t)p, ps, qp_type, &p->handle);
	if (rc) {
		rcm_id_free(p);
		return rcm_err(rc);
	}
	rcm_id_register(p);
	*id = &p->id;
	return 0;
}

RCM_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			      void *context, enum rdma_port_space ps)
{
	enum ibv_qp_type qp_type = (ps == RDMA_PS_IPOIB || ps == RDMA_PS_UDP) ? IBV_QPT_UD :
									       IBV_QPT_RC;

	return rcm_create_id2(channel, id, context, ps, qp_type);
}

RCM_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct rcm_id *p;
	uint32_t reported = 0;
	int rc;

	if (id == NULL)
		return rcm_err(EINVAL);
	p = rcm_id(id);
	rc = rcm_tp_destroy_id(rcm_tp_of(id), p->handle, &reported);
	if (rc)
		return rcm_err(rc);
	/*
	 * Of the events the daemon reported, those still unread on the
	 * channel socket are dropped when read (the id is no longer
	 * registered); wait for the acks of those the application got.
	 */
	rcm_id_unregister(p);
	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	pthread_mutex_lock(&p->mut);
	while (p->events_completed < p->events_delivered)
		pthread_cond_wait(&p->cond, &p->mut);
	pthread_mutex_unlock(&p->mut);
	rcm_id_free(p);
	return 0;
}

int rcm_query_route(struct rcm_id *p)
{
	struct rcm_route_info ri;
	struct rdma_cm_id *id = &p->id;
	int rc;

	memset(&ri, 0, sizeof(ri));
	rc = rcm_tp_query_route(rcm_tp_of(id), p->handle, &ri);
	if (rc)
		return rcm_err(rc);
	if (ri.num_paths) {
		p->path = ri.path;
		id->route.path_rec = &p->path;
		id->route.num_paths = 1;
	}
	id->route.addr.addr.ibaddr.sgid = ri.sgid;
	id->route.addr.addr.ibaddr.dgid = ri.dgid;
	id->route.addr.addr.ibaddr.pkey = ri.pkey;
	memcpy(&id->route.addr.src_storage, &ri.src, sizeof(ri.src));
	memcpy(&id->route.addr.dst_storage, &ri.dst, sizeof(ri.dst));
	if (p->dev == NULL && ri.node_guid) {
		p->dev = rcm_device_get(ri.node_guid);
		if (p->dev == NULL)
			return -1;
		id->verbs = p->dev->verbs;
		id->pd = p->dev->pd;
		id->port_num = ri.port_num;
	}
	return 0;
}

int rcm_complete(struct rcm_id *p)
{
	struct rdma_cm_id *id = &p->id;
	int rc;

	if (!p->sync)
		return 0;
	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	rc = rdma_get_cm_event(id->channel, &id->event);
	if (rc)
		return rc;
	if (id->event->status) {
		if (id->event->event == RDMA_CM_EVENT_REJECTED)
			return rcm_err(ECONNREFUSED);
		return rcm_err(id->event->status < 0 ? -id->event->status : id->event->status);
	}
	return 0;
}

RCM_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	socklen_t len = rcm_addrlen(addr);
	int rc;

	if (id == NULL || len == 0)
		return rcm_err(EINVAL);
	rc = rcm_tp_bind(rcm_tp_of(id), rcm_id(id)->handle, addr, len);
	if (rc)
		return rcm_err(rc);
	return rcm_query_route(rcm_id(id));
}

RCM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				 struct sockaddr *dst_addr, int timeout_ms)
{
	socklen_t dst_len = rcm_addrlen(dst_addr), src_len = rcm_addrlen(src_addr);
	int rc;

	if (id == NULL || dst_len == 0 || (src_addr && src_len == 0))
		return rcm_err(EINVAL);
	rc = rcm_tp_resolve_addr(rcm_tp_of(id), rcm_id(id)->handle, src_addr, src_len, dst_addr,
				 dst_len, timeout_ms);
	if (rc)
		return rcm_err(rc);
	memcpy(&id->route.addr.dst_storage, dst_addr, dst_len);
	return rcm_complete(rcm_id(id));
}

RCM_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	int rc;

	if (id == NULL)
		return rcm_err(EINVAL);
	rc = rcm_tp_resolve_route(rcm_tp_of(id), rcm_id(id)->handle, timeout_ms);
	if (rc)
		return rcm_err(rc);
	return rcm_complete(rcm_id(id));
}

RCM_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	int rc;

	if (id == NULL)
		return rcm_err(EINVAL);
	rc = rcm_tp_listen(rcm_tp_of(id), rcm_id(id)->handle, backlog);
	if (rc)
		return rcm_err(rc);
	return rcm_query_route(rcm_id(id));
}

/* The most private data the CM message of this call carries for the id. */
static unsigned int rcm_pd_max(const struct rdma_cm_id *id, bool accept)
{
	bool ip = id->ps == RDMA_PS_TCP || id->ps == RDMA_PS_UDP || id->ps == RDMA_PS_IPOIB;

	if (id->qp_type == IBV_QPT_UD)
		return accept ? RCM_SIDR_REP_PRIVATE_DATA :
				RCM_SIDR_REQ_PRIVATE_DATA - (ip ? RCM_IP_HDR : 0);
	return accept ? RCM_REP_PRIVATE_DATA : RCM_REQ_PRIVATE_DATA - (ip ? RCM_IP_HDR : 0);
}

/* librdmacm's ucma_valid_param: RC over RDMA_PS_TCP needs a QP or parameters. */
static int rcm_valid_param(struct rcm_id *p, const struct rdma_conn_param *param)
{
	if (p->id.ps != RDMA_PS_TCP)
		return 0;
	if (p->id.qp == NULL && param == NULL)
		return rcm_err(EINVAL);
	if (param == NULL || p->dev == NULL)
		return 0;
	if (param->responder_resources != RDMA_MAX_RESP_RES &&
	    param->responder_resources > p->dev->max_responder_resources)
		return rcm_err(EINVAL);
	if (param->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	    param->initiator_depth > p->dev->max_initiator_depth)
		return rcm_err(EINVAL);
	return 0;
}

/* The request's connection parameters (librdmacm's ucma_copy_conn_param_to_kern). */
static int rcm_conn_fill(struct rcm_id *p, struct rcm_conn *c, const struct rdma_conn_param *src,
			 uint32_t qp_num, uint8_t srq, unsigned int pd_max)
{
	unsigned int len = p->connect_len;

	memset(c, 0, sizeof(*c));
	c->qp_num = qp_num;
	c->srq = srq;
	c->responder_resources = p->responder_resources;
	c->initiator_depth = p->initiator_depth;
	c->valid = 1;
	if (p->connect_len)
		memcpy(c->private_data, p->connect, p->connect_len);
	if (src) {
		c->flow_control = src->flow_control;
		c->retry_count = src->retry_count;
		c->rnr_retry_count = src->rnr_retry_count;
		if (src->private_data && src->private_data_len) {
			if (len + src->private_data_len > pd_max)
				return rcm_err(EINVAL);
			memcpy(c->private_data + len, src->private_data, src->private_data_len);
			len += src->private_data_len;
		}
	} else {
		c->retry_count = 7;
		c->rnr_retry_count = 7;
	}
	if (len > pd_max)
		return rcm_err(EINVAL);
	c->private_data_len = (uint8_t)len;
	return 0;
}

RCM_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	uint32_t qp_num = conn_param ? conn_param->qp_num : 0;
	uint8_t srq = conn_param ? conn_param->srq : 0;
	struct rcm_conn c;
	struct rcm_id *p;
	int rc;

	if (id == NULL)
		return rcm_err(EINVAL);
	p = rcm_id(id);
	if (rcm_valid_param(p, conn_param))
		return -1;
	if (conn_param && conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH)
		p->initiator_depth = conn_param->initiator_depth;
	else
		p->initiator_depth = p->dev ? p->dev->max_initiator_depth : 0;
	if (conn_param && conn_param->responder_resources != RDMA_MAX_RESP_RES)
		p->responder_resources = conn_param->responder_resources;
	else
		p->responder_resources = p->dev ? p->dev->max_responder_resources : 0;
	if (id->qp) {
		qp_num = id->qp->qp_num;
		srq = id->qp->srq != NULL;
	}
	if (rcm_conn_fill(p, &c, conn_param, qp_num, srq, rcm_pd_max(id, false)))
		return -1;
	c.ece_vendor_id = p->local_ece.vendor_id;
	c.ece_options = p->local_ece.options;
	rc = rcm_tp_connect(rcm_tp_of(id), p->handle, &c);
	if (rc)
		return rcm_err(rc);
	if (p->connect_len) {
		free(p->connect);
		p->connect = NULL;
		p->connect_len = 0;
	}
	return rcm_complete(p);
}

RCM_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct rcm_conn c;
	struct rcm_id *p;
	uint32_t qp_num;
	uint8_t srq;
	int rc;

	if (id == NULL || (id->qp == NULL && conn_param == NULL))
		return rcm_err(EINVAL);
	p = rcm_id(id);
	qp_num = id->qp ? id->qp->qp_num : conn_param->qp_num;
	srq = id->qp ? id->qp->srq != NULL : conn_param->srq;
	if (rcm_valid_param(p, conn_param))
		return -1;
	if (!conn_param || conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH) {
		if (p->dev && p->initiator_depth > p->dev->max_initiator_depth)
			p->initiator_depth = p->dev->max_initiator_depth;
	} else {
		p->initiator_depth = conn_param->initiator_depth;
	}
	if (!conn_param || conn_param->responder_resources == RDMA_MAX_RESP_RES) {
		if (p->dev && p->responder_resources > p->dev->max_responder_resources)
			p->responder_resources = p->dev->max_responder_resources;
	} else {
		p->responder_resources = conn_param->responder_resources;
	}
	if (rcm_conn_fill(p, &c, conn_param, qp_num, srq, rcm_pd_max(id, true)))
		return -1;
	c.ece_vendor_id = p->remote_ece.vendor_id;
	c.ece_options = p->local_ece.options;

	if (id->qp_type != IBV_QPT_UD) {
		if (rcm_modify_qp_rtr(p, p->responder_resources))
			return -1;
		if (rcm_modify_qp_rts(p, p->initiator_depth))
			return -1;
	}
	rc = rcm_tp_accept(rcm_tp_of(id), p->handle, (uint64_t)(uintptr_t)p, &c);
	if (rc) {
		rcm_modify_qp_err(p);
		return rcm_err(rc);
	}
	if (id->qp_type == IBV_QPT_UD) {
		if (p->sync && id->event) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		return 0;
	}
	return rcm_complete(p);
}

static int rcm_reject(struct rdma_cm_id *id, const void *private_data, uint8_t len,
		      uint8_t reason)
{
	int rc;

	if (id == NULL)
		return rcm_err(EINVAL);
	if (private_data == NULL)
		len = 0;
	if (len > (id->qp_type == IBV_QPT_UD ? RCM_SIDR_REP_PRIVATE_DATA : RCM_REJ_PRIVATE_DATA))
		return rcm_err(EINVAL);
	rc = rcm_tp_reject(rcm_tp_of(id), rcm_id(id)->handle, private_data, len, reason);
	return rcm_seterrno(rc);
}

RCM_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			   uint8_t private_data_len)
{
	return rcm_reject(id, private_data, private_data_len, 0);
}

RCM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			       uint8_t private_data_len)
{
	/* IBTA: reject reason 35, "vendor option not supported" */
	return rcm_reject(id, private_data, private_data_len, 35);
}

RCM_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	if (id == NULL)
		return rcm_err(EINVAL);
	return rcm_seterrno(rcm_tp_notify(rcm_tp_of(id), rcm_id(id)->handle, event));
}

RCM_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	int rc;

	if (id == NULL || id->verbs == NULL || id->verbs->device == NULL)
		return rcm_err(EINVAL);
	/* RoCE is IB transport: the QP goes to ERR (librdmacm's ucma_shutdown). */
	if (id->verbs->device->transport_type != IBV_TRANSPORT_IB)
		return rcm_err(EINVAL);
	if (rcm_modify_qp_err(rcm_id(id)))
		return -1;
	rc = rcm_tp_disconnect(rcm_tp_of(id), rcm_id(id)->handle);
	if (rc)
		return rcm_err(rc);
	return rcm_complete(rcm_id(id));
}

RCM_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	if (id == NULL || id->qp)
		return rcm_err(EINVAL);
	/* Without a QP this only sends the RTU. */
	return rcm_process_conn_resp(rcm_id(id));
}

RCM_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			       size_t optlen)
{
	if (id == NULL)
		return rcm_err(EINVAL);
	if (optval == NULL)
		return rcm_err(EFAULT); /* the kernel could not copy it in */
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			if (optlen != sizeof(uint8_t))
				return rcm_err(EINVAL);
			break;
		case RDMA_OPTION_ID_REUSEADDR:
		case RDMA_OPTION_ID_AFONLY:
			if (optlen != sizeof(int))
				return rcm_err(EINVAL);
			break;
		default:
			return rcm_err(ENOSYS);
		}
	} else if (level != RDMA_OPTION_IB) {
		return rcm_err(ENOSYS);
	}
	return rcm_seterrno(rcm_tp_set_option(rcm_tp_of(id), rcm_id(id)->handle, level, optname,
					      optval, optlen));
}

RCM_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				 int *qp_attr_mask)
{
	if (id == NULL || qp_attr == NULL || qp_attr_mask == NULL)
		return rcm_err(EINVAL);
	return rcm_seterrno(rcm_tp_init_qp_attr(rcm_tp_of(id), rcm_id(id)->handle, qp_attr,
						qp_attr_mask));
}

static __be16 rcm_port(const struct sockaddr *addr)
{
	switch (addr->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)addr)->sin_port;
	case AF_INET6:
		return ((const struct sockaddr_in6 *)addr)->sin6_port;
	case AF_IB:
		return htobe16((uint16_t)be64toh(((const struct sockaddr_ib *)addr)->sib_sid));
	default:
		return 0;
	}
}

RCM_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return rcm_port(&id->route.addr.src_addr);
}

RCM_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return rcm_port(&id->route.addr.dst_addr);
}

RCM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (id == NULL || id->qp || ece == NULL || !ece->vendor_id || ece->comp_mask)
		return rcm_err(EINVAL);
	rcm_id(id)->local_ece.vendor_id = ece->vendor_id;
	rcm_id(id)->local_ece.options = ece->options;
	return 0;
}

RCM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (id == NULL || id->qp || ece == NULL)
		return rcm_err(EINVAL);
	ece->vendor_id = rcm_id(id)->remote_ece.vendor_id;
	ece->options = rcm_id(id)->remote_ece.options;
	ece->comp_mask = 0;
	return 0;
}
