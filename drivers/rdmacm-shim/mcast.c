/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdmacm shim: UD multicast joins (rdma_join_multicast(3)).
 *
 * As librdmacm over the kernel: the daemon's CM records the join and
 * reports RDMA_CM_EVENT_MULTICAST_JOIN with the group's address vector
 * (MGID from the IP group as Linux's cma_iboe_set_mgid(): IPv4-mapped for an
 * IPv4 group), DestQP 0xFFFFFF and the rdma_cm Q_Key; reading that event
 * attaches the id's QP to the group (librdmacm's ucma_process_join()),
 * except for a send-only join. rdma_leave_multicast() detaches the QP and
 * tells the daemon.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "rcm.h"

struct rcm_mc {
	struct rcm_mc *next;
	void *context;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	uint16_t join_flags;
	bool joined;              /* the JOIN event was read */
	uint32_t handle;          /* the daemon's */
	union ibv_gid mgid;
	uint16_t mlid;
};

/* The MGID the daemon reports for @p addr (ipc_cm.h "Multicast"). */
static void rcm_mc_gid(const struct sockaddr *addr, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	if (addr->sa_family == AF_INET) {
		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		memcpy(&g->raw[12], &((const struct sockaddr_in *)addr)->sin_addr, 4);
	} else {
		memcpy(g->raw, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
	}
}

static int rcm_join(struct rdma_cm_id *id, const struct sockaddr *addr, uint16_t join_flags,
		    void *context)
{
	struct rcm_id *p = rcm_id(id);
	socklen_t len = rcm_addrlen(addr);
	struct rcm_mc *mc, **pos;
	int rc;

	if (id == NULL || len == 0)
		return rcm_err(EINVAL);
	mc = calloc(1, sizeof(*mc));
	if (mc == NULL)
		return rcm_err(ENOMEM);
	mc->context = context;
	mc->join_flags = join_flags;
	mc->addrlen = len;
	memcpy(&mc->addr, addr, len);
	rcm_mc_gid(addr, &mc->mgid);
	pthread_mutex_lock(&p->mut);
	mc->next = p->mc_list;
	p->mc_list = mc;
	pthread_mutex_unlock(&p->mut);
	rc = rcm_tp_join_mcast(rcm_tp_of(id), p->handle, addr, join_flags, &mc->handle);
	if (rc) {
		pthread_mutex_lock(&p->mut);
		for (pos = &p->mc_list; *pos != NULL; pos = &(*pos)->next)
			if (*pos == mc) {
				*pos = mc->next;
				break;
			}
		pthread_mutex_unlock(&p->mut);
		free(mc);
		return rcm_err(rc);
	}
	return p->sync ? rcm_complete(p) : 0;
}

RCM_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	if (addr == NULL)
		return rcm_err(EINVAL);
	return rcm_join(id, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

RCM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				      struct rdma_cm_join_mc_attr_ex *mc_join_attr, void *context)
{
	if (mc_join_attr == NULL)
		return rcm_err(EINVAL);
	if (mc_join_attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return rcm_err(ENOTSUP);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    mc_join_attr->addr == NULL)
		return rcm_err(EINVAL);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    mc_join_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return rcm_err(EINVAL);
	return rcm_join(id, mc_join_attr->addr, (uint16_t)mc_join_attr->join_flags, context);
}

RCM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct rcm_id *p;
	struct rcm_mc *mc = NULL, **pos;
	socklen_t len = rcm_addrlen(addr);
	int rc;

	if (id == NULL || len == 0)
		return rcm_err(EINVAL);
	p = rcm_id(id);
	pthread_mutex_lock(&p->mut);
	for (pos = &p->mc_list; *pos != NULL; pos = &(*pos)->next)
		if ((*pos)->addrlen == len && memcmp(&(*pos)->addr, addr, len) == 0)
			break;
	mc = *pos;
	if (mc != NULL)
		*pos = mc->next;
	pthread_mutex_unlock(&p->mut);
	if (mc == NULL)
		return rcm_err(EADDRNOTAVAIL);
	if (id->qp != NULL && mc->joined && mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		(void)ibv_detach_mcast(id->qp, &mc->mgid, mc->mlid);
	rc = rcm_tp_leave_mcast(rcm_tp_of(id), mc->handle);
	free(mc);
	return rcm_seterrno(rc);
}

void rcm_mc_process_join(struct rcm_event *e, const struct rcm_tp_event *ev, struct rcm_id *p)
{
	struct rdma_ud_param *ud = &e->event.param.ud;
	struct rcm_mc *mc;

	ud->ah_attr = ev->param.ah_attr;
	ud->qp_num = ev->param.qp_num;
	ud->qkey = ev->param.qkey;
	pthread_mutex_lock(&p->mut);
	for (mc = p->mc_list; mc != NULL; mc = mc->next)
		if (!mc->joined && memcmp(mc->mgid.raw, ev->param.ah_attr.grh.dgid.raw, 16) == 0)
			break;
	if (mc != NULL) {
		mc->joined = ev->event == RDMA_CM_EVENT_MULTICAST_JOIN;
		mc->mlid = ev->param.ah_attr.dlid;
		ud->private_data = mc->context; /* as librdmacm: the join's context */
	}
	pthread_mutex_unlock(&p->mut);
	if (mc == NULL || ev->event != RDMA_CM_EVENT_MULTICAST_JOIN || p->id.qp == NULL ||
	    mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return;
	if (ibv_attach_mcast(p->id.qp, &mc->mgid, mc->mlid) != 0) {
		mc->joined = false;
		e->event.event = RDMA_CM_EVENT_MULTICAST_ERROR;
		e->event.status = -1; /* librdmacm: rdma_seterrno() of the attach, errno set */
	}
}

void rcm_mc_free_all(struct rcm_id *p)
{
	struct rcm_mc *mc = p->mc_list, *next;

	for (; mc != NULL; mc = next) {
		next = mc->next;
		free(mc);
	}
	p->mc_list = NULL;
}
