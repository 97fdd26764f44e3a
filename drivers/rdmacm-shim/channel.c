/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdmacm shim: event channels and events.
 *
 * A channel is one connection to the daemon's CM; its fd is pollable
 * (readable when an event waits) and O_NONBLOCK on it makes
 * rdma_get_cm_event() fail with EAGAIN, as with the kernel's rdma_cm fd.
 *
 * rdma_get_cm_event() does librdmacm's event processing: ADDR_RESOLVED and
 * ROUTE_RESOLVED fill the id's route and device (ADDR_ERROR/ROUTE_ERROR when
 * that fails), CONNECT_REQUEST creates the new id (event.id) next to the
 * listener (event.listen_id), CONNECT_RESPONSE on an id with a QP walks the
 * QP to RTR and RTS, sends the RTU and is reported as ESTABLISHED (or
 * CONNECT_ERROR), REJECTED moves the QP to ERR. Every event handed out is
 * counted against its id; rdma_destroy_id() waits until the application has
 * acked as many as the daemon reported for the id.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rcm.h"

RCM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct rcm_channel *c;
	int rc;

	if (rcm_init())
		return NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	rc = rcm_tp_open(&c->tp, &c->ch.fd);
	if (rc) {
		free(c);
		errno = rc;
		return NULL;
	}
	pthread_mutex_init(&c->rd_lock, NULL);
	return &c->ch;
}

RCM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (channel == NULL)
		return;
	rcm_tp_close(rcm_channel(channel)->tp);
	pthread_mutex_destroy(&rcm_channel(channel)->rd_lock);
	free(rcm_channel(channel));
}

void rcm_complete_event(struct rcm_id *p)
{
	pthread_mutex_lock(&p->mut);
	p->events_completed++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->mut);
}

RCM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct rcm_event *e = (struct rcm_event *)event;

	if (event == NULL)
		return rcm_err(EINVAL);
	rcm_complete_event(e->id_priv);
	free(e);
	return 0;
}

static void rcm_copy_conn(struct rcm_event *e, const struct rcm_conn *src)
{
	struct rdma_conn_param *dst = &e->event.param.conn;

	dst->private_data_len = src->private_data_len;
	if (src->private_data_len) {
		memcpy(e->private_data, src->private_data, src->private_data_len);
		dst->private_data = e->private_data;
	}
	dst->responder_resources = src->responder_resources;
	dst->initiator_depth = src->initiator_depth;
	dst->flow_control = src->flow_control;
	dst->retry_count = src->retry_count;
	dst->rnr_retry_count = src->rnr_retry_count;
	dst->srq = src->srq;
	dst->qp_num = src->qp_num;
}

static void rcm_copy_ud(struct rcm_event *e, const struct rcm_conn *src)
{
	struct rdma_ud_param *dst = &e->event.param.ud;

	dst->private_data_len = src->private_data_len;
	if (src->private_data_len) {
		memcpy(e->private_data, src->private_data, src->private_data_len);
		dst->private_data = e->private_data;
	}
	dst->ah_attr = src->ah_attr;
	dst->qp_num = src->qp_num;
	dst->qkey = src->qkey;
}

static bool rcm_is_ud(const struct rcm_id *p)
{
	return p->id.qp_type == IBV_QPT_UD;
}

/* CONNECT_REQUEST: the new id, on the listener's channel. @return 0 or -1. */
static int rcm_process_conn_req(struct rcm_event *e, const struct rcm_tp_event *ev)
{
	struct rcm_id *listen = e->id_priv;
	struct rcm_id *p;
	uint32_t reported;
	int rc;

	p = rcm_id_alloc(listen->id.channel, listen->id.context, listen->id.ps, listen->id.qp_type);
	if (p == NULL) {
		rcm_tp_destroy_id(rcm_tp_of(&listen->id), ev->id, &reported);
		rcm_complete_event(listen);
		return rcm_err(ENOMEM);
	}
	p->handle = ev->id;
	rcm_id_register(p);
	e->event.listen_id = &listen->id;
	e->event.id = &p->id;
	p->initiator_depth = ev->param.initiator_depth;
	p->responder_resources = ev->param.responder_resources;
	p->remote_ece.vendor_id = ev->param.ece_vendor_id;
	p->remote_ece.options = ev->param.ece_options;

	rc = 0;
	if (listen->sync)
		rc = rdma_migrate_id(&p->id, NULL);
	if (rc == 0)
		rc = rcm_query_route(p);
	if (rc) {
		int saved = errno;

		rdma_destroy_id(&p->id);
		rcm_complete_event(listen);
		errno = saved;
		return -1;
	}
	return 0;
}

/*
 * Turn one daemon event into the application's. @return 0 to deliver,
 * 1 to drop it (already acked internally) and read the next one.
 */
static int rcm_process(struct rcm_event *e, const struct rcm_tp_event *ev, struct rcm_id *p)
{
	e->id_priv = p;
	e->event.id = &p->id;
	e->event.event = ev->event;
	e->event.status = ev->status;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rcm_query_route(p) != 0 || p->id.verbs == NULL) {
			e->event.event = RDMA_CM_EVENT_ADDR_ERROR;
			e->event.status = p->id.verbs ? -errno : -ENODEV;
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rcm_query_route(p) != 0) {
			e->event.event = RDMA_CM_EVENT_ROUTE_ERROR;
			e->event.status = -errno;
		}
		break;
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (rcm_is_ud(p))
			rcm_copy_ud(e, &ev->param);
		else
			rcm_copy_conn(e, &ev->param);
		if (rcm_process_conn_req(e, ev) != 0)
			return 1;
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		rcm_copy_conn(e, &ev->param);
		if (p->id.qp == NULL) {
			p->remote_ece.vendor_id = ev->param.ece_vendor_id;
			p->remote_ece.options = ev->param.ece_options;
			break;
		}
		if (rcm_process_conn_resp(p) == 0) {
			e->event.event = RDMA_CM_EVENT_ESTABLISHED;
		} else {
			e->event.event = RDMA_CM_EVENT_CONNECT_ERROR;
			e->event.status = -errno;
			p->connect_error = true;
		}
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rcm_is_ud(p))
			rcm_copy_ud(e, &ev->param);
		else
			rcm_copy_conn(e, &ev->param);
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (p->connect_error) {
			rcm_complete_event(p);
			return 1;
		}
		rcm_copy_conn(e, &ev->param);
		rcm_modify_qp_err(p);
		break;
	case RDMA_CM_EVENT_MULTICAST_JOIN:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		rcm_mc_process_join(e, ev, p);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (p->connect_error) {
			rcm_complete_event(p);
			return 1;
		}
		rcm_copy_conn(e, &ev->param);
		break;
	default:
		if (rcm_is_ud(p))
			rcm_copy_ud(e, &ev->param);
		else
			rcm_copy_conn(e, &ev->param);
		break;
	}
	return 0;
}

/*
 * The next event of @p c and its id (NULL: an id destroyed meanwhile).
 * Waiting happens outside the read lock; taking the event and noting its
 * seq under it, so rdma_migrate_id() knows exactly what was read.
 * @return 0 or a positive errno.
 */
static int rcm_channel_take(struct rcm_channel *c, struct rcm_tp_event *ev, struct rcm_id **p)
{
	for (;;) {
		int rc = rcm_tp_wait_event(c->ch.fd);

		if (rc)
			return rc;
		pthread_mutex_lock(&c->rd_lock);
		rc = rcm_tp_get_event(c->ch.fd, ev);
		if (rc == 0) {
			c->last_seq = ev->seq;
			*p = rcm_id_hold(ev->uid, ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ?
							  UINT32_MAX : ev->id);
		}
		pthread_mutex_unlock(&c->rd_lock);
		/* taken by another thread meanwhile, or the end of file: wait again */
		if (rc != EAGAIN && rc != EPIPE)
			return rc;
	}
}

RCM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct rcm_tp_event ev;
	struct rcm_event *e;
	struct rcm_id *p;
	int rc;

	if (channel == NULL || event == NULL)
		return rcm_err(EINVAL);
	e = malloc(sizeof(*e));
	if (e == NULL)
		return rcm_err(ENOMEM);
	for (;;) {
		memset(e, 0, sizeof(*e));
		rc = rcm_channel_take(rcm_channel(channel), &ev, &p);
		if (rc) {
			free(e);
			return rcm_err(rc);
		}
		/* An event of an id destroyed meanwhile (or of none): dropped unread. */
		if (p == NULL)
			continue;
		if (rcm_process(e, &ev, p) == 0)
			break;
	}
	*event = &e->event;
	return 0;
}

RCM_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
#define RCM_EV(x) [RDMA_CM_EVENT_##x] = "RDMA_CM_EVENT_" #x
		RCM_EV(ADDR_RESOLVED),
		RCM_EV(ADDR_ERROR),
		RCM_EV(ROUTE_RESOLVED),
		RCM_EV(ROUTE_ERROR),
		RCM_EV(CONNECT_REQUEST),
		RCM_EV(CONNECT_RESPONSE),
		RCM_EV(CONNECT_ERROR),
		RCM_EV(UNREACHABLE),
		RCM_EV(REJECTED),
		RCM_EV(ESTABLISHED),
		RCM_EV(DISCONNECTED),
		RCM_EV(DEVICE_REMOVAL),
		RCM_EV(MULTICAST_JOIN),
		RCM_EV(MULTICAST_ERROR),
		RCM_EV(ADDR_CHANGE),
		RCM_EV(TIMEWAIT_EXIT),
#undef RCM_EV
	};

	if ((unsigned int)event < sizeof(names) / sizeof(names[0]) && names[event])
		return names[event];
	return "UNKNOWN EVENT";
}

RCM_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct rcm_channel *from;
	struct rcm_id *p;
	struct rdma_event_channel *old;
	bool sync;
	int rc;

	if (id == NULL)
		return rcm_err(EINVAL);
	p = rcm_id(id);
	if (p->sync && channel == NULL)
		return rcm_err(EINVAL);
	sync = channel == NULL;
	if (sync) {
		channel = rdma_create_event_channel();
		if (channel == NULL)
			return -1;
	}
	/*
	 * The id's events not read yet move with it (ucma_migrate_id): nobody
	 * takes an event from the old channel meanwhile, so the daemon learns
	 * exactly which of those it wrote are still unread.
	 */
	old = id->channel;
	from = rcm_channel(old);
	pthread_mutex_lock(&from->rd_lock);
	rc = rcm_tp_migrate(rcm_channel(channel)->tp, from->tp, old->fd, p->handle, from->last_seq);
	if (rc == 0)
		id->channel = channel;
	pthread_mutex_unlock(&from->rd_lock);
	if (rc) {
		if (sync)
			rdma_destroy_event_channel(channel);
		return rcm_err(rc);
	}
	if (p->sync) {
		if (id->event) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		rdma_destroy_event_channel(old);
	}
	/* events already read from the old channel must be acked before the id moves */
	pthread_mutex_lock(&p->mut);
	p->sync = sync;
	while (p->events_completed < p->events_delivered)
		pthread_cond_wait(&p->cond, &p->mut);
	pthread_mutex_unlock(&p->mut);
	return 0;
}
